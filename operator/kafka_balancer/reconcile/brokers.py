"""Per-broker lifecycle bookkeeping: first seen, warming (share and step), draining, drained, missing,
failed."""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from kafka_balancer.reconcile.warmup import warm_up_point

# first_seen of the brokers present when the operator first saw the pool: warm long ago.
ESTABLISHED = 0.0


class Lifecycle(enum.Enum):
    ACTIVE = "Active"
    WARMING = "Warming"
    DRAINING = "Draining"
    DRAINED = "Drained"
    # Status only: a broker of spec.drain that was Drained and has since left the cluster.
    REMOVED = "Removed"
    # A pool broker absent from the cluster for less than spec.selfHealing.brokerFailureSeconds (or
    # with self-healing off): nothing is done yet, it may come back (a restart, a rolling upgrade).
    MISSING = "Missing"
    # Absent for brokerFailureSeconds with self-healing on: its replicas are re-homed like a drain's.
    FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class BrokerView:
    id: int
    rack: str
    state: Lifecycle
    first_seen: float
    share: float = 1.0
    step: int = 0
    steps: int = 0
    missing_since: float | None = None  # Missing and Failed only

    @property
    def absent(self) -> bool:
        return self.state in (Lifecycle.MISSING, Lifecycle.FAILED)


@dataclass(frozen=True, slots=True)
class WarmUpPolicy:
    duration_s: int
    steps: int
    listed: frozenset[int] = frozenset()  # spec.warmUp.brokers: warm up even if seen before


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """spec.selfHealing's broker-failure fields."""

    enabled: bool
    timeout_s: int
    max_brokers: int
    max_percent: int


@dataclass(frozen=True, slots=True)
class Absence:
    """What status recorded of a broker, by which it is known once it is not in the cluster: its rack
    (Kafka no longer says), since when it is missing (None: it was present at the last pass)."""

    rack: str
    first_seen: float
    missing_since: float | None
    failed: bool  # recorded Failed: a return now is a new broker


def broker_views(
    present: Mapping[int, str],
    replicas_on: Mapping[int, int],
    first_seen: Mapping[int, float] | None,
    drain: Sequence[int],
    policy: WarmUpPolicy,
    now: float,
    shown: Mapping[int, int] | None = None,
) -> tuple[BrokerView, ...]:
    """Each present broker's lifecycle state.

    ``first_seen`` is what status recorded (None on the pool's first reconcile: the brokers that are
    already there are the established cluster, not newcomers, so only ``policy.listed`` warm up).
    ``shown`` is the warm-up step status showed for each broker it showed Warming: none goes more
    than one step past it (see ``warm_up_point``).
    A drained broker with no replica left is Drained; one still holding replicas is Draining.
    """
    known = dict(first_seen) if first_seen is not None else dict.fromkeys(present, ESTABLISHED)
    views = []
    for broker_id, rack in sorted(present.items()):
        seen = known.get(broker_id, now)
        if broker_id in drain:
            state = Lifecycle.DRAINED if replicas_on.get(broker_id, 0) == 0 else Lifecycle.DRAINING
            views.append(BrokerView(broker_id, rack, state, seen))
            continue
        if seen == ESTABLISHED and broker_id not in policy.listed:
            views.append(BrokerView(broker_id, rack, Lifecycle.ACTIVE, ESTABLISHED))
            continue
        start = now if seen == ESTABLISHED else seen
        point = warm_up_point(start, now, policy.duration_s, policy.steps, (shown or {}).get(broker_id))
        if point.done:
            views.append(BrokerView(broker_id, rack, Lifecycle.ACTIVE, start))
        else:
            views.append(
                BrokerView(broker_id, rack, Lifecycle.WARMING, start, point.share, point.step, point.steps)
            )
    return tuple(views)


def absent_views(
    absent: Mapping[int, Absence],
    replicas_on: Mapping[int, int],
    policy: FailurePolicy,
    now: float,
) -> tuple[BrokerView, ...]:
    """The pool brokers that are not in the cluster: Missing until the failure timeout, then Failed
    when self-healing is on. One that holds no replica once the timeout has passed is forgotten:
    there is nothing to heal, and if it ever returns it is a new broker."""
    views = []
    for broker_id, was in sorted(absent.items()):
        since = now if was.missing_since is None else was.missing_since
        timed_out = now - since >= policy.timeout_s
        if timed_out and replicas_on.get(broker_id, 0) == 0:
            continue
        state = Lifecycle.FAILED if timed_out and policy.enabled else Lifecycle.MISSING
        views.append(BrokerView(broker_id, was.rack, state, was.first_seen, missing_since=since))
    return tuple(views)


def guard_exceeded(
    views: Sequence[BrokerView], policy: FailurePolicy, failed_disks: Collection[int] = ()
) -> str | None:
    """Why the failed brokers are too many to heal at once (None: within the guard). The share is of
    every pool broker, present or not: a larger outage is for a person, not for moving data. A live
    broker with a failed log dir (``failed_disks``, when self-healing would re-home its replicas)
    counts as one to heal."""
    failed = sorted({v.id for v in views if v.state is Lifecycle.FAILED} | set(failed_disks))
    what = "failed or with an offline log dir" if failed_disks else "failed"
    if len(failed) > policy.max_brokers:
        return (
            f"{len(failed)} brokers {failed} {what} at once, more than "
            f"spec.selfHealing.maxFailedBrokers ({policy.max_brokers})"
        )
    if len(failed) * 100 > policy.max_percent * len(views):
        share = len(failed) * 100 // len(views)
        return (
            f"{len(failed)} brokers {failed} {what} at once, {share}% of the pool's {len(views)} brokers, "
            f"more than spec.selfHealing.maxFailedPercent ({policy.max_percent}%)"
        )
    return None


def returned_late(recorded: Mapping[int, Absence], present: Collection[int]) -> frozenset[int]:
    """Brokers recorded Failed that are back: new brokers, which warm up."""
    return frozenset(b for b, was in recorded.items() if was.failed and b in present)
