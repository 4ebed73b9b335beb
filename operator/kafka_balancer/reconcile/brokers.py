"""Per-broker lifecycle bookkeeping: first seen, warming (share and step), draining, drained."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class BrokerView:
    id: int
    rack: str
    state: Lifecycle
    first_seen: float
    share: float = 1.0
    step: int = 0
    steps: int = 0


@dataclass(frozen=True, slots=True)
class WarmUpPolicy:
    duration_s: int
    steps: int
    listed: frozenset[int] = frozenset()  # spec.warmUp.brokers: warm up even if seen before


def broker_views(
    present: Mapping[int, str],
    replicas_on: Mapping[int, int],
    first_seen: Mapping[int, float] | None,
    drain: Sequence[int],
    policy: WarmUpPolicy,
    now: float,
) -> tuple[BrokerView, ...]:
    """Each present broker's lifecycle state.

    ``first_seen`` is what status recorded (None on the pool's first reconcile: the brokers that are
    already there are the established cluster, not newcomers, so only ``policy.listed`` warm up).
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
        point = warm_up_point(start, now, policy.duration_s, policy.steps)
        if point.done:
            views.append(BrokerView(broker_id, rack, Lifecycle.ACTIVE, start))
        else:
            views.append(
                BrokerView(broker_id, rack, Lifecycle.WARMING, start, point.share, point.step, point.steps)
            )
    return tuple(views)
