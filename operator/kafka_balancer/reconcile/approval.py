"""What to do with the current plan, given the mode, pause, and the approval and cancel annotations."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass
from typing import Any

APPROVE_ANNOTATION = "kafkabalancer.io/approve"
# Names the plan to cancel, as the approval names the plan to run: a request left behind never
# cancels a later plan.
CANCEL_ANNOTATION = "kafkabalancer.io/cancel-plan"
# The reason of a Manual pool's plan that runs without approval because it repairs hard goals.
REPAIR_REASON = "RepairsHardGoals"
# How the repairs of a plan that heals failed brokers begin (spec.selfHealing.enabled): such a plan
# runs without approval like a repair of hard goals, on its own opt-in.
HEALS = "failed brokers"
# How the repairs of a plan that re-homes the replicas of offline log dirs begin: the same opt-in.
HEALS_LOG_DIRS = "offline log dirs"


def repair_opted_in(repairs: str, *, repair_hard_goals: bool, heal_brokers: bool) -> bool:
    """Whether the spec still lets a plan that repairs ``repairs`` run without approval: a plan that
    heals failed brokers or offline log dirs on spec.selfHealing.enabled, a plan that repairs hard goals on
    spec.selfHealing.repairHardGoals."""
    return heal_brokers if repairs.startswith((HEALS, HEALS_LOG_DIRS)) else repair_hard_goals


class Action(enum.Enum):
    NOTHING = "Nothing"  # no plan, an empty one, paused, or cancelled
    PLAN_ONLY = "PlanOnly"  # DryRun
    AWAIT_APPROVAL = "AwaitApproval"  # Manual, no approval yet
    EXECUTE = "Execute"  # Auto, approved, or (Manual) a plan that repairs hard goals
    REFUSE = "Refuse"  # Manual, an approval naming another plan


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str
    message: str


def plan_id(plan_document: dict[str, Any]) -> str:
    """Short, stable id of a plan: the first 10 hex digits of the SHA-256 of its canonical JSON."""
    canonical = json.dumps(plan_document, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def decide(
    *,
    mode: str,
    paused: bool,
    stored_id: str | None,
    empty: bool,
    approved: str | None,
    executed: str | None,
    repairs: str | None = None,
    cancelled: frozenset[str] = frozenset(),
) -> Decision:
    """``stored_id``: the plan in the pool's plan ConfigMap; ``approved``: the annotation's value;
    ``executed``: the plan already executed (never run twice); ``repairs``: the failed brokers it heals
    or the violated hard goals it repairs when the pool lets such a plan run unapproved
    (spec.selfHealing.enabled, spec.selfHealing.repairHardGoals), None for any other plan;
    ``cancelled``: the plans cancelled (see :func:`cancelled_plans`), never run again."""
    if paused:
        return Decision(Action.NOTHING, "Paused", "spec.paused is true: nothing is planned or moved")
    if stored_id is None or empty:
        return Decision(Action.NOTHING, "NothingToDo", "the plan is empty: nothing to move")
    if stored_id == executed:
        return Decision(Action.NOTHING, "AlreadyExecuted", f"plan {stored_id} has been executed")
    if stored_id in cancelled:
        return Decision(
            Action.NOTHING,
            "Cancelled",
            f"plan {stored_id} was cancelled ({CANCEL_ANNOTATION}) and is not executed again; "
            "the next plan that differs from it is decided on as usual",
        )
    if mode == "DryRun":
        return Decision(Action.PLAN_ONLY, "DryRun", f"plan {stored_id} is ready; mode DryRun never executes")
    if mode == "Auto":
        return Decision(Action.EXECUTE, "AutoApproved", f"mode Auto: executing plan {stored_id}")
    if approved == stored_id:
        return Decision(Action.EXECUTE, "Approved", f"executing approved plan {stored_id}")
    if repairs is not None:
        return Decision(
            Action.EXECUTE, REPAIR_REASON, f"plan {stored_id} auto-approved: it repairs {repairs}"
        )
    if approved is None or approved == executed:
        return Decision(
            Action.AWAIT_APPROVAL,
            "AwaitingApproval",
            f"plan {stored_id} waits for the annotation {APPROVE_ANNOTATION}={stored_id}",
        )
    return Decision(
        Action.REFUSE,
        "StaleApproval",
        f"{APPROVE_ANNOTATION}={approved} names no current plan; the current plan is {stored_id}",
    )


def halt_reason(
    *, mode: str, paused: bool, approved: str | None, plan: str, repair: bool = False
) -> str | None:
    """Why a running execution of ``plan`` must stop at its next batch, as the spec reads now; None
    while it may go on. Only what the user changes counts: a new plan never halts a running one.
    ``repair``: ``plan`` heals failed brokers or repairs hard goals and its opt-in (see
    :func:`repair_opted_in`) is still on, so mode Manual runs it without an approval."""
    if paused:
        return "spec.paused is true"
    if mode == "DryRun":
        return "mode DryRun never executes"
    if mode == "Manual" and approved != plan and not repair:
        return f"mode Manual and {APPROVE_ANNOTATION} no longer names plan {plan}"
    return None


def cancelled_plans(*, requested: str | None, recorded: str | None) -> frozenset[str]:
    """The plans never to execute (again): the one the cancel annotation names (``requested``; a
    plan approved but not started yet is not started), and the one whose execution the status
    records as cancelled (``recorded``), which stays cancelled once the annotation is gone."""
    return frozenset(p for p in (requested, recorded) if p)


def cancel_requested(*, requested: str | None, plan: str) -> bool:
    """Whether the cancel annotation (``requested``) asks to cancel the running ``plan``: only a
    request naming it does, so one left behind for an earlier plan is ignored."""
    return requested == plan
