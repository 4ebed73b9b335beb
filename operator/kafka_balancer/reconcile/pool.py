"""The decisions of one pass over a BrokerPool, pure: observed cluster + spec + previous status → status,
plan, events.

The pool service (k8s/pools.py) feeds it what it read (pool_input.py) and writes back what it
returns; it never talks to Kafka or Kubernetes and gets time as input. Each concern has its module:
observing the brokers (observed_brokers.py) and the rest of the cluster (observation.py), failures
and self-healing (healing.py), the decision on a plan (plan_decision.py), replanning
(replanning.py); this one runs them in order and assembles the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.reconcile.approval import REPAIR_REASON, Action, Decision
from kafka_balancer.reconcile.conditions import TRUE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.executing import executing_condition
from kafka_balancer.reconcile.healing import failure_conditions, failure_events
from kafka_balancer.reconcile.log_dir_failure import log_dir_conditions, log_dir_events
from kafka_balancer.reconcile.names import plan_config_map
from kafka_balancer.reconcile.new_partitions import partition_counts
from kafka_balancer.reconcile.observation import (
    cordon_conditions,
    demoted_condition,
    demotion_events,
    observation_conditions,
    reassigning_condition,
    reassigning_events,
)
from kafka_balancer.reconcile.observed_brokers import (
    ObservedBrokers,
    lifecycle_events,
    observe_brokers,
    unknown_drain_conditions,
)
from kafka_balancer.reconcile.plan_decision import (
    approval_conditions,
    executed_id,
    goal_set_id,
    judge_stored_plan,
)
from kafka_balancer.reconcile.pool_input import PoolInput, StoredPlan
from kafka_balancer.reconcile.replanning import GoalResult, Planned, guarded, replan
from kafka_balancer.reconcile.status import (
    ExecutionStatus,
    GoalStatus,
    PlanStatus,
    PoolStatus,
    rfc3339,
    worst_goal,
)


@dataclass(frozen=True, slots=True)
class PoolOutcome:
    status: PoolStatus
    decision: Decision
    # A new plan to store (replacing ``stored``), with its report (before/after loads); None: keep.
    new_plan: StoredPlan | None = None
    report: dict[str, Any] | None = None
    goal_results: tuple[GoalResult, ...] = ()
    events: tuple[Event, ...] = field(default=())
    # Each topic's partition count when this pass made a plan, for the next pass's known_partitions;
    # None: no plan was made, keep the previous counts (new partitions are told of when planned).
    partitions: Mapping[str, int] | None = None
    new_partitions: int = 0  # partitions created since the previous plan that this pass's plan places
    # When a warming broker goes a step further (epoch seconds): the next pass is due then, whatever
    # the pool's interval. None: no broker is warming.
    next_step_at: float | None = None


def decide_pool(inp: PoolInput) -> PoolOutcome:
    """Observe, plan, decide: one pass's decisions. Never raises for a user error: that becomes a
    condition."""
    brokers = observe_brokers(inp)
    decision = judge_stored_plan(inp)
    if decision.action is Action.EXECUTE or inp.spec.paused:
        # The plan that runs (or waits) is the stored one: nothing is replanned under it.
        planned = Planned((Condition("SpecValid", TRUE, "Valid", "the spec is usable"),), (), decision)
    elif brokers.guard is not None:
        planned = guarded(inp, brokers.guard)
    else:
        planned = replan(inp, brokers.views, decision)
    healing = inp.spec.self_healing.enabled
    conditions = [
        *observation_conditions(inp),
        *cordon_conditions(inp),
        *planned.conditions,
        *failure_conditions(inp, brokers),
        *log_dir_conditions(inp.metadata, healing, guarded=brokers.guard is not None),
    ]
    if planned.complete:
        conditions += unknown_drain_conditions(brokers.unknown_drained)
    demoted = demoted_condition(inp)
    events = [
        *lifecycle_events(inp.status, brokers.views),
        *failure_events(inp, brokers),
        *log_dir_events(inp.metadata, healing, inp.status),
        *planned.events,
        *demotion_events(inp, demoted),
        *reassigning_events(inp, reassigning_condition(inp.metadata)),
    ]
    if demoted is not None:
        conditions.append(demoted)
    if planned.decision.action is Action.EXECUTE and planned.decision.reason == REPAIR_REASON:
        events.append(Event("Normal", "PlanAutoApproved", sentence(planned.decision.message)))
    return finish(inp, brokers, conditions, events, planned)


def finish(
    inp: PoolInput,
    brokers: ObservedBrokers,
    conditions: list[Condition],
    events: list[Event],
    planned: Planned,
) -> PoolOutcome:
    """The status to write: plan, execution and approval conditions, and Ready over them all."""
    current = planned.new_plan or inp.stored
    execution = ExecutionStatus.from_dict(inp.status.get("execution"))
    approval, refused = approval_conditions(inp, planned.decision)
    conditions = [*conditions, executing_condition(execution), *approval]
    # A later condition of a type replaces an earlier one, in the earlier one's place.
    by_type: dict[str, Condition] = {c.type: c for c in conditions}
    ordered = [ready(list(by_type.values())), *by_type.values()]
    goals = tuple(_goal_status(r) for r in planned.results) if planned.planned else None
    status = PoolStatus(
        observed_generation=inp.generation,
        conditions=merge_conditions(
            inp.status.get("conditions") or [], ordered, generation=inp.generation, now=rfc3339(inp.now)
        ),
        broker_count=len(brokers.views),
        brokers=brokers.statuses,
        goal_set=goal_set_id(inp.goals),
        plan=None if current is None else plan_status(inp, current, execution),
        goals=goals,
        worst_goal=None if goals is None else worst_goal(goals),
        cordoned_brokers=None if inp.cordoning is None else tuple(sorted(inp.cordoning.ours)),
    )
    return PoolOutcome(
        status,
        planned.decision,
        planned.new_plan,
        planned.report,
        planned.results,
        (*events, *refused),
        partition_counts(inp.metadata) if planned.planned else None,
        sum(g.added for g in planned.growth),
        brokers.next_step_at,
    )


def plan_status(inp: PoolInput, current: StoredPlan, execution: ExecutionStatus | None) -> PlanStatus:
    """``status.plan`` of the current plan: moves done by its execution, all once it was executed."""
    executed = executed_id(inp)
    done = execution.done if execution is not None and execution.plan_id == current.id else 0
    if executed == current.id:
        done = current.moves
    return PlanStatus(
        current.id,
        plan_config_map(inp.name),
        len(current.reassignments),
        current.moves,
        done,
        current.bytes_to_move,
        executed,
    )


def _goal_status(result: GoalResult) -> GoalStatus:
    return GoalStatus(
        result.name or result.type, result.type, result.hard, result.satisfied, result.worst_deviation
    )
