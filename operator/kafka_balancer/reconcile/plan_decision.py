"""What a pass does with a plan: the rules of approval.py applied to the stored plan before anything is
replanned, and to a plan just made; the ``ApprovalValid`` condition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from kafka_balancer.api import BalancerGoalSpec
from kafka_balancer.reconcile.approval import (
    REPAIR_REASON,
    Action,
    Decision,
    cancelled_plans,
    decide,
    repair_opted_in,
)
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.healing import repairs_unapproved
from kafka_balancer.reconcile.pool_input import PoolInput, StoredPlan
from kafka_balancer.reconcile.status import ExecutionPhase, ExecutionStatus


def judge_stored_plan(inp: PoolInput) -> Decision:
    """The approval is judged against the STORED plan before anything is replanned: an approval
    executes exactly the plan the user read. Auto mode executes a stored plan only to resume it;
    anything else it replans, so it never acts on a plan made from an older view of the cluster."""
    execution = ExecutionStatus.from_dict(inp.status.get("execution"))
    stored = inp.stored
    resuming = (
        stored is not None
        and execution is not None
        and execution.plan_id == stored.id
        and execution.phase.resumable
    )
    if inp.spec.mode == "Auto" and not resuming:
        stored = None
    # A repair, like an Auto plan, runs unapproved from the stored plan only to resume it.
    repairs = (
        stored.repairs
        if stored is not None and stored.repairs is not None and resuming and repairs_unapproved(inp.spec)
        else None
    )
    if repairs is not None and not repair_opted_in(
        repairs,
        repair_hard_goals=inp.spec.self_healing.repair_hard_goals,
        heal_brokers=inp.spec.self_healing.enabled,
    ):
        repairs = None
    return decide(
        mode=inp.spec.mode,
        paused=inp.spec.paused,
        stored_id=stored.id if stored else None,
        empty=stored is None or not stored.reassignments,
        approved=inp.approved,
        executed=executed_id(inp),
        repairs=repairs,
        cancelled=cancelled_ids(inp),
    )


def decide_new_plan(inp: PoolInput, new_plan: StoredPlan) -> Decision:
    """The mode and approval applied to a plan just made (Auto and repairs wait for goals to settle)."""
    return settled(
        decide(
            mode=inp.spec.mode,
            paused=inp.spec.paused,
            stored_id=new_plan.id,
            empty=not new_plan.reassignments,
            approved=inp.approved,
            executed=executed_id(inp),
            repairs=new_plan.repairs,
            cancelled=cancelled_ids(inp),
        ),
        new_plan.id,
        goals_changed=inp.status.get("goalSet") != goal_set_id(inp.goals),
    )


def settled(decision: Decision, plan: str, *, goals_changed: bool) -> Decision:
    """Auto mode, and a repair running unapproved, wait one reconcile after the goals change (or on a
    pool's first reconcile).

    Goals arrive through their own watch: a pool applied together with its goals can be reconciled
    before the operator has seen them all, and its plan would then serve the wrong goals (a repair
    could even serve a hard goal the user has not asked for).
    """
    unapproved = decision.reason in ("AutoApproved", REPAIR_REASON)
    if decision.action is Action.EXECUTE and unapproved and goals_changed:
        return Decision(
            Action.PLAN_ONLY,
            "GoalsChanged",
            f"the goals changed since the last reconcile: plan {plan} runs if the next one confirms it",
        )
    return decision


def goal_set_id(goals: Sequence[tuple[str, BalancerGoalSpec]]) -> str:
    """A short fingerprint of the pool's goals, recorded in status to notice that they changed."""
    canonical = json.dumps(
        sorted([name, spec.model_dump(mode="json", by_alias=True)] for name, spec in goals), sort_keys=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def approval_conditions(inp: PoolInput, decision: Decision) -> tuple[list[Condition], list[Event]]:
    """Manual mode says whether the approval annotation is usable; a stale one is also an event."""
    if decision.action is Action.REFUSE:
        return [Condition("ApprovalValid", FALSE, decision.reason, decision.message)], [
            Event("Warning", "ApprovalRefused", sentence(f"Approval refused: {decision.message}"))
        ]
    if inp.spec.mode == "Manual":
        return [Condition("ApprovalValid", TRUE, decision.reason, decision.message)], []
    return [], []


def executed_id(inp: PoolInput) -> str | None:
    executed = (inp.status.get("plan") or {}).get("executedId")
    return str(executed) if executed else None


def cancelled_ids(inp: PoolInput) -> frozenset[str]:
    """The plans the pool never executes (again): the one the cancel annotation names, and the one
    whose execution the status records as cancelled."""
    execution = ExecutionStatus.from_dict(inp.status.get("execution"))
    recorded = execution.plan_id if execution and execution.phase is ExecutionPhase.CANCELLED else None
    return cancelled_plans(requested=inp.cancel, recorded=recorded)
