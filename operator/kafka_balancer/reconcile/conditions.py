"""Kubernetes API conventions for ``status.conditions``: a transition time that moves only on change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_balancer.reconcile.status import ConditionStatus

TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition as a pass finds it; :func:`merge_conditions` dates it into a :class:`ConditionStatus`."""

    type: str
    status: str
    reason: str
    message: str


def merge_conditions(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Condition], *, generation: int, now: str
) -> tuple[ConditionStatus, ...]:
    """The conditions to write: ``lastTransitionTime`` is kept unless the status changed.
    ``previous``: the conditions as the apiserver holds them."""
    before = {c.get("type"): c for c in previous}
    merged = []
    for cond in current:
        old = before.get(cond.type)
        changed = old is None or old.get("status") != cond.status
        merged.append(
            ConditionStatus(
                cond.type,
                cond.status,
                cond.reason,
                cond.message,
                generation,
                now if changed or old is None else str(old.get("lastTransitionTime", now)),
            )
        )
    return tuple(merged)


# Conditions whose False means the pool is not under control (Balanced=False is just work to do).
_REQUIRED = ("SpecValid", "KafkaReachable", "PlanReady", "ApprovalValid", "ConfigMapsOwned")


def ready(conditions: Sequence[Condition]) -> Condition:
    """The summary condition: the first problem found, or Ready."""
    for cond in conditions:
        if (
            (cond.type in _REQUIRED and cond.status == FALSE)
            or (cond.type == "DrainBlocked" and cond.status == TRUE)
            or (cond.type == "Executing" and cond.reason == "ExecutionFailed")
        ):
            return Condition("Ready", FALSE, cond.reason, cond.message)
    return Condition("Ready", TRUE, "Reconciled", "the pool is observed, planned and under control")
