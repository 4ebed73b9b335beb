"""What a report shows, computed once and rendered by every format."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafka_balancer.model.working import BrokerLoad
from kafka_balancer.planner.plan import GoalOutcome


@dataclass(frozen=True, slots=True)
class BrokerRow:
    id: int
    rack: str
    state: str
    warm_up_share: float
    before: BrokerLoad
    after: BrokerLoad
    # Per resource, % of the broker's (full) capacity, in ``Resource`` order.
    before_percent: tuple[float, float, float, float]
    after_percent: tuple[float, float, float, float]


class BandKind(enum.Enum):
    DISTRIBUTION = "distribution"  # lo..hi, drawn as a shaded span
    CAPACITY = "capacity"  # at most hi, drawn as a line


@dataclass(frozen=True, slots=True)
class GoalBandView:
    """One per-broker goal's band on the panel of its quantity, in the panel's units
    (% of capacity for resources, counts for replicas and leaders), in ``ReportData.brokers`` order."""

    label: str
    column: int
    kind: BandKind
    enforced: bool
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    outside_before: int
    outside_after: int


@dataclass(frozen=True, slots=True)
class PlanSummary:
    partitions_changed: int
    replica_moves: int
    leader_changes: int
    bytes_moved: float

    def line(self) -> str:
        return (
            f"{self.partitions_changed} partition(s) changed, {self.replica_moves} replica move(s), "
            f"{self.leader_changes} leader change(s), {format_bytes(self.bytes_moved)} moved"
        )


@dataclass(frozen=True, slots=True)
class ClusterSummary:
    brokers: int
    # Broker count per rack, racks sorted.
    racks: tuple[tuple[str, int], ...]
    partitions: int
    topics: int
    bytes_on_disk: float  # every replica counted

    def line(self) -> str:
        racks = ", ".join(f"{rack}: {n}" for rack, n in self.racks)
        return (
            f"{self.brokers} broker(s) in {len(self.racks)} rack(s) ({racks}), "
            f"{self.partitions} partition(s) in {self.topics} topic(s), "
            f"{format_bytes(self.bytes_on_disk)} on disk"
        )


@dataclass(frozen=True, slots=True)
class MoveRow:
    """One changed partition: where its replicas were and will be, and what copying them costs."""

    topic: str
    partition: int
    before: tuple[int, ...]  # replicas, the preferred leader first
    after: tuple[int, ...]
    bytes_moved: float  # the partition's size times the replicas added


def format_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} bytes"


@dataclass(frozen=True, slots=True)
class ReportData:
    # Grouped by rack (racks sorted, brokers by id within a rack).
    brokers: tuple[BrokerRow, ...]
    bands: tuple[GoalBandView, ...]
    summary: PlanSummary
    cluster: ClusterSummary
    # Every goal, in priority order, judged on the cluster before and after the plan.
    goals: tuple[GoalOutcome, ...]
    # The changed partitions that copy the most data, biggest first (at most ``BIGGEST_MOVES``).
    biggest_moves: tuple[MoveRow, ...]
