"""The plan as data: the replicas each changed partition gets. One type from the planner to the executor.

The planner makes it, the pool's plan ConfigMap stores it, an approval executes exactly it, and
``kafka-balancer execute`` and ``report`` read it; Kafka's own reassignment JSON is its file form
(:mod:`kafka_balancer.formats.plan_file` is its one reader and writer).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

# Kafka's word, in a plan's ``log_dirs``, for a replica whose log dir the plan leaves to the broker.
ANY_LOG_DIR = "any"


@dataclass(frozen=True, slots=True)
class Reassignment:
    """One partition's replicas after the plan; ``replicas[0]`` is its leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    # The log dir each replica goes to, aligned with ``replicas`` (``ANY_LOG_DIR`` where it does not
    # matter); empty when no replica of this partition changes log dir.
    log_dirs: tuple[str, ...] = ()

    @property
    def moves_log_dirs(self) -> bool:
        return any(d != ANY_LOG_DIR for d in self.log_dirs)

    @property
    def tp(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class ReassignmentPlan:
    """Only the partitions the plan changes, each once, in the order the plan lists them."""

    reassignments: tuple[Reassignment, ...] = ()

    def __iter__(self) -> Iterator[Reassignment]:
        return iter(self.reassignments)

    def __len__(self) -> int:
        return len(self.reassignments)

    def targets(self) -> dict[tuple[str, int], tuple[int, ...]]:
        """Planned replicas by (topic, partition)."""
        return {r.tp: r.replicas for r in self.reassignments}
