"""Failures and self-healing: the ``BrokerFailure`` condition and the events of brokers missing,
failed, back or healed; spec.selfHealing's guard; and what a plan repairs when the pool lets a repair
run without approval.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.durations import age_text
from kafka_balancer.planner.plan import Plan
from kafka_balancer.reconcile.approval import HEALS
from kafka_balancer.reconcile.brokers import BrokerView, Lifecycle
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.log_dir_failure import repairs as log_dir_repairs
from kafka_balancer.reconcile.observed_brokers import ObservedBrokers
from kafka_balancer.reconcile.pool_input import PoolInput
from kafka_balancer.reconcile.status import rfc3339

# Condition BrokerFailure and PlanReady's reason when spec.selfHealing's guard holds healing back.
GUARD_REASON = "TooManyFailedBrokers"


def failure_conditions(inp: PoolInput, brokers: ObservedBrokers) -> list[Condition]:
    """``BrokerFailure``, with self-healing on or a broker missing: True while a pool broker is
    missing or failed (why, and what happens next), False when every one is in the cluster."""
    healing = inp.spec.self_healing
    missing = [v for v in brokers.views if v.state is Lifecycle.MISSING]
    failed = [v.id for v in brokers.views if v.state is Lifecycle.FAILED]
    if brokers.guard is not None:
        return [Condition("BrokerFailure", TRUE, GUARD_REASON, f"{brokers.guard}: nothing is healed")]
    if not missing and not failed:
        if not healing.enabled:
            return []
        return [
            Condition(
                "BrokerFailure",
                FALSE,
                "AllBrokersPresent",
                "no pool broker is missing (brokers of spec.drain are leaving anyway)",
            )
        ]
    parts = []
    if failed:
        # A partition whose every replica is on a failed broker has nothing to copy from: its
        # replicas stay where they are (the PartitionsStranded event names them).
        gone = set(failed)
        lost = sum(1 for p in inp.metadata.partitions if p.replicas and gone.issuperset(p.replicas))
        what = f"brokers {failed} failed: their replicas are re-homed to live brokers, same rack first"
        if lost:
            what += f", but for {lost} partition(s) with no replica elsewhere, which no move can copy"
        parts.append(what)
    for v in missing:
        start = inp.now if v.missing_since is None else v.missing_since
        since = rfc3339(start)
        if healing.enabled:
            deadline = rfc3339(start + healing.broker_failure_seconds)
            parts.append(f"broker {v.id} missing since {since}, failed at {deadline} unless it returns")
        else:
            parts.append(
                f"broker {v.id} missing since {since}; spec.selfHealing.enabled is false: not healed"
            )
    return [
        Condition("BrokerFailure", TRUE, "BrokersFailed" if failed else "BrokersMissing", "; ".join(parts))
    ]


def failure_events(inp: PoolInput, brokers: ObservedBrokers) -> list[Event]:
    """A broker gone missing, failed, back (in time or late), or healed (failed, and no replica left
    on it); the guard holding healing back."""
    before = {int(b["id"]): b.get("state") for b in inp.status.get("brokers") or []}
    timeout = age_text(inp.spec.self_healing.broker_failure_seconds)
    now = {v.id: v for v in brokers.views}
    events = []
    for v in brokers.views:
        was = before.get(v.id)
        if v.state is Lifecycle.MISSING and was != Lifecycle.MISSING.value:
            text = f"Broker {v.id} (rack {v.rack or 'none'}) is missing from the cluster"
            if inp.spec.self_healing.enabled:
                text += f"; it is failed and its replicas re-homed if it is still missing in {timeout}"
            events.append(Event("Warning", "BrokerMissing", sentence(text)))
        if v.state is Lifecycle.FAILED and was != Lifecycle.FAILED.value:
            text = (
                f"Broker {v.id} (rack {v.rack or 'none'}) has been missing for {timeout} or more: it is "
                "failed and its replicas are re-homed to live brokers, same rack first"
            )
            events.append(Event("Warning", "BrokerFailed", sentence(text)))
    for broker_id, was in sorted(before.items()):
        view = now.get(broker_id)
        if was == Lifecycle.MISSING.value and view is not None and not view.absent:
            text = f"Broker {broker_id} is back before it was failed: nothing is healed"
            events.append(Event("Normal", "BrokerReturned", sentence(text)))
        if was == Lifecycle.FAILED.value and view is not None and not view.absent:
            text = f"Broker {broker_id} is back after it failed: it is a new broker and warms up"
            events.append(Event("Normal", "BrokerReturned", sentence(text)))
        if was == Lifecycle.FAILED.value and view is None:
            text = f"Broker {broker_id} is healed: every replica it held is on live brokers again"
            events.append(Event("Normal", "BrokerHealed", sentence(text)))
    previous = next((c for c in inp.status.get("conditions") or [] if c.get("type") == "BrokerFailure"), None)
    if brokers.guard is not None and (previous is None or previous.get("reason") != GUARD_REASON):
        events.append(Event("Warning", "SelfHealingBlocked", sentence(f"{brokers.guard}: nothing is healed")))
    return events


def repairs_unapproved(spec: BrokerPoolSpec) -> bool:
    """Mode Manual with an opt-in: a plan that heals failed brokers (spec.selfHealing.enabled) or
    repairs hard goals (spec.selfHealing.repairHardGoals) runs without approval."""
    healing = spec.self_healing
    return spec.mode == "Manual" and (healing.repair_hard_goals or healing.enabled)


def violated_hard_goals(inp: PoolInput, views: Sequence[BrokerView], plan: Plan) -> str | None:
    """What ``plan`` repairs when a repair may run without approval: the failed brokers it heals
    (spec.selfHealing.enabled), then the hard goals violated before it, each with how
    (spec.selfHealing.repairHardGoals); None when there is nothing such to repair, the pool has not
    opted in, or a drain or a demotion is pending (a plan then also empties the draining brokers or
    moves leadership off the demoted ones, which is the user's to approve)."""
    if not repairs_unapproved(inp.spec) or any(v.state is Lifecycle.DRAINING for v in views):
        return None
    demoted = set(inp.spec.demote)
    if any(p.leader in demoted and not set(p.replicas) <= demoted for p in inp.metadata.partitions):
        return None
    healing = inp.spec.self_healing
    failed = [v.id for v in views if v.state is Lifecycle.FAILED] if healing.enabled else []
    violated = (
        [g for g in plan.goals if g.hard and not g.before.satisfied] if healing.repair_hard_goals else []
    )
    repairs = [f"{HEALS} {failed}"] if failed else []
    healed_dirs = log_dir_repairs(inp.metadata) if healing.enabled else None
    repairs += [healed_dirs] if healed_dirs else []
    repairs += [f"{g.label} ({g.before.detail})" for g in violated]
    return "; ".join(repairs) or None
