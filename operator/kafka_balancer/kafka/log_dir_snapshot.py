"""A snapshot's ``logDirs`` (JBOD) from what DescribeLogDirs says: each broker's dirs and the dir of each
replica. Pure, no I/O: ``kafka-balancer snapshot`` and the operator's collector read the dirs, this
turns them into the snapshot's terms.

The contract is all or nothing (every broker and every partition, or none), so where DescribeLogDirs
cannot say (a broker before Kafka 3.3 gives no volume size, a broker that did not answer, a replica
in no dir of its broker) the snapshot goes without ``logDirs`` and the caller says why.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_balancer.kafka.admin import LogDirState
from kafka_balancer.model.cluster import LogDir

Tp = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ReplicaDirs:
    """Each broker's log dirs, and each partition's dir per replica (aligned with its replicas)."""

    brokers: Mapping[int, tuple[LogDir, ...]]
    partitions: Mapping[Tp, tuple[str, ...]]

    def offline(self) -> list[tuple[int, str]]:
        """(broker, path) of every offline dir."""
        return [(b, d.path) for b, dirs in sorted(self.brokers.items()) for d in dirs if not d.online]


def replica_dirs(
    dirs: Mapping[int, tuple[LogDirState, ...]],
    disk_capacity: Mapping[int, float],
    partitions: Mapping[Tp, tuple[int, ...]],
) -> ReplicaDirs | str:
    """The dirs of every broker of ``disk_capacity`` (broker → its disk capacity) and of every replica
    of ``partitions``, or why they cannot all be told."""
    brokers: dict[int, tuple[LogDir, ...]] = {}
    for broker, disk in sorted(disk_capacity.items()):
        found = dirs.get(broker, ())
        if not found:
            return f"broker {broker} reported no log dir"
        online = [d for d in found if d.online]
        sizes = [d.total_bytes for d in online if d.total_bytes is not None]
        if len(sizes) != len(online):
            return f"broker {broker} does not report its log dirs' size (Kafka < 3.3)"
        # An offline dir's volume is not measured; its size never matters (it takes no replica), so it
        # gets its broker's average, which keeps the snapshot's capacities positive.
        stand_in = sum(sizes) / len(sizes) if sizes else disk / len(found)
        brokers[broker] = tuple(LogDir(d.path, float(d.total_bytes or stand_in), d.online) for d in found)
    placed: dict[Tp, tuple[str, ...]] = {}
    for tp, replicas in sorted(partitions.items()):
        paths = []
        for b in replicas:
            holding = [d.path for d in dirs.get(b, ()) if tp in d.replicas]
            # A broker does not list what an offline dir held; a replica it does not list is there.
            offline = [d.path for d in dirs.get(b, ()) if not d.online]
            if not holding and not offline:
                return f"broker {b} lists {tp[0]}-{tp[1]} in none of its log dirs"
            paths.append(holding[0] if holding else offline[0])
        placed[tp] = tuple(paths)
    return ReplicaDirs(brokers, placed)


def add_log_dirs(
    document: Mapping[str, Any], dirs: Mapping[int, tuple[LogDirState, ...]]
) -> tuple[dict[str, Any], str | None]:
    """``document`` with ``logDirs`` on every broker and partition, or unchanged and the reason."""
    found = replica_dirs(
        dirs,
        {b["id"]: b["capacity"]["disk"] for b in document["brokers"]},
        {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in document["partitions"]},
    )
    if isinstance(found, str):
        return dict(document), found
    out = copy.deepcopy(dict(document))
    for broker in out["brokers"]:
        broker["logDirs"] = [
            {"path": d.path, "capacity": d.capacity, "online": d.online} for d in found.brokers[broker["id"]]
        ]
    for part in out["partitions"]:
        part["logDirs"] = list(found.partitions[(part["topic"], part["partition"])])
    return out, None
