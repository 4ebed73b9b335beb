"""The pool's brokers as one pass observes them: each broker's lifecycle (the rules are in brokers.py)
from Kafka's metadata and what status recorded at the previous pass, written back as
``status.brokers``, with the events of its changes and when a warming broker's next step falls due;
and between two passes, the change of the live brokers that wakes the next one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_balancer.reconcile.brokers import (
    ESTABLISHED,
    Absence,
    BrokerView,
    FailurePolicy,
    Lifecycle,
    WarmUpPolicy,
    absent_views,
    broker_views,
    guard_exceeded,
    returned_late,
)
from kafka_balancer.reconcile.conditions import TRUE, Condition
from kafka_balancer.reconcile.events import Event
from kafka_balancer.reconcile.log_dir_failure import failed_disks
from kafka_balancer.reconcile.pool_input import PoolInput
from kafka_balancer.reconcile.status import BrokerStatus, parse_rfc3339, rfc3339
from kafka_balancer.reconcile.warmup import next_step_at


@dataclass(frozen=True, slots=True)
class ObservedBrokers:
    """The pool's brokers this pass, and the drain ids Kafka never had."""

    views: tuple[BrokerView, ...]
    statuses: tuple[BrokerStatus, ...]
    unknown_drained: tuple[int, ...]
    # Why the failed brokers are too many to heal (spec.selfHealing's guard); None: within it.
    guard: str | None = None
    # The earliest time (epoch seconds) a warming broker goes a step further or is warm; None: none
    # is warming.
    next_step_at: float | None = None


def observe_brokers(inp: PoolInput) -> ObservedBrokers:
    """Each broker's lifecycle (warming, draining, missing, ...) from the metadata and what status
    recorded.

    A drained broker that has since left the cluster (the scale-down finished) is Removed, not an
    error; a listed broker Kafka never had (a typo) blocks the drain. Any other pool broker that is
    not in the cluster is Missing, then Failed after spec.selfHealing.brokerFailureSeconds; one
    recorded Failed that is back is a new broker (it warms up), one recorded Missing is as it was."""
    spec = inp.spec
    # A broker of spec.drain that is down stays Draining: it is leaving anyway, never Missing.
    present_racks = {
        b: rack for b, rack in inp.metadata.brokers.items() if b in inp.metadata.live or b in spec.drain
    }
    recorded = _absences(inp.status)
    first_seen = _first_seen(inp.status)
    if first_seen is not None:
        first_seen.update(dict.fromkeys(returned_late(recorded, present_racks), inp.now))
    warm_up = WarmUpPolicy(spec.warm_up.seconds, spec.warm_up.steps, frozenset(spec.warm_up.brokers))
    present = broker_views(
        present_racks,
        inp.metadata.replicas_on(),
        first_seen,
        spec.drain,
        warm_up,
        inp.now,
        _warm_up_shown(inp.status),
    )
    gone = {b: was for b, was in recorded.items() if b not in present_racks and b not in spec.drain}
    for b in inp.metadata.brokers.keys() - present_racks.keys():
        gone.setdefault(b, Absence(inp.metadata.brokers[b], ESTABLISHED, None, failed=False))
    healing = spec.self_healing
    policy = FailurePolicy(
        healing.enabled,
        healing.broker_failure_seconds,
        healing.max_failed_brokers,
        healing.max_failed_percent,
    )
    absent = absent_views(gone, inp.metadata.replicas_on(), policy, inp.now)
    views = tuple(sorted((*present, *absent), key=lambda v: v.id))
    was_drained = {
        int(b["id"])
        for b in inp.status.get("brokers") or []
        if b.get("state") in (Lifecycle.DRAINED.value, Lifecycle.REMOVED.value)
    }
    left = sorted(set(spec.drain) - set(inp.metadata.brokers))
    removed = tuple(BrokerStatus(b, Lifecycle.REMOVED.value) for b in left if b in was_drained)
    return ObservedBrokers(
        views,
        (*(_broker_status(v) for v in views), *removed),
        tuple(b for b in left if b not in was_drained),
        guard_exceeded(views, policy, failed_disks(inp.metadata) if healing.enabled else ()),
        min(
            (
                next_step_at(v.first_seen, warm_up.duration_s, warm_up.steps, v.step)
                for v in present
                if v.state is Lifecycle.WARMING
            ),
            default=None,
        ),
    )


def _first_seen(status: Mapping[str, Any]) -> dict[int, float] | None:
    recorded = status.get("brokers")
    if recorded is None:
        return None
    # Established brokers are recorded without a firstSeen.
    return {
        int(b["id"]): parse_rfc3339(b["firstSeen"]) if "firstSeen" in b else ESTABLISHED for b in recorded
    }


def _warm_up_shown(status: Mapping[str, Any]) -> dict[int, int]:
    """The warm-up step status showed for each broker it showed Warming."""
    return {
        int(b["id"]): int(b["warmUpStep"])
        for b in status.get("brokers") or []
        if b.get("state") == Lifecycle.WARMING.value and "warmUpStep" in b
    }


def _absences(status: Mapping[str, Any]) -> dict[int, Absence]:
    """The brokers status recorded (not Removed): their rack, since when they are missing, whether
    they had failed; what a broker that is absent now is known by."""
    return {
        int(b["id"]): Absence(
            str(b.get("rack") or ""),
            parse_rfc3339(b["firstSeen"]) if "firstSeen" in b else ESTABLISHED,
            parse_rfc3339(b["missingSince"]) if "missingSince" in b else None,
            failed=b.get("state") == Lifecycle.FAILED.value,
        )
        for b in status.get("brokers") or []
        if b.get("state") != Lifecycle.REMOVED.value
    }


def _broker_status(view: BrokerView) -> BrokerStatus:
    warming = view.state is Lifecycle.WARMING
    return BrokerStatus(
        view.id,
        view.state.value,
        view.rack,
        first_seen=None if view.first_seen == ESTABLISHED else rfc3339(view.first_seen),
        warm_up_step=view.step if warming else None,
        warm_up_steps=view.steps if warming else None,
        warm_up_share=f"{view.share * 100:.0f}%" if warming else None,
        missing_since=None if view.missing_since is None else rfc3339(view.missing_since),
    )


def lifecycle_events(previous: Mapping[str, Any], views: Sequence[BrokerView]) -> list[Event]:
    before = {int(b["id"]): b for b in previous.get("brokers") or []}
    events = []
    for view in views:
        old = before.get(view.id, {})
        if view.state is Lifecycle.WARMING and old.get("warmUpStep") != view.step:
            events.append(
                Event(
                    "Normal",
                    "WarmUpStep",
                    f"Broker {view.id} warms up: step {view.step} of {view.steps}, it now takes "
                    f"{view.share * 100:.0f}% of a full broker's share of the load.",
                )
            )
        if view.state is Lifecycle.DRAINED and old.get("state") != Lifecycle.DRAINED.value:
            events.append(
                Event(
                    "Normal",
                    "DrainDone",
                    f"Broker {view.id} is drained: it holds no replica and can be removed from the cluster.",
                )
            )
    return events


def unknown_drain_conditions(unknown: Sequence[int]) -> list[Condition]:
    if not unknown:
        return []
    message = f"spec.drain lists brokers {list(unknown)} Kafka does not know"
    return [Condition("DrainBlocked", TRUE, "UnknownBroker", message)]


def membership_change(seen: frozenset[int], now: frozenset[int] | None) -> str | None:
    """How the cluster's live brokers differ from ``seen`` (those the last pass read): which joined,
    which are gone. None when they do not, or when ``now`` could not be read: a failed read wakes
    nothing, the next pass reports the connection."""
    if now is None or now == seen:
        return None
    joined, gone = sorted(now - seen), sorted(seen - now)
    told = [f"{', '.join(map(str, ids))} {what}" for ids, what in ((joined, "joined"), (gone, "gone")) if ids]
    return f"live brokers changed: {'; '.join(told)}"
