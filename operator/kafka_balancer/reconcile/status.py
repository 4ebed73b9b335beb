"""The status the operator writes on its resources, typed: one place for its field names and shapes.

Status is a contract with users (``kubectl get`` printer columns, dashboards, GitOps health checks) and
with the CRDs' schemas (crds/*.yaml): ``to_dict()`` produces exactly those names. Every status write
is a merge patch, so a field left ``None`` is omitted (the apiserver keeps what was there); the
fields that must be removed explicitly (``etaSeconds`` and ``eta`` once there is none) are written as
``None``. A few fields repeat a number as text for ``kubectl get -o wide`` (``moves`` "3/12",
``dataToMove`` "1.5Gi", ``eta`` "2m10s", ``worstGoal``): printer columns can only show a field.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kafka_balancer.kube_quantity import binary_quantity


class ExecutionPhase(enum.Enum):
    """``status.execution.phase``."""

    RUNNING = "Running"
    # Halted at a batch boundary by spec.paused, mode DryRun or a Manual approval withdrawn, its
    # throttles released as its moves finished; resumes when allowed again.
    PAUSED = "Paused"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    # Stopped on request (the cancel annotation): its moves in flight cancelled, its throttles
    # removed; the plan is never executed again.
    CANCELLED = "Cancelled"

    @property
    def resumable(self) -> bool:
        """The plan's execution is unfinished: the next pass runs it on, not a new plan."""
        return self in (ExecutionPhase.RUNNING, ExecutionPhase.PAUSED)


def _present(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ExecutionProgress:
    """How far an execution is: moves by status, bytes copied of the bytes its new replicas need, and
    apart from those the bytes copied between the log dirs of one broker (disk I/O, no network)."""

    moves_done: int
    moves_in_flight: int
    moves_pending: int
    bytes_done: int
    bytes_total: int
    eta_seconds: int | None  # at the byte rate so far; None before any byte moved and once finished
    eta: str | None = None  # eta_seconds for people ("2m10s")
    dir_bytes_done: int = 0
    dir_bytes_total: int = 0
    moves_skipped: int = 0  # left alone: a topic deleted, replicas someone else changed

    def to_dict(self) -> dict[str, Any]:
        # etaSeconds and eta are written even when None: the merge patch then removes the last ETA.
        return {
            "movesDone": self.moves_done,
            "movesInFlight": self.moves_in_flight,
            "movesPending": self.moves_pending,
            "bytesDone": self.bytes_done,
            "bytesTotal": self.bytes_total,
            # Written even when 0: the merge patch then clears an earlier execution's dir bytes.
            "dirBytesDone": self.dir_bytes_done,
            "dirBytesTotal": self.dir_bytes_total,
            "etaSeconds": self.eta_seconds,
            "eta": self.eta,
            "movesSkipped": self.moves_skipped,
        }


@dataclass(frozen=True, slots=True)
class ExecutionStatus:
    """``status.execution``: the latest execution of a plan (its full state is in ``<pool>-execution``)."""

    plan_id: str
    phase: ExecutionPhase
    message: str | None = None
    progress: ExecutionProgress | None = None
    moves_done: int | None = None  # without progress: the moves recorded done
    # Why the execution waits (another pool on the cluster, its next batch's partitions' health).
    waiting: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = _present({"planId": self.plan_id, "phase": self.phase.value, "movesDone": self.moves_done})
        # Written even when None: the merge patch then removes the last wait.
        doc["waiting"] = self.waiting
        if self.progress is not None:
            doc.update(self.progress.to_dict())
        if self.message is not None:
            doc["message"] = self.message
        return doc

    @property
    def done(self) -> int:
        return self.progress.moves_done if self.progress is not None else self.moves_done or 0

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any] | None) -> ExecutionStatus | None:
        """What a previous pass wrote; None when no execution has run (or the phase is unknown)."""
        if not doc or doc.get("phase") not in {p.value for p in ExecutionPhase}:
            return None
        moves_done = doc.get("movesDone")
        return cls(
            str(doc.get("planId", "")),
            ExecutionPhase(doc["phase"]),
            str(doc.get("message", "")),
            moves_done=None if moves_done is None else int(moves_done),
        )


@dataclass(frozen=True, slots=True)
class PlanStatus:
    """``status.plan``: the pool's current plan (the whole plan is in ConfigMap ``configMap``)."""

    id: str
    config_map: str
    partitions: int
    moves_total: int
    moves_done: int
    bytes_to_move: int
    executed_id: str | None = None  # the last plan executed to the end (never executed twice)

    def to_dict(self) -> dict[str, Any]:
        return _present(
            {
                "id": self.id,
                "configMap": self.config_map,
                "partitions": self.partitions,
                "movesTotal": self.moves_total,
                "movesDone": self.moves_done,
                "movesRemaining": self.moves_total - self.moves_done,
                "moves": f"{self.moves_done}/{self.moves_total}",
                "bytesToMove": self.bytes_to_move,
                "dataToMove": binary_quantity(self.bytes_to_move),
                "executedId": self.executed_id,
            }
        )


@dataclass(frozen=True, slots=True)
class PlanProgress:
    """The part of ``status.plan`` an execution updates while it runs and when it succeeds."""

    moves_done: int
    moves_remaining: int
    executed_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _present(
            {
                "executedId": self.executed_id,
                "movesDone": self.moves_done,
                "movesRemaining": self.moves_remaining,
                "moves": f"{self.moves_done}/{self.moves_done + self.moves_remaining}",
            }
        )


@dataclass(frozen=True, slots=True)
class BrokerStatus:
    """One of ``status.brokers``; ``state`` is a value of ``reconcile.brokers.Lifecycle``."""

    id: int
    state: str
    rack: str | None = None  # None once Removed: Kafka no longer knows it
    first_seen: str | None = None  # RFC 3339; None for brokers present at the pool's first pass
    warm_up_step: int | None = None
    warm_up_steps: int | None = None
    warm_up_share: str | None = None  # "75%"
    missing_since: str | None = None  # RFC 3339; Missing and Failed only

    def to_dict(self) -> dict[str, Any]:
        return _present(
            {
                "id": self.id,
                "rack": self.rack,
                "state": self.state,
                "firstSeen": self.first_seen,
                "warmUpStep": self.warm_up_step,
                "warmUpSteps": self.warm_up_steps,
                "warmUpShare": self.warm_up_share,
                "missingSince": self.missing_since,
            }
        )


@dataclass(frozen=True, slots=True)
class GoalStatus:
    """One of ``status.goals`` of a pool: a goal as the cluster is now (before the plan)."""

    name: str
    type: str
    hard: bool
    satisfied: bool
    worst_deviation: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "hard": self.hard,
            "satisfied": self.satisfied,
            "worstDeviation": self.worst_deviation,
        }


ALL_GOALS_HOLD = "all hold"


def worst_goal(goals: tuple[GoalStatus, ...]) -> str:
    """``status.worstGoal``: the goal a person should look at first, by name and deviation. A hard goal
    not met before a soft one, then the planner's order (highest priority first); deviations are not
    compared across goals, their units differ (percent, partitions, replicas)."""
    unmet = [g for g in goals if not g.satisfied]
    if not unmet:
        return ALL_GOALS_HOLD
    worst = next((g for g in unmet if g.hard), unmet[0])
    return f"{worst.name} ({worst.worst_deviation})"


@dataclass(frozen=True, slots=True)
class ConditionStatus:
    """One of ``status.conditions``, as written (Kubernetes API conventions)."""

    type: str
    status: str  # True | False | Unknown
    reason: str
    message: str
    observed_generation: int
    last_transition_time: str  # RFC 3339; moves only when ``status`` changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "observedGeneration": self.observed_generation,
            "lastTransitionTime": self.last_transition_time,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ConditionStatus:
        """A condition as the apiserver holds it, to be written back unchanged."""
        return cls(
            str(doc["type"]),
            str(doc["status"]),
            str(doc.get("reason", "")),
            str(doc.get("message", "")),
            int(doc.get("observedGeneration", 0)),
            str(doc.get("lastTransitionTime", "")),
        )


@dataclass(frozen=True, slots=True)
class PoolStatus:
    """A BrokerPool's ``status``, or the part of it one write changes (None: not written)."""

    observed_generation: int
    conditions: tuple[ConditionStatus, ...]
    broker_count: int | None = None
    brokers: tuple[BrokerStatus, ...] | None = None
    goal_set: str | None = None
    plan: PlanStatus | None = None
    goals: tuple[GoalStatus, ...] | None = None
    worst_goal: str | None = None  # written with goals: see worst_goal()
    # The brokers the operator cordoned (KIP-1066) and has not uncordoned yet: its record of them.
    cordoned_brokers: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _present(
            {
                "cordonedBrokers": None if self.cordoned_brokers is None else list(self.cordoned_brokers),
                "observedGeneration": self.observed_generation,
                "brokerCount": self.broker_count,
                "brokers": None if self.brokers is None else [b.to_dict() for b in self.brokers],
                "goalSet": self.goal_set,
                "plan": None if self.plan is None else self.plan.to_dict(),
                "goals": None if self.goals is None else [g.to_dict() for g in self.goals],
                "worstGoal": self.worst_goal,
                "conditions": [c.to_dict() for c in self.conditions],
            }
        )

    def condition(self, type_: str) -> ConditionStatus | None:
        return next((c for c in self.conditions if c.type == type_), None)


@dataclass(frozen=True, slots=True)
class ExecutionUpdate:
    """A status write of a running (or ending) execution: ``status.execution``, maybe ``status.plan``,
    and the conditions with ``Executing`` and ``Ready`` following the execution."""

    execution: ExecutionStatus
    plan: PlanProgress | None = None
    conditions: tuple[ConditionStatus, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _present(
            {
                "execution": self.execution.to_dict(),
                "plan": None if self.plan is None else self.plan.to_dict(),
                "conditions": None if self.conditions is None else [c.to_dict() for c in self.conditions],
            }
        )


@dataclass(frozen=True, slots=True)
class BalancerGoalStatus:
    """A BalancerGoal's ``status``: whether it holds in its pool, and by how much it misses."""

    observed_generation: int
    worst_deviation: str
    conditions: tuple[ConditionStatus, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "observedGeneration": self.observed_generation,
            "worstDeviation": self.worst_deviation,
            "conditions": [c.to_dict() for c in self.conditions],
        }


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
