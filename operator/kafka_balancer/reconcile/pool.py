"""The decisions of one pass over a BrokerPool, pure: observed cluster + spec + previous status → status,
plan, events.

The pool service (k8s/pools.py) feeds it what it read (Kafka metadata and loads, the pool, its goals,
the stored plan) and writes back what it returns; it never talks to Kafka or Kubernetes and gets time
as input.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.errors import InfeasibleError, InputError
from kafka_balancer.formats.plan_file import plan_document
from kafka_balancer.formats.report import report_document
from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType, default_goal_set
from kafka_balancer.kube_quantity import binary_quantity
from kafka_balancer.model.cluster import Cluster, PartitionLoad
from kafka_balancer.model.plan import ReassignmentPlan
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.planner.plan import GoalOutcome, Plan
from kafka_balancer.reconcile.approval import (
    HEALS,
    REPAIR_REASON,
    Action,
    Decision,
    decide,
    plan_id,
    repair_opted_in,
)
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
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.log_dir_failure import failed_disks, log_dir_conditions, log_dir_events
from kafka_balancer.reconcile.log_dir_failure import repairs as log_dir_repairs
from kafka_balancer.reconcile.new_partitions import Growth, grown, partition_counts, placement
from kafka_balancer.reconcile.snapshot import ClusterMetadata, build_cluster
from kafka_balancer.reconcile.status import (
    BrokerStatus,
    ConditionStatus,
    ExecutionPhase,
    ExecutionStatus,
    GoalStatus,
    PlanStatus,
    PoolStatus,
    worst_goal,
)

# The Reassigning condition names this many of the partitions being reassigned.
SHOWN_REASSIGNING = 5


@dataclass(frozen=True, slots=True)
class StoredPlan:
    """The plan in the pool's plan ConfigMap: exactly what an approval executes."""

    id: str
    reassignments: ReassignmentPlan
    bytes_to_move: int
    moves: int
    # The violated hard goals it repairs, when it was planned with the hard goals alone to run without
    # approval (spec.selfHealing.repairHardGoals); None for a plan made with every goal.
    repairs: str | None = None


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
    engine: str | None = None  # where the scored loads were computed


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
    # Each topic's partition count at the last pass that made a plan (PoolOutcome.partitions); None:
    # no such pass since the operator started, so no partition counts as new.
    known_partitions: Mapping[str, int] | None = None
    # None: the pass had nothing to cordon or uncordon (no drain, nothing on record).
    cordoning: Cordoning | None = None


@dataclass(frozen=True, slots=True)
class Cordoning:
    """What cordoning the pool's drained brokers came to this pass (KIP-1066; done by k8s/ through
    the kafka layer before the pass decides)."""

    ours: frozenset[int]  # the brokers the operator holds cordoned: status.cordonedBrokers
    supported: bool = True  # False: Kafka older than 4.3, nothing cordoned
    error: str | None = None  # Kafka refused or did not answer; tried again next pass


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


def loads_condition(source: LoadSource) -> Condition:
    """Informational: a failed scoring run leaves the pool planning on the collector's loads."""
    if source.error is not None:
        using = "the last scored loads" if source.scored else "collected loads"
        message = f"planning on {using}; the latest scoring run failed: {source.error}"
        return Condition("LoadsScored", FALSE, "ScoringFailed", message)
    if source.scored:
        where = f" ({source.engine})" if source.engine else ""
        return Condition("LoadsScored", TRUE, "Scored", f"loads from the Spark scoring job{where}")
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


@dataclass(frozen=True, slots=True)
class _Brokers:
    """The pool's brokers this pass, and the drain ids Kafka never had."""

    views: tuple[BrokerView, ...]
    statuses: tuple[BrokerStatus, ...]
    unknown_drained: tuple[int, ...]
    # Why the failed brokers are too many to heal (spec.selfHealing's guard); None: within it.
    guard: str | None = None


@dataclass(frozen=True, slots=True)
class _Planned:
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


def decide_pool(inp: PoolInput) -> PoolOutcome:
    """Observe, plan, decide: one pass's decisions. Never raises for a user error: that becomes a
    condition."""
    brokers = observe_brokers(inp)
    decision = judge_stored_plan(inp)
    if decision.action is Action.EXECUTE or inp.spec.paused:
        # The plan that runs (or waits) is the stored one: nothing is replanned under it.
        planned = _Planned((Condition("SpecValid", TRUE, "Valid", "the spec is usable"),), (), decision)
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
        *_lifecycle_events(inp.status, brokers.views),
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


def observe_brokers(inp: PoolInput) -> _Brokers:
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
    present = broker_views(
        present_racks,
        inp.metadata.replicas_on(),
        first_seen,
        spec.drain,
        WarmUpPolicy(spec.warm_up.seconds, spec.warm_up.steps, frozenset(spec.warm_up.brokers)),
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
    return _Brokers(
        views,
        (*(_broker_status(v) for v in views), *removed),
        tuple(b for b in left if b not in was_drained),
        guard_exceeded(views, policy, failed_disks(inp.metadata) if healing.enabled else ()),
    )


def cordon_conditions(inp: PoolInput) -> list[Condition]:
    """``Cordoned``, while the pool drains or holds brokers cordoned: which, or why none."""
    cordoning = inp.cordoning
    if cordoning is None:
        return []
    draining = ", ".join(map(str, sorted(inp.spec.drain))) or "none"
    if cordoning.error is not None:
        message = (
            f"cordoning the drained brokers ({draining}) failed, tried again next pass: {cordoning.error}"
        )
        return [Condition("Cordoned", FALSE, "CordonFailed", message)]
    if not cordoning.supported:
        message = (
            "cordoning needs Kafka 4.3 or later (KIP-1066): a partition created during the drain may get "
            f"replicas on the drained brokers ({draining})"
        )
        return [Condition("Cordoned", FALSE, "Unsupported", message)]
    if not cordoning.ours:
        return []
    held = ", ".join(map(str, sorted(cordoning.ours)))
    message = (
        f"broker(s) {held} cordoned (cordoned.log.dirs=*): a partition created meanwhile gets no replica "
        "on them; uncordoned when the drain is withdrawn"
    )
    return [Condition("Cordoned", TRUE, "Cordoned", message)]


def observation_conditions(inp: PoolInput) -> list[Condition]:
    """Kafka answered; where the loads and the broker cpu came from, and what other tools are
    reassigning (informational)."""
    conditions = [Condition("KafkaReachable", TRUE, "Connected", "metadata read from the bootstrap servers")]
    if inp.load_source is not None:
        conditions.append(loads_condition(inp.load_source))
    if inp.usage_source is not None:
        conditions.append(usage_condition(inp.usage_source))
    reassigning = reassigning_condition(inp.metadata)
    if reassigning is not None:
        conditions.append(reassigning)
    return conditions


def reassigning_condition(metadata: ClusterMetadata) -> Condition | None:
    """``Reassigning``, while partitions are being reassigned (by anyone: another tool, a person,
    an execution of this operator's): they are planned where they are going and left out of the
    plan until it ends, and an execution waits for those it did not start."""
    moving = sorted(f"{p.topic}-{p.partition}" for p in metadata.partitions if p.reassigning)
    if not moving:
        return None
    shown = ", ".join(moving[:SHOWN_REASSIGNING]) + (" …" if len(moving) > SHOWN_REASSIGNING else "")
    message = (
        f"{len(moving)} partition(s) being reassigned ({shown}): left out of the plan until their "
        "reassignment ends"
    )
    return Condition("Reassigning", TRUE, "InFlight", message)


def reassigning_events(inp: PoolInput, condition: Condition | None) -> list[Event]:
    """An Event when reassignments appear (not at every pass while they run)."""
    before = next((c for c in inp.status.get("conditions") or [] if c.get("type") == "Reassigning"), None)
    if condition is None or before is not None:
        return []
    return [Event("Normal", "ReassignmentsInFlight", sentence(condition.message))]


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
        executed=_executed_id(inp),
        repairs=repairs,
    )


def repairs_unapproved(spec: BrokerPoolSpec) -> bool:
    """Mode Manual with an opt-in: a plan that heals failed brokers (spec.selfHealing.enabled) or
    repairs hard goals (spec.selfHealing.repairHardGoals) runs without approval."""
    healing = spec.self_healing
    return spec.mode == "Manual" and (healing.repair_hard_goals or healing.enabled)


def replan(inp: PoolInput, views: Sequence[BrokerView], decision: Decision) -> _Planned:
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
        return _Planned((invalid,), (), decision, complete=False)
    valid = Condition("SpecValid", TRUE, "Valid", "the spec is usable")
    growth = grown(inp.known_partitions, cluster.partitions)
    try:
        plan = make_plan(cluster, goal_specs(inp.goals))
    except InfeasibleError as err:
        blocked, warnings = infeasible(inp, err)
        return _Planned((valid, *blocked), warnings, decision, complete=False)
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
            return _Planned((valid, *blocked), warnings, decision, complete=False)
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
    return _Planned(
        conditions, events, decision, True, True, new_plan if changed else None, report, results, growth
    )


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


def decide_new_plan(inp: PoolInput, new_plan: StoredPlan) -> Decision:
    """The mode and approval applied to a plan just made (Auto and repairs wait for goals to settle)."""
    return settled(
        decide(
            mode=inp.spec.mode,
            paused=inp.spec.paused,
            stored_id=new_plan.id,
            empty=not new_plan.reassignments,
            approved=inp.approved,
            executed=_executed_id(inp),
            repairs=new_plan.repairs,
        ),
        new_plan.id,
        goals_changed=inp.status.get("goalSet") != goal_set_id(inp.goals),
    )


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


def demoted_condition(inp: PoolInput) -> Condition | None:
    """With ``spec.demote``: how many partitions the demoted brokers still lead, from Kafka's metadata.

    True once they lead none; ``AllReplicasDemoted`` when the only ones left have every replica on
    a demoted broker (no other replica can lead them, and demotion never copies data)."""
    if not inp.spec.demote:
        return None
    demoted = sorted(set(inp.spec.demote))
    listed = set(demoted)
    led = {b: 0 for b in demoted}
    stuck = []
    for p in inp.metadata.partitions:
        if p.leader in listed:
            led[p.leader] += 1
            if set(p.replicas) <= listed:
                stuck.append(f"{p.topic}-{p.partition}")
    unknown = [b for b in demoted if b not in inp.metadata.brokers]
    also = f"; not in the cluster: {unknown}" if unknown else ""
    held = sum(led.values())
    if held == 0:
        return Condition("Demoted", TRUE, "LeadershipMoved", f"brokers {demoted} lead no partition{also}")
    counts = ", ".join(f"broker {b} leads {n}" for b, n in led.items() if n)
    if len(stuck) == held:
        shown = ", ".join(stuck[:5]) + (", ..." if len(stuck) > 5 else "")
        message = (
            f"brokers {demoted} still lead {held} partition(s) ({counts}) whose replicas are all "
            f"demoted: {shown}{also}"
        )
        return Condition("Demoted", FALSE, "AllReplicasDemoted", message)
    message = f"brokers {demoted} still lead {held} partition(s) ({counts}); leadership is being moved{also}"
    return Condition("Demoted", FALSE, "MovingLeadership", message)


def demotion_events(inp: PoolInput, demoted: Condition | None) -> list[Event]:
    """An event when a demotion completes (the condition turns True)."""
    if demoted is None or demoted.status != TRUE:
        return []
    before = next((c for c in inp.status.get("conditions") or [] if c.get("type") == "Demoted"), None)
    if before is not None and before.get("status") == TRUE and before.get("message") == demoted.message:
        return []
    return [Event("Normal", "DemotionDone", demoted.message)]


# Condition BrokerFailure and PlanReady's reason when spec.selfHealing's guard holds healing back.
GUARD_REASON = "TooManyFailedBrokers"


def guarded(inp: PoolInput, guard: str) -> _Planned:
    """Too many failed brokers at once: nothing is planned or moved, and the status says why."""
    message = f"{guard}: nothing is healed or moved until brokers return or the guard is raised"
    conditions = (
        Condition("SpecValid", TRUE, "Valid", "the spec is usable"),
        Condition("PlanReady", FALSE, GUARD_REASON, message),
    )
    return _Planned(conditions, (), Decision(Action.NOTHING, GUARD_REASON, message), complete=False)


def failure_conditions(inp: PoolInput, brokers: _Brokers) -> list[Condition]:
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


def failure_events(inp: PoolInput, brokers: _Brokers) -> list[Event]:
    """A broker gone missing, failed, back (in time or late), or healed (failed, and no replica left
    on it); the guard holding healing back."""
    before = {int(b["id"]): b.get("state") for b in inp.status.get("brokers") or []}
    timeout = inp.spec.self_healing.broker_failure_seconds
    now = {v.id: v for v in brokers.views}
    events = []
    for v in brokers.views:
        was = before.get(v.id)
        if v.state is Lifecycle.MISSING and was != Lifecycle.MISSING.value:
            text = f"Broker {v.id} (rack {v.rack or 'none'}) is missing from the cluster"
            if inp.spec.self_healing.enabled:
                text += f"; it is failed and its replicas re-homed if it is still missing in {timeout} s"
            events.append(Event("Warning", "BrokerMissing", sentence(text)))
        if v.state is Lifecycle.FAILED and was != Lifecycle.FAILED.value:
            text = (
                f"Broker {v.id} (rack {v.rack or 'none'}) has been missing for {timeout} s or more: it is "
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


def unknown_drain_conditions(unknown: Sequence[int]) -> list[Condition]:
    if not unknown:
        return []
    message = f"spec.drain lists brokers {list(unknown)} Kafka does not know"
    return [Condition("DrainBlocked", TRUE, "UnknownBroker", message)]


def _executed_id(inp: PoolInput) -> str | None:
    executed = (inp.status.get("plan") or {}).get("executedId")
    return str(executed) if executed else None


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


def plan_status(inp: PoolInput, current: StoredPlan, execution: ExecutionStatus | None) -> PlanStatus:
    """``status.plan`` of the current plan: moves done by its execution, all once it was executed."""
    executed = _executed_id(inp)
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


def approval_conditions(inp: PoolInput, decision: Decision) -> tuple[list[Condition], list[Event]]:
    """Manual mode says whether the approval annotation is usable; a stale one is also an event."""
    if decision.action is Action.REFUSE:
        return [Condition("ApprovalValid", FALSE, decision.reason, decision.message)], [
            Event("Warning", "ApprovalRefused", sentence(f"Approval refused: {decision.message}"))
        ]
    if inp.spec.mode == "Manual":
        return [Condition("ApprovalValid", TRUE, decision.reason, decision.message)], []
    return [], []


def finish(
    inp: PoolInput,
    brokers: _Brokers,
    conditions: list[Condition],
    events: list[Event],
    planned: _Planned,
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
    )
