"""One reconcile of a BrokerPool, pure: observed cluster + spec + previous status → status, plan, events.

The kopf handlers feed it what they read (Kafka metadata and loads, the pool, its goals, the stored
plan) and write back what it returns; it never talks to Kafka or Kubernetes and gets time as input.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.errors import InfeasibleError
from kafka_balancer.formats.plan_file import plan_document
from kafka_balancer.formats.report import report_document
from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType, default_goal_set
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.model.plan import ReassignmentPlan
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.planner.plan import GoalOutcome, Plan
from kafka_balancer.reconcile.approval import Action, Decision, decide, plan_id
from kafka_balancer.reconcile.brokers import ESTABLISHED, BrokerView, Lifecycle, WarmUpPolicy, broker_views
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.snapshot import ClusterMetadata, build_cluster


@dataclass(frozen=True, slots=True)
class Event:
    type: str  # Normal | Warning
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StoredPlan:
    """The plan in the pool's plan ConfigMap: exactly what an approval executes."""

    id: str
    reassignments: ReassignmentPlan
    bytes_to_move: int
    moves: int


@dataclass(frozen=True, slots=True)
class GoalResult:
    name: str  # the BalancerGoal's metadata.name; "" for default goals
    type: str
    hard: bool
    # The cluster as it is now (before the plan): what `kubectl get bg` should tell.
    satisfied: bool
    worst_deviation: str
    detail: str
    deviation: float  # the number behind worst_deviation


@dataclass(frozen=True, slots=True)
class LoadSource:
    """Where the loads came from: the Spark scoring job, or (scored False) the collector's passes."""

    scored: bool
    error: str | None = None  # the latest scoring run's failure, if it failed


@dataclass(frozen=True)
class UsageSource:
    """Where broker cpu and network came from at the last collector pass."""

    url: str | None  # spec.prometheus.url; None: no source configured
    brokers: int | None = None  # brokers the last answer named; None: no interval measured yet
    error: str | None = None  # why the last query failed


@dataclass(frozen=True, slots=True)
class PoolInput:
    name: str
    spec: BrokerPoolSpec
    generation: int
    status: Mapping[str, Any]
    approved: str | None
    goals: Sequence[tuple[str, BalancerGoalSpec]]
    metadata: ClusterMetadata
    loads: Mapping[tuple[str, int], PartitionLoad]
    stored: StoredPlan | None
    now: float
    load_source: LoadSource | None = None  # None: scoring is not set up (no condition)
    usage_source: UsageSource | None = None  # None: not reported (no condition)


@dataclass(frozen=True, slots=True)
class PoolOutcome:
    status: dict[str, Any]
    decision: Decision
    # A new plan to store (replacing ``stored``), with its report (before/after loads); None: keep.
    new_plan: StoredPlan | None = None
    report: dict[str, Any] | None = None
    goal_results: tuple[GoalResult, ...] = ()
    events: tuple[Event, ...] = field(default=())


# Status of a broker listed in spec.drain that was Drained and then left the cluster.
REMOVED = "Removed"


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def plan_config_map(pool: str) -> str:
    return f"{pool}-plan"


def loads_config_map(pool: str) -> str:
    return f"{pool}-loads"


def execution_config_map(pool: str) -> str:
    return f"{pool}-execution"


def executing_condition(execution: Mapping[str, Any]) -> Condition:
    """From ``status.execution`` (phase Running | Paused | Succeeded | Failed, planId, message)."""
    phase, plan, message = execution.get("phase"), execution.get("planId"), execution.get("message", "")
    if phase == "Running":
        return Condition("Executing", TRUE, "Running", f"executing plan {plan}: {message}".rstrip(": "))
    if phase == "Failed":
        return Condition("Executing", FALSE, "ExecutionFailed", f"plan {plan} failed: {message}")
    if phase == "Paused":
        return Condition("Executing", FALSE, "Paused", f"plan {plan} paused by spec.paused: {message}")
    if phase == "Succeeded":
        return Condition("Executing", FALSE, "Finished", f"plan {plan} executed and verified")
    return Condition("Executing", FALSE, "Idle", "no execution has run")


def loads_condition(source: LoadSource) -> Condition:
    """Informational: a failed scoring run leaves the pool planning on the collector's loads."""
    if source.error is not None:
        using = "the last scored loads" if source.scored else "collected loads"
        message = f"planning on {using}; the latest scoring run failed: {source.error}"
        return Condition("LoadsScored", FALSE, "ScoringFailed", message)
    if source.scored:
        return Condition("LoadsScored", TRUE, "Scored", "loads from the Spark scoring job")
    return Condition("LoadsScored", FALSE, "Collecting", "loads from the last collector passes until scored")


def usage_condition(source: UsageSource) -> Condition:
    """Informational: whether broker cpu is measured; without it cpu goals hold trivially."""
    if source.url is None:
        message = (
            "no spec.prometheus: broker cpu is not measured, partition cpu is 0 and cpu goals "
            "(CpuCapacity, CpuDistribution) hold trivially"
        )
        return Condition("CpuMeasured", FALSE, "NoSource", message)
    if source.error is not None:
        message = f"broker cpu unknown this pass, cpu goals hold trivially: {source.error}"
        return Condition("CpuMeasured", FALSE, "PrometheusFailed", message)
    if source.brokers is None:
        return Condition("CpuMeasured", FALSE, "Waiting", "measured from the second collector pass on")
    if source.brokers == 0:
        message = f"Prometheus at {source.url} answered no series naming a broker (check brokerLabel)"
        return Condition("CpuMeasured", FALSE, "NoBrokerSeries", message)
    message = f"cpu and network of {source.brokers} broker(s) from Prometheus at {source.url}"
    return Condition("CpuMeasured", TRUE, "Prometheus", message)


def goal_set_id(goals: Sequence[tuple[str, BalancerGoalSpec]]) -> str:
    """A short fingerprint of the pool's goals, recorded in status to notice that they changed."""
    canonical = json.dumps(
        sorted([name, spec.model_dump(mode="json", by_alias=True)] for name, spec in goals), sort_keys=True
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


def settled(decision: Decision, plan: str, *, goals_changed: bool) -> Decision:
    """Auto mode waits one reconcile after the goals change (or on a pool's first reconcile).

    Goals arrive through their own watch: a pool applied together with its goals can be reconciled
    before the operator has seen them all, and its plan would then serve the wrong goals.
    """
    if decision.action is Action.EXECUTE and decision.reason == "AutoApproved" and goals_changed:
        return Decision(
            Action.PLAN_ONLY,
            "GoalsChanged",
            f"the goals changed since the last reconcile: plan {plan} runs if the next one confirms it",
        )
    return decision


def goal_specs(goals: Sequence[tuple[str, BalancerGoalSpec]]) -> tuple[GoalSpec, ...]:
    """The pool's goals, or the documented default set when it has none."""
    return tuple(spec.to_goal(name) for name, spec in goals) if goals else default_goal_set()


def deviation_text(outcome: GoalOutcome) -> str:
    value = outcome.before.worst_deviation
    if GoalType(outcome.type).family is GoalFamily.RACK:
        return f"{value:.0f} partitions"
    return f"{value:.1f}%"


def _first_seen(status: Mapping[str, Any]) -> dict[int, float] | None:
    recorded = status.get("brokers")
    if recorded is None:
        return None
    # Established brokers are recorded without a firstSeen.
    return {
        int(b["id"]): parse_rfc3339(b["firstSeen"]) if "firstSeen" in b else ESTABLISHED for b in recorded
    }


def _broker_status(view: BrokerView) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": view.id, "rack": view.rack, "state": view.state.value}
    if view.first_seen != ESTABLISHED:
        doc["firstSeen"] = rfc3339(view.first_seen)
    if view.state is Lifecycle.WARMING:
        doc.update(warmUpStep=view.step, warmUpSteps=view.steps, warmUpShare=f"{view.share * 100:.0f}%")
    return doc


def _lifecycle_events(previous: Mapping[str, Any], views: Sequence[BrokerView]) -> list[Event]:
    before = {int(b["id"]): b for b in previous.get("brokers") or []}
    events = []
    for view in views:
        old = before.get(view.id, {})
        if view.state is Lifecycle.WARMING and old.get("warmUpStep") != view.step:
            events.append(
                Event(
                    "Normal",
                    "WarmUpStep",
                    f"broker {view.id} warms up: step {view.step}/{view.steps}, "
                    f"share {view.share * 100:.0f}%",
                )
            )
        if view.state is Lifecycle.DRAINED and old.get("state") != Lifecycle.DRAINED.value:
            events.append(Event("Normal", "DrainDone", f"broker {view.id} is drained: it holds no replica"))
    return events


def reconcile_pool(inp: PoolInput) -> PoolOutcome:
    """Observe, plan, decide. Never raises for a user error: that becomes a condition."""
    spec = inp.spec
    views = broker_views(
        inp.metadata.brokers,
        inp.metadata.replicas_on(),
        _first_seen(inp.status),
        spec.drain,
        WarmUpPolicy(spec.warm_up.seconds, spec.warm_up.steps, frozenset(spec.warm_up.brokers)),
        inp.now,
    )
    conditions = [Condition("KafkaReachable", TRUE, "Connected", "metadata read from the bootstrap servers")]
    if inp.load_source is not None:
        conditions.append(loads_condition(inp.load_source))
    if inp.usage_source is not None:
        conditions.append(usage_condition(inp.usage_source))
    events = _lifecycle_events(inp.status, views)
    status: dict[str, Any] = {
        "observedGeneration": inp.generation,
        "brokerCount": len(views),
        "brokers": [_broker_status(v) for v in views],
    }
    # A drained broker that has since left the cluster (the scale-down finished) is Removed, not an
    # error; a listed broker Kafka never had (a typo) blocks the drain.
    was_drained = {
        int(b["id"])
        for b in inp.status.get("brokers") or []
        if b.get("state") in (Lifecycle.DRAINED.value, REMOVED)
    }
    gone = sorted(set(spec.drain) - set(inp.metadata.brokers))
    missing = [b for b in gone if b not in was_drained]
    status["brokers"] += [{"id": b, "state": REMOVED} for b in gone if b in was_drained]
    previous_plan = dict(inp.status.get("plan") or {})
    executed = previous_plan.get("executedId")

    # Approval is judged against the STORED plan before anything is replanned: an approval executes
    # exactly the plan the user read. Auto mode executes a stored plan only to resume it; anything
    # else it replans, so it never acts on a plan made from an older view of the cluster.
    execution = inp.status.get("execution") or {}
    stored = inp.stored
    resuming = (
        stored is not None
        and execution.get("planId") == stored.id
        and execution.get("phase") in ("Running", "Paused")
    )
    if spec.mode == "Auto" and not resuming:
        stored = None
    decision = decide(
        mode=spec.mode,
        paused=spec.paused,
        stored_id=stored.id if stored else None,
        empty=stored is None or not stored.reassignments,
        approved=inp.approved,
        executed=executed,
    )
    goal_set = goal_set_id(inp.goals)
    status["goalSet"] = goal_set
    new_plan: StoredPlan | None = None
    report: dict[str, Any] | None = None
    results: tuple[GoalResult, ...] = ()
    if decision.action is Action.EXECUTE or spec.paused:
        conditions.append(Condition("SpecValid", TRUE, "Valid", "the spec is usable"))
    else:
        try:
            cluster = build_cluster(inp.metadata, views, spec.capacity, spec.excluded_topics, inp.loads)
        except re.error as err:
            conditions.append(
                Condition("SpecValid", FALSE, "InvalidExcludedTopics", f"spec.excludedTopics: {err}")
            )
            return _finish(inp, status, conditions, decision, events)
        conditions.append(Condition("SpecValid", TRUE, "Valid", "the spec is usable"))
        try:
            plan = make_plan(cluster, goal_specs(inp.goals))
        except InfeasibleError as err:
            conditions.append(Condition("PlanReady", FALSE, "Infeasible", str(err)))
            if spec.drain:
                conditions.append(Condition("DrainBlocked", TRUE, "Infeasible", f"drain blocked: {err}"))
                events.append(Event("Warning", "DrainBlocked", f"drain blocked: {err}"))
            conditions.append(Condition("Balanced", FALSE, "Infeasible", str(err)))
            return _finish(inp, status, conditions, decision, events)
        new_plan, report, results = _stored(plan, cluster, inp.goals)
        changed = inp.stored is None or new_plan.id != inp.stored.id
        if changed:
            events.append(
                Event(
                    "Normal",
                    "PlanReady",
                    f"plan {new_plan.id}: {new_plan.moves} replica move(s), {new_plan.bytes_to_move} bytes",
                )
            )
        if changed or spec.mode == "Auto":
            decision = settled(
                decide(
                    mode=spec.mode,
                    paused=spec.paused,
                    stored_id=new_plan.id,
                    empty=not new_plan.reassignments,
                    approved=inp.approved,
                    executed=executed,
                ),
                new_plan.id,
                goals_changed=inp.status.get("goalSet") != goal_set,
            )
        if not changed:
            new_plan = None
        current = new_plan or inp.stored
        assert current is not None
        conditions.append(
            Condition("PlanReady", TRUE, "Planned", f"plan {current.id}: {current.moves} replica move(s)")
        )
        balanced = not current.reassignments and all(r.satisfied for r in results)
        unmet = [r.name or r.type for r in results if not r.satisfied]
        conditions.append(
            Condition("Balanced", TRUE, "GoalsSatisfied", "every goal holds and nothing needs to move")
            if balanced
            else Condition(
                "Balanced",
                FALSE,
                "MovesPlanned",
                f"plan {current.id} moves {current.moves} replica(s)"
                + (f"; goals not met now: {', '.join(unmet)}" if unmet else ""),
            )
        )
        status["goals"] = [
            {
                "name": r.name or r.type,
                "type": r.type,
                "hard": r.hard,
                "satisfied": r.satisfied,
                "worstDeviation": r.worst_deviation,
            }
            for r in results
        ]
        if spec.drain:
            draining = [v.id for v in views if v.state is Lifecycle.DRAINING]
            conditions.append(
                Condition("DrainBlocked", FALSE, "DrainPlanned", f"drain of brokers {draining} is planned")
                if draining
                else Condition(
                    "DrainBlocked", FALSE, "Drained", f"brokers {list(spec.drain)} hold no replica"
                )
            )
    if missing:
        conditions.append(
            Condition(
                "DrainBlocked",
                TRUE,
                "UnknownBroker",
                f"spec.drain lists brokers {missing} Kafka does not know",
            )
        )
    return _finish(inp, status, conditions, decision, events, new_plan, report, results)


def _stored(
    plan: Plan, cluster: Any, goals: Sequence[tuple[str, BalancerGoalSpec]]
) -> tuple[StoredPlan, dict[str, Any], tuple[GoalResult, ...]]:
    stored = StoredPlan(
        plan_id(plan_document(plan.reassignments)),
        plan.reassignments,
        int(plan.figures.bytes_moved),
        plan.figures.replica_moves,
    )
    names = {spec.to_goal(name).label: name for name, spec in goals}
    results = tuple(
        GoalResult(
            names.get(g.label, ""),
            g.type,
            g.hard,
            g.before.satisfied,
            deviation_text(g),
            g.before.detail,
            g.before.worst_deviation,
        )
        for g in plan.goals
    )
    return stored, report_document(cluster, plan), results


def _finish(
    inp: PoolInput,
    status: dict[str, Any],
    conditions: list[Condition],
    decision: Decision,
    events: list[Event],
    new_plan: StoredPlan | None = None,
    report: dict[str, Any] | None = None,
    results: tuple[GoalResult, ...] = (),
) -> PoolOutcome:
    current = new_plan or inp.stored
    execution = dict(inp.status.get("execution") or {})
    conditions.append(executing_condition(execution))
    if current is not None:
        executed = (inp.status.get("plan") or {}).get("executedId")
        done = int(execution.get("movesDone", 0)) if execution.get("planId") == current.id else 0
        if executed == current.id:
            done = current.moves
        status["plan"] = {
            "id": current.id,
            "configMap": plan_config_map(inp.name),
            "partitions": len(current.reassignments),
            "movesTotal": current.moves,
            "movesDone": done,
            "movesRemaining": current.moves - done,
            "bytesToMove": current.bytes_to_move,
            **({"executedId": executed} if executed else {}),
        }
    if decision.action is Action.REFUSE:
        conditions.append(Condition("ApprovalValid", FALSE, decision.reason, decision.message))
        events.append(Event("Warning", "ApprovalRefused", decision.message))
    elif inp.spec.mode == "Manual":
        conditions.append(Condition("ApprovalValid", TRUE, decision.reason, decision.message))
    by_type: dict[str, Condition] = {c.type: c for c in conditions}
    ordered = [ready(list(by_type.values())), *by_type.values()]
    status["conditions"] = merge_conditions(
        inp.status.get("conditions") or [], ordered, generation=inp.generation, now=rfc3339(inp.now)
    )
    return PoolOutcome(status, decision, new_plan, report, results, tuple(events))
