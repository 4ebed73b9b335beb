"""The planner's cluster model of a pool: Kafka metadata + the pool's capacities + lifecycle states."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

import regex

from kafka_balancer.api import Capacity
from kafka_balancer.errors import InputError
from kafka_balancer.kube_quantity import parse_quantity
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, LogDir, Partition, PartitionLoad
from kafka_balancer.reconcile.brokers import BrokerView, Lifecycle

ZERO_LOAD = PartitionLoad(0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True, slots=True)
class PartitionMeta:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int
    # The log dir of each replica, aligned with ``replicas``; empty when the pass could not tell.
    log_dirs: tuple[str, ...] = ()
    # Being reassigned by someone else when the pass read it: ``replicas`` are its target, and it is
    # left out of the plan (not movable) until that reassignment ends.
    reassigning: bool = False


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """What Kafka says: brokers (id → rack, "" if none) and partitions. ``offline``: the brokers
    that replicas name but Kafka does not list (down); they are in ``brokers`` too, rack "", as
    their replicas must be planned around. ``log_dirs``: every broker's log dirs (JBOD), with each
    partition's in ``PartitionMeta.log_dirs``, or empty and ``no_log_dirs`` says why."""

    brokers: Mapping[int, str]
    partitions: tuple[PartitionMeta, ...]
    offline: frozenset[int] = frozenset()
    log_dirs: Mapping[int, tuple[LogDir, ...]] = field(default_factory=dict)
    no_log_dirs: str | None = None

    def offline_log_dirs(self) -> list[tuple[int, str]]:
        """(broker, path) of every log dir a live broker reports offline (a failed disk)."""
        return [(b, d.path) for b, dirs in sorted(self.log_dirs.items()) for d in dirs if not d.online]

    def replicas_in(self, broker: int, path: str) -> int:
        """How many replicas ``broker`` keeps in its log dir ``path``."""
        return sum(
            1
            for p in self.partitions
            if p.log_dirs
            for b, where in zip(p.replicas, p.log_dirs, strict=True)
            if b == broker and where == path
        )

    @property
    def live(self) -> dict[int, str]:
        return {b: rack for b, rack in self.brokers.items() if b not in self.offline}

    def replicas_on(self) -> dict[int, int]:
        counts = dict.fromkeys(self.brokers, 0)
        for p in self.partitions:
            for b in p.replicas:
                counts[b] = counts.get(b, 0) + 1
        return counts


_STATES = {
    Lifecycle.DRAINING: BrokerState.DRAINING,
    Lifecycle.DRAINED: BrokerState.DRAINING,
    Lifecycle.FAILED: BrokerState.FAILED,
}


def no_rack(broker_id: int) -> str:
    """The rack of a broker that names none (or is offline): its own, so rack goals still hold."""
    return f"(no rack: broker {broker_id})"


def broker_capacity(capacity: Capacity, broker_id: int) -> tuple[float, float, float, float]:
    if capacity.disk is None or capacity.cpu is None:
        # Filled from the pool's StatefulSet before a pass reads the cluster (stateful_set.py).
        raise InputError("capacity.disk and capacity.cpu: not given and not read from a StatefulSet")
    values: list[int | str] = [capacity.disk, capacity.network_in, capacity.network_out, capacity.cpu]
    for override in capacity.overrides:
        if override.broker == broker_id:
            for i, value in enumerate(
                (override.disk, override.network_in, override.network_out, override.cpu)
            ):
                if value is not None:
                    values[i] = value
    disk, net_in, net_out, cpu = (parse_quantity(v) for v in values)
    return disk, net_in, net_out, cpu


# How long one pattern may take on one topic name: far above any sane pattern's microseconds.
MATCH_TIMEOUT_S = 0.05


def movable_topics(patterns: Sequence[str], topics: Set[str]) -> dict[str, bool]:
    """Each topic: True unless a pattern of ``excludedTopics`` matches it whole (Python's syntax).

    A user writes these patterns, and a backtracking engine can take exponential time on one (such
    as ``(a|aa)+c`` against a long name) while holding the process. Each topic is matched once,
    with the GIL released and a time limit per match; a pattern that runs past it is refused
    (:class:`InputError`) rather than tried on the next topic, so a pass spends at most that limit
    on it."""
    try:
        compiled = [regex.compile(pattern, regex.VERSION0) for pattern in patterns]
    except regex.error as err:
        raise InputError(f"spec.excludedTopics: {err}") from None
    movable: dict[str, bool] = {}
    for topic in sorted(topics):
        for pattern, rx in zip(patterns, compiled, strict=True):
            try:
                if rx.fullmatch(topic, timeout=MATCH_TIMEOUT_S, concurrent=True):
                    movable[topic] = False
                    break
            except TimeoutError:
                raise InputError(
                    f"spec.excludedTopics: {pattern!r} took over {MATCH_TIMEOUT_S * 1000:.0f} ms on topic "
                    f"{topic!r}: refused (a pattern that backtracks without bound would stall the operator)"
                ) from None
        else:
            movable[topic] = True
    return movable


def build_cluster(
    metadata: ClusterMetadata,
    views: Sequence[BrokerView],
    capacity: Capacity,
    excluded_topics: Sequence[str],
    loads: Mapping[tuple[str, int], PartitionLoad],
    demoted: Sequence[int] = (),
    heal_log_dirs: bool = True,
) -> Cluster:
    """Excluded topics' partitions are in the model, not movable: their load counts on their
    brokers, and only a drain moves them (a broker being removed must give up every replica).

    A partition without a measured load counts as empty (the collector fills ``loads``); the
    brokers of ``demoted`` (``spec.demote``) lead nothing. A failed broker is planned like a drained
    one, and a missing one (not yet failed) as it was: its replicas stay where they are.

    Log dirs go in when the metadata has them for every broker of the model, so the intra-broker
    goals work and the planner re-homes the replicas of an offline dir; with an offline dir and not
    ``heal_log_dirs`` (self-healing off) they stay out, and so its replicas stay where they are."""
    movable = movable_topics(excluded_topics, {p.topic for p in metadata.partitions})
    # A missing broker that no replica names is not in the cluster: nothing may be moved to it.
    kept = [v for v in views if v.state is not Lifecycle.MISSING or v.id in metadata.brokers]
    dirs = metadata.log_dirs
    with_dirs = (
        all(v.id in dirs for v in kept)
        and all(p.log_dirs for p in metadata.partitions if p.replicas)
        and (heal_log_dirs or not metadata.offline_log_dirs())
    )
    brokers = tuple(
        Broker(
            id=v.id,
            rack=v.rack or no_rack(v.id),
            state=_STATES.get(v.state, BrokerState.ACTIVE),
            capacity=broker_capacity(capacity, v.id),
            warm_up_share=v.share,
            demoted=v.id in demoted,
            log_dirs=dirs[v.id] if with_dirs else (),
        )
        for v in kept
    )
    partitions = tuple(
        Partition(
            p.topic,
            p.partition,
            p.replicas,
            p.leader if p.leader in p.replicas else p.replicas[0],
            loads.get((p.topic, p.partition), ZERO_LOAD),
            movable=movable.get(p.topic, True) and not p.reassigning,
            log_dirs=p.log_dirs if with_dirs else (),
        )
        for p in metadata.partitions
        if p.replicas
    )
    return Cluster(brokers, partitions)
