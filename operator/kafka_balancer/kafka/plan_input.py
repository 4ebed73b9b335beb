"""Read a reassignment plan and check it against the live cluster before anything is touched."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kafka_balancer.errors import InputError
from kafka_balancer.kafka.admin import PartitionState


@dataclass(frozen=True)
class PlannedPartition:
    topic: str
    partition: int
    replicas: tuple[int, ...]


def read_plan(path: Path) -> list[PlannedPartition]:
    """Parse Kafka's reassignment JSON; raise :class:`InputError` naming the offending entry."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"plan {path}: {err.strerror}") from err
    except UnicodeDecodeError:
        raise InputError(f"plan {path}: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise InputError(f"plan {path} is not JSON: {err}") from err
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise InputError(f"plan {path}: 'partitions' must be a list")
    plan: list[PlannedPartition] = []
    seen: set[tuple[str, int]] = set()
    for index, entry in enumerate(entries):
        where = f"plan partitions[{index}]"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: must be an object")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{where}.topic: must be a non-empty string")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise InputError(f"{where}.partition: must be a non-negative integer")
        if (
            not isinstance(replicas, list)
            or not replicas
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in replicas)
        ):
            raise InputError(f"{where}.replicas: must be a non-empty list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise InputError(f"{where}.replicas: duplicate broker in {replicas} for {topic}-{partition}")
        if (topic, partition) in seen:
            raise InputError(f"{where}: {topic}-{partition} is listed twice")
        seen.add((topic, partition))
        plan.append(PlannedPartition(topic, partition, tuple(replicas)))
    return plan


def check_plan(
    plan: list[PlannedPartition],
    brokers: frozenset[int],
    partitions: Mapping[tuple[str, int], PartitionState],
) -> None:
    """Raise :class:`InputError` for an unknown topic/partition/broker or a replication-factor change."""
    topics = {topic for topic, _ in partitions}
    for entry in plan:
        name = f"{entry.topic}-{entry.partition}"
        if entry.topic not in topics:
            raise InputError(f"plan: unknown topic {entry.topic!r}")
        current = partitions.get((entry.topic, entry.partition))
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
