"""The ``Executing`` condition, from the ``status.execution`` a previous pass or the execution wrote.

The execution service writes it with its progress, between sync passes; a pass writes it with the
others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka_balancer.reconcile.approval import cancel_requested
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.status import ConditionStatus, ExecutionPhase, ExecutionStatus, rfc3339


def executing_condition(execution: ExecutionStatus | None) -> Condition:
    """From the ``status.execution`` a previous pass or the execution wrote."""
    if execution is None:
        return Condition("Executing", FALSE, "Idle", "no execution has run")
    plan, message = execution.plan_id, execution.message or ""
    if execution.phase is ExecutionPhase.RUNNING:
        if execution.waiting:
            return Condition("Executing", TRUE, "Waiting", f"executing plan {plan}: {execution.waiting}")
        return Condition("Executing", TRUE, "Running", f"executing plan {plan}: {message}".rstrip(": "))
    if execution.phase is ExecutionPhase.FAILED:
        return Condition("Executing", FALSE, "ExecutionFailed", f"plan {plan} failed: {message}")
    if execution.phase is ExecutionPhase.CANCELLED:
        return Condition("Executing", FALSE, "Cancelled", f"plan {plan} cancelled {message}".rstrip())
    if execution.phase is ExecutionPhase.PAUSED:
        return Condition("Executing", FALSE, "Paused", f"plan {plan} paused: {message}")
    return Condition("Executing", FALSE, "Finished", f"plan {plan} executed and verified")


def execution_conditions(
    previous: Sequence[Mapping[str, Any]], execution: ExecutionStatus, *, generation: int, now: float
) -> tuple[ConditionStatus, ...]:
    """The pool's conditions with ``Executing`` (and the ``Ready`` summary) as ``execution`` says:
    written together with the execution's progress, not only by sync passes. The others are kept as
    the last pass wrote them (a merge patch replaces the list whole)."""
    others = [ConditionStatus.from_dict(c) for c in previous if c.get("type") not in ("Ready", "Executing")]
    executing = executing_condition(execution)
    summary = ready([*(Condition(c.type, c.status, c.reason, c.message) for c in others), executing])
    merged = merge_conditions(previous, [summary, executing], generation=generation, now=rfc3339(now))
    return (merged[0], *others, merged[1])


def cancels_stopped(execution: ExecutionStatus | None, requested: str | None) -> bool:
    """Whether a pass that runs no execution carries out the cancel request (``requested``, the
    annotation) itself: it names a plan whose execution is unfinished but not running (paused, or
    left by a process that is gone), which would otherwise resume once allowed."""
    return (
        execution is not None
        and execution.phase.resumable
        and cancel_requested(requested=requested, plan=execution.plan_id)
    )


def cancelled_event(plan: str, how: str) -> Event:
    """The Event of a cancelled plan; ``how`` follows "cancelled" (ExecutionCancelled's text)."""
    text = f"Plan {plan} cancelled {how}; it is not executed again"
    return Event("Normal", "ExecutionCancelled", sentence(text))
