"""Check a plan against the live cluster before anything is touched."""

from __future__ import annotations

from collections.abc import Mapping

from kafka_balancer.errors import InputError
from kafka_balancer.kafka.admin import PartitionState
from kafka_balancer.model.plan import ReassignmentPlan


def check_plan(
    plan: ReassignmentPlan,
    brokers: frozenset[int],
    partitions: Mapping[tuple[str, int], PartitionState],
) -> None:
    """Raise :class:`InputError` for an unknown topic/partition/broker, a replication-factor change or a
    log-dir move."""
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
        if entry.moves_log_dirs:
            # Refused rather than dropped: executing the replicas alone would report a plan done that
            # was not (the log-dir moves go through AlterReplicaLogDirs, not a reassignment).
            raise InputError(
                f"plan: {name} moves a replica between log dirs (log_dirs), which this executor does not "
                "do yet; execute the plan with kafka-reassign-partitions.sh --execute"
            )
