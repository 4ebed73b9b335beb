"""Check a plan against the live cluster before anything is touched."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_balancer.errors import InputError
from kafka_balancer.kafka.admin import LogDirState, PartitionState
from kafka_balancer.model.plan import ANY_LOG_DIR, Reassignment, ReassignmentPlan


def check_plan(
    plan: ReassignmentPlan,
    brokers: frozenset[int],
    partitions: Mapping[tuple[str, int], PartitionState],
    log_dirs: Mapping[int, tuple[LogDirState, ...]],
) -> None:
    """Raise :class:`InputError` for an unknown topic/partition/broker, a replication-factor change or a
    log dir (of ``log_dirs``, the brokers' dirs) that is not an online dir of its broker."""
    topics = {topic for topic, _ in partitions}
    for entry in plan:
        name = entry.name
        if entry.topic not in topics:
            raise InputError(f"plan: unknown topic {entry.topic!r}")
        current = partitions.get(entry.tp)
        if current is None:
            raise InputError(f"plan: unknown partition {name}")
        unknown = sorted(set(entry.replicas) - brokers)
        if unknown:
            raise InputError(f"plan: {name} names unknown broker(s) {unknown} (live: {sorted(brokers)})")
        if len(entry.replicas) != len(current.replicas):
            raise InputError(
                f"plan: {name} changes the replication factor from {len(current.replicas)} "
                f"to {len(entry.replicas)}"
            )
        _check_log_dirs(entry, log_dirs)


def _check_log_dirs(entry: Reassignment, log_dirs: Mapping[int, tuple[LogDirState, ...]]) -> None:
    """Each log dir the plan names is an online dir of its broker: anything else Kafka would refuse
    half-way through the execution (LogDirNotFound, KafkaStorageError)."""
    if not entry.moves_log_dirs:
        return
    for broker, path in zip(entry.replicas, entry.log_dirs, strict=True):
        if path == ANY_LOG_DIR:
            continue
        dirs = {d.path: d for d in log_dirs.get(broker, ())}
        where = f"plan: {entry.name}.log_dirs"
        if path not in dirs:
            raise InputError(f"{where}: broker {broker} has no log dir {path!r} (its dirs: {sorted(dirs)})")
        if not dirs[path].online:
            raise InputError(f"{where}: log dir {path!r} of broker {broker} is offline")


def named_dir_brokers(plan: ReassignmentPlan) -> set[int]:
    """The brokers whose log dirs the plan names: those :func:`check_plan` needs described."""
    return {
        b
        for entry in plan
        if entry.moves_log_dirs
        for b, d in zip(entry.replicas, entry.log_dirs, strict=True)
        if d != ANY_LOG_DIR
    }
