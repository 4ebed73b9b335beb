"""Planning the cluster as a pass observed it: the plan to store and its report, the goals' results,
and the conditions and events of planning (ready, infeasible, balanced, drain, stranded and new
partitions); nothing is planned while spec.selfHealing's guard holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_balancer.api import BalancerGoalSpec
from kafka_balancer.errors import InfeasibleError, InputError
from kafka_balancer.formats.plan_file import plan_document
from kafka_balancer.formats.report import report_document
from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType, default_goal_set
from kafka_balancer.kube_quantity import binary_quantity
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.planner.plan import GoalOutcome, Plan
from kafka_balancer.reconcile.approval import Action, Decision, plan_id
from kafka_balancer.reconcile.brokers import BrokerView, Lifecycle
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.healing import GUARD_REASON, violated_hard_goals
from kafka_balancer.reconcile.new_partitions import Growth, grown, placement
from kafka_balancer.reconcile.plan_decision import decide_new_plan
from kafka_balancer.reconcile.pool_input import PoolInput, StoredPlan
from kafka_balancer.reconcile.snapshot import build_cluster


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
class Planned:
    """What planning added: conditions, events, the decision on the new plan, the plan itself."""

    conditions: tuple[Condition, ...]
    events: tuple[Event, ...]
    decision: Decision
    # False when the spec or infeasible goals stopped the pass before a plan was settled on.
    complete: bool = True
    planned: bool = False  # a plan was made this pass (its goals are reported)
    new_plan: StoredPlan | None = None
    report: dict[str, Any] | None = None
    results: tuple[GoalResult, ...] = ()
    growth: tuple[Growth, ...] = ()  # the topics with partitions created since the previous plan


def replan(inp: PoolInput, views: Sequence[BrokerView], decision: Decision) -> Planned:
    """Plan the cluster as it is now; a changed plan (or Auto mode) is decided on afresh."""
    try:
        cluster = build_cluster(
            inp.metadata,
            views,
            inp.spec.capacity,
            inp.spec.excluded_topics,
            inp.loads,
            inp.spec.demote,
            heal_log_dirs=inp.spec.self_healing.enabled,
        )
    except InputError as err:
        invalid = Condition("SpecValid", FALSE, "InvalidExcludedTopics", str(err))
        return Planned((invalid,), (), decision, complete=False)
    valid = Condition("SpecValid", TRUE, "Valid", "the spec is usable")
    growth = grown(inp.known_partitions, cluster.partitions)
    try:
        plan = make_plan(cluster, goal_specs(inp.goals))
    except InfeasibleError as err:
        blocked, warnings = infeasible(inp, err)
        return Planned((valid, *blocked), warnings, decision, complete=False)
    new_plan, report, results = _stored(plan, cluster, inp.goals)
    repairs = violated_hard_goals(inp, views, plan)
    if repairs is not None:
        # Only the repair runs unapproved: it is planned with the hard goals alone, so no soft goal's
        # move rides along; what the soft goals want is planned (for approval) once it is done.
        hard_only = tuple(spec for spec in goal_specs(inp.goals) if spec.hard)
        try:
            repair, report, _ = _stored(make_plan(cluster, hard_only), cluster, inp.goals)
        except InfeasibleError as err:
            blocked, warnings = infeasible(inp, err)
            return Planned((valid, *blocked), warnings, decision, complete=False)
        new_plan = replace(repair, repairs=repairs)
    changed = inp.stored is None or (new_plan.id, new_plan.repairs) != (inp.stored.id, inp.stored.repairs)
    events: tuple[Event, ...] = ()
    if changed:
        ready_message = (
            f"Plan {new_plan.id} is ready: {new_plan.moves} replica move(s) copying "
            f"{binary_quantity(new_plan.bytes_to_move)} ({new_plan.bytes_to_move} bytes)."
        )
        events = (Event("Normal", "PlanReady", ready_message),)
        if plan.stranded:
            events += (stranded_event(plan.stranded),)
    if changed or inp.spec.mode == "Auto" or new_plan.repairs is not None:
        decision = decide_new_plan(inp, new_plan)
    if growth:
        events += (new_partitions_event(growth, cluster, new_plan, decision, results),)
    current = new_plan if changed else inp.stored
    assert current is not None
    conditions = (
        valid,
        Condition("PlanReady", TRUE, "Planned", f"plan {current.id}: {current.moves} replica move(s)"),
        balanced_condition(current, results),
        *drain_conditions(inp, views),
    )
    return Planned(
        conditions, events, decision, True, True, new_plan if changed else None, report, results, growth
    )


def goal_specs(goals: Sequence[tuple[str, BalancerGoalSpec]]) -> tuple[GoalSpec, ...]:
    """The pool's goals, or the documented default set when it has none."""
    return tuple(spec.to_goal(name) for name, spec in goals) if goals else default_goal_set()


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


def deviation_text(outcome: GoalOutcome) -> str:
    value = outcome.before.worst_deviation
    if GoalType(outcome.type).family is GoalFamily.RACK:
        return f"{value:.0f} partitions"
    return f"{value:.1f}%"


def infeasible(inp: PoolInput, err: InfeasibleError) -> tuple[tuple[Condition, ...], tuple[Event, ...]]:
    """Hard goals cannot hold: nothing is planned, and a drain says it is blocked."""
    conditions = [Condition("PlanReady", FALSE, "Infeasible", str(err))]
    events: tuple[Event, ...] = ()
    if inp.spec.drain:
        conditions.append(Condition("DrainBlocked", TRUE, "Infeasible", f"drain blocked: {err}"))
        blocked = f"Drain of brokers {list(inp.spec.drain)} is blocked: {err}"
        events = (Event("Warning", "DrainBlocked", sentence(blocked)),)
    conditions.append(Condition("Balanced", FALSE, "Infeasible", str(err)))
    return tuple(conditions), events


def balanced_condition(current: StoredPlan, results: Sequence[GoalResult]) -> Condition:
    if not current.reassignments and all(r.satisfied for r in results):
        return Condition("Balanced", TRUE, "GoalsSatisfied", "every goal holds and nothing needs to move")
    unmet = [r.name or r.type for r in results if not r.satisfied]
    return Condition(
        "Balanced",
        FALSE,
        "MovesPlanned",
        f"plan {current.id} moves {current.moves} replica(s)"
        + (f"; goals not met now: {', '.join(unmet)}" if unmet else ""),
    )


def drain_conditions(inp: PoolInput, views: Sequence[BrokerView]) -> tuple[Condition, ...]:
    """With a drain: planned while a listed broker holds replicas, Drained once none does."""
    if not inp.spec.drain:
        return ()
    draining = [v.id for v in views if v.state is Lifecycle.DRAINING]
    if draining:
        return (Condition("DrainBlocked", FALSE, "DrainPlanned", f"drain of brokers {draining} is planned"),)
    return (Condition("DrainBlocked", FALSE, "Drained", f"brokers {list(inp.spec.drain)} hold no replica"),)


def stranded_event(stranded: Sequence[str]) -> Event:
    """The partitions a plan leaves as they are: no replica of theirs is readable, so a move would
    never finish."""
    shown = ", ".join(stranded[:10]) + (", ..." if len(stranded) > 10 else "")
    text = (
        f"{len(stranded)} partition(s) have no readable replica (each on a failed broker or an offline "
        f"log dir) and are left as they are, lost unless a broker or disk returns: {shown}"
    )
    return Event("Warning", "PartitionsStranded", sentence(text))


def new_partitions_event(
    growth: Sequence[Growth],
    cluster: Cluster,
    plan: StoredPlan,
    decision: Decision,
    results: Sequence[GoalResult],
) -> Event:
    """``NewPartitions``: which partitions were created since the previous plan and how this pass's
    plan places them (leadership by reordering first, then replica moves), what it moves of older
    partitions, and what happens to it."""
    placed = placement(growth, cluster.partitions, plan.reassignments)
    count = sum(g.added for g in growth)
    what = ", ".join(g.text() for g in growth)
    unmet = [r.name or r.type for r in results if not r.satisfied]
    if placed.reordered == placed.moved == 0 and unmet:
        # Moving them would not help the goals that miss (other partitions, or nothing, could).
        how = f"plan {plan.id} moves none of them (not met now, with them: {', '.join(unmet)})"
    elif placed.reordered == placed.moved == 0:
        how = f"the goals hold with them where Kafka placed them: plan {plan.id} moves none of them"
    else:
        how = (
            f"plan {plan.id} places them: {placed.reordered} by leadership alone (replicas reordered, "
            f"nothing copied), {placed.moved} by moving {placed.replica_moves} replica(s)"
        )
    also = []
    if placed.other_replica_moves:
        also.append(f"{placed.other_replica_moves} replica(s) of older partitions")
    if placed.other_reordered:
        also.append(f"the leadership alone of {placed.other_reordered} older partition(s)")
    others = f"; it also moves {' and '.join(also)}" if also else ""
    return Event(
        "Normal",
        "NewPartitions",
        sentence(
            f"{count} new partition(s) since the previous plan ({what}); {how}{others}; {decision.message}"
        ),
    )


def guarded(inp: PoolInput, guard: str) -> Planned:
    """Too many failed brokers at once: nothing is planned or moved, and the status says why."""
    message = f"{guard}: nothing is healed or moved until brokers return or the guard is raised"
    conditions = (
        Condition("SpecValid", TRUE, "Valid", "the spec is usable"),
        Condition("PlanReady", FALSE, GUARD_REASON, message),
    )
    return Planned(conditions, (), Decision(Action.NOTHING, GUARD_REASON, message), complete=False)
