"""What a report shows, computed once and rendered by every format."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafka_balancer.model.working import BrokerLoad


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
            f"{self.leader_changes} leader change(s), {_bytes(self.bytes_moved)} moved"
        )


def _bytes(n: float) -> str:
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
