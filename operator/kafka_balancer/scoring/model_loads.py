"""The scored model's cpu and the brokers' loads, computed on the job's driver.

Spark aggregates the samples to one row per partition (:mod:`transforms`); the job collects
those rows once, in topic and partition order, and the rest is arithmetic over a few hundred
thousand rows: sharing each leader's cpu among its partitions and summing every replica's load
into its broker. Done here with numpy it costs a fraction of another Spark job and its collect,
and the sums come in the snapshot's own partition order whatever Spark's partitioning was.

Load model rules (docs/design.md): a broker's average cpu is attributed to the partitions it
leads in proportion to their bytes in (evenly when none has any); partitions whose leader has
no cpu samples get 0, and a follower ``follower_fraction`` × its partition's cpu. A replica adds
to its broker what ``model.math.replica_contribution`` says, the planner's own function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kafka_balancer.model import math
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.scoring import scores

DEFAULT_FOLLOWER_CPU_FRACTION = 0.2
# A partition's load columns in the model, in ``replica_contribution``'s order.
LOAD_COLUMNS = ("disk", "network_in", "network_out", "cpu", "follower_cpu")


@dataclass(frozen=True, slots=True)
class ReplicaLists:
    """Every partition's replica list, flattened: partition ``i``'s broker ids are
    ``brokers[starts[i]:starts[i + 1]]`` (floats, so that a missing id is NaN)."""

    brokers: FloatArray
    starts: IntArray

    @property
    def lengths(self) -> IntArray:
        return np.diff(self.starts)

    @property
    def owner(self) -> IntArray:
        """The partition each entry of ``brokers`` belongs to."""
        return np.repeat(np.arange(len(self.starts) - 1), self.lengths)

    def as_lists(self) -> list[list[int]]:
        """The lists as Python ints, once every id is known to be there. Lists of one length are
        made together from a 2-D array: slicing a flat list once per partition cost more."""
        lengths, ids = self.lengths, self.brokers.astype(np.int64)
        by_length = np.argsort(lengths, kind="stable")
        made: list[list[int]] = []
        for length in np.unique(lengths).tolist():
            rows = by_length[lengths[by_length] == length]
            made += ids[self.starts[rows][:, None] + np.arange(length)].tolist()
        place = np.empty(len(lengths), np.int64)
        place[by_length] = np.arange(len(lengths))
        return [made[i] for i in place.tolist()]


def attribute_cpu(
    leader: IntArray,
    bytes_in: FloatArray,
    cpu_brokers: IntArray,
    cpu: FloatArray,
    follower_fraction: float = DEFAULT_FOLLOWER_CPU_FRACTION,
) -> tuple[FloatArray, FloatArray]:
    """Each partition's ``cpu`` and ``follower_cpu``: broker ``cpu_brokers[k]`` used ``cpu[k]``
    cores, shared among the partitions it leads (``leader``) by their ``bytes_in``."""
    leaders, led_by = np.unique(leader, return_inverse=True)
    total_in = np.bincount(led_by, weights=bytes_in, minlength=len(leaders))
    count = np.bincount(led_by, minlength=len(leaders))
    total = total_in[led_by]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, bytes_in / total, 1.0 / count[led_by])
    # A leader without cpu samples gives 0; a NaN or infinite sample stays so, for the
    # snapshot's check to refuse.
    leader_cpu, sampled = np.zeros(len(leaders)), np.zeros(len(leaders), bool)
    found = np.searchsorted(leaders, cpu_brokers)
    hit = found < len(leaders)
    hit[hit] = leaders[found[hit]] == cpu_brokers[hit]
    leader_cpu[found[hit]], sampled[found[hit]] = cpu[hit], True
    part_cpu = np.where(sampled[led_by], leader_cpu[led_by] * share, 0.0)
    return part_cpu, part_cpu * follower_fraction


def broker_loads(topology: Cluster, model: pd.DataFrame, replicas: ReplicaLists) -> pd.DataFrame:
    """Per broker of the topology: its state and capacity, its summed loads, replica and leader
    counts. ``model``: one row per partition, its ``leader`` and ``LOAD_COLUMNS``; ``replicas``
    their lists, every broker in the topology."""
    brokers = topology.brokers
    ids = np.array([b.id for b in brokers], np.int64)
    order = np.argsort(ids, kind="stable")
    members = replicas.brokers.astype(np.int64)
    index = order[np.searchsorted(ids, members, sorter=order)]
    owner = replicas.owner
    is_leader: BoolArray = members == model["leader"].to_numpy(np.int64)[owner]
    rf = replicas.lengths[owner]
    disk, network_in, network_out, cpu, follower_cpu = (
        model[column].to_numpy(np.float64)[owner] for column in LOAD_COLUMNS
    )
    contributions = math.replica_contribution(
        disk, network_in, network_out, cpu, follower_cpu, rf, is_leader
    ).reshape(len(members), 4)
    sums = math.sum_per_broker(index, contributions, len(brokers))
    frame = pd.DataFrame(
        {
            "broker": ids.astype(np.int32),
            "rack": [b.rack for b in brokers],
            "active": [b.active for b in brokers],
            "share": np.array([b.warm_up_share for b in brokers], np.float64),
        }
    )
    for i, column in enumerate(scores.CAPACITY_COLUMNS):
        frame[column] = np.array([b.capacity[i] for b in brokers], np.float64)
    for i, column in enumerate(scores.LOAD_COLUMNS):
        frame[column] = sums[:, i]
    frame["replicas"] = np.bincount(index, minlength=len(brokers)).astype(np.int64)
    frame["leaders"] = np.bincount(index[is_leader], minlength=len(brokers)).astype(np.int64)
    return frame
