"""Partitions created since the previous pass (a new topic, partitions added to a topic): noticed by
comparing each topic's partition count with the pass before, so the pass that first plans them can
say so (an event, a metric) and what its plan does with them.

Every pass plans the whole cluster, so a new partition is placed by the first plan made after it
appears whether or not it is noticed here; this module only tells which partitions those are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_balancer.model.cluster import Partition
from kafka_balancer.model.plan import ReassignmentPlan
from kafka_balancer.reconcile.snapshot import ClusterMetadata


@dataclass(frozen=True, slots=True)
class Growth:
    """One topic's partitions ``before`` (0: the topic is new) and ``now``; the new ones are the ids
    from ``before`` on (Kafka only ever adds partitions at the end)."""

    topic: str
    before: int
    now: int

    @property
    def added(self) -> int:
        return self.now - self.before

    def text(self) -> str:
        if self.before == 0:
            return f"{self.now} of new topic {self.topic}"
        return f"{self.added} added to topic {self.topic} ({self.before} → {self.now})"


@dataclass(frozen=True, slots=True)
class Placement:
    """What a plan does with the new partitions: leadership moved by reordering their replicas
    (nothing copied), replicas moved; and what rides along for older partitions: their replica
    moves, and those whose leadership alone moves (a plan that fixes a band also evens the leaders
    over every movable partition, old ones too)."""

    reordered: int
    moved: int
    replica_moves: int
    other_replica_moves: int
    other_reordered: int


def partition_counts(metadata: ClusterMetadata) -> dict[str, int]:
    """Each topic's partition count, as the next pass compares it."""
    return dict(Counter(p.topic for p in metadata.partitions))


def grown(before: Mapping[str, int] | None, partitions: Iterable[Partition]) -> tuple[Growth, ...]:
    """The movable topics with more partitions than ``before`` (the previous pass's counts), by name;
    nothing on a first pass (``before`` None), when there is no previous pass to differ from.

    Excluded topics (not movable) are left out: the pool never places them. A topic deleted and
    created again between two passes with no more partitions than before is not noticed."""
    if before is None:
        return ()
    now = Counter(p.topic for p in partitions if p.movable)
    return tuple(
        Growth(topic, before.get(topic, 0), count)
        for topic, count in sorted(now.items())
        if count > before.get(topic, 0)
    )


def new_partition_ids(growth: Sequence[Growth]) -> frozenset[tuple[str, int]]:
    return frozenset((g.topic, p) for g in growth for p in range(g.before, g.now))


def placement(growth: Sequence[Growth], partitions: Iterable[Partition], plan: ReassignmentPlan) -> Placement:
    """How ``plan`` treats the new partitions of ``growth`` (``partitions``: the cluster as planned)."""
    new = new_partition_ids(growth)
    current = {(p.topic, p.partition): p.replicas for p in partitions}
    reordered = moved = replica_moves = other_moves = other_reordered = 0
    for r in plan:
        was = current.get(r.tp, ())
        added = len(set(r.replicas) - set(was))
        if r.tp not in new:
            other_moves += added
            if not added:
                other_reordered += 1
        elif added:
            moved += 1
            replica_moves += added
        else:
            reordered += 1
    return Placement(reordered, moved, replica_moves, other_moves, other_reordered)
