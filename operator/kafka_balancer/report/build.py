"""Report data from a cluster and the same cluster after a plan: loads, counts, goal bands."""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.band import goal_band, goal_column
from kafka_balancer.goals.base import EPSILON
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.quantities import REPLICAS
from kafka_balancer.model.working import BrokerLoad, WorkingModel
from kafka_balancer.planner.plan import GoalOutcome
from kafka_balancer.report.data import (
    BandKind,
    BrokerRow,
    ClusterSummary,
    GoalBandView,
    MoveRow,
    PlanSummary,
    ReportData,
)

# How many of the plan's moves the HTML page lists: the ones a reader asks about first.
BIGGEST_MOVES = 10


def build_report(before: Cluster, after: Cluster, specs: tuple[GoalSpec, ...]) -> ReportData:
    """``after``: ``before`` with the plan applied (same brokers, same partitions in the same order)."""
    # The planner's own working model gives the load model, shares and activity exactly as it plans with them.
    state_before, state_after = WorkingModel(before), WorkingModel(after)
    loads_before, loads_after = state_before.broker_loads(), state_after.broker_loads()
    order = sorted(range(len(before.brokers)), key=lambda i: (before.brokers[i].rack, before.brokers[i].id))
    rows = tuple(
        BrokerRow(
            id=b.id,
            rack=b.rack,
            state=b.state.value,
            warm_up_share=b.warm_up_share,
            before=loads_before[i],
            after=loads_after[i],
            before_percent=_percent(loads_before[i], b.capacity),
            after_percent=_percent(loads_after[i], b.capacity),
        )
        for i in order
        for b in (before.brokers[i],)
    )
    bands = tuple(
        _band(spec, state_before, state_after, np.array(order, dtype=np.int64))
        for spec in priority_order(specs)
        if spec.type.family is not GoalFamily.RACK
        and spec.type is not GoalType.TOPIC_REPLICA_DISTRIBUTION
        and not spec.type.intra_broker
    )
    return ReportData(
        rows,
        bands,
        _summary(before, after),
        _cluster(before),
        _goals(specs, state_before, state_after),
        _biggest_moves(before, after),
    )


def _percent(
    load: BrokerLoad, capacity: tuple[float, float, float, float]
) -> tuple[float, float, float, float]:
    d, i, o, c = (100.0 * value / cap for value, cap in zip(load.loads, capacity, strict=True))
    return d, i, o, c


def _band(spec: GoalSpec, before: WorkingModel, after: WorkingModel, order: np.ndarray) -> GoalBandView:
    column = goal_column(spec.type)
    capacity = before.capacity[:, column] if column < REPLICAS else None
    # Moves keep every total (load and counts), so the band of the planned state is this one.
    band = goal_band(spec, before.quantity(column), capacity, before.share, before.active)
    unit = 100.0 / capacity if capacity is not None else np.ones(before.n_brokers)
    return GoalBandView(
        label=spec.label,
        column=column,
        kind=BandKind.CAPACITY if spec.type.family is GoalFamily.CAPACITY else BandKind.DISTRIBUTION,
        enforced=band.enforced,
        lo=tuple(float(v) for v in (band.lo * unit)[order]),
        hi=tuple(float(v) for v in (band.hi * unit)[order]),
        outside_before=int((band.violation(before.quantity(column)) > EPSILON).sum()),
        outside_after=int((band.violation(after.quantity(column)) > EPSILON).sum()),
    )


def _summary(before: Cluster, after: Cluster) -> PlanSummary:
    changed = moves = leaders = 0
    moved = 0.0
    for old, new in zip(before.partitions, after.partitions, strict=True):
        if old.replicas == new.replicas and old.leader == new.leader:
            continue
        changed += 1
        added = len(set(new.replicas) - set(old.replicas))
        moves += added
        moved += added * old.load.disk
        leaders += old.leader != new.leader
    return PlanSummary(changed, moves, leaders, moved)


def _cluster(cluster: Cluster) -> ClusterSummary:
    racks: dict[str, int] = {}
    for b in cluster.brokers:
        racks[b.rack] = racks.get(b.rack, 0) + 1
    return ClusterSummary(
        brokers=len(cluster.brokers),
        racks=tuple(sorted(racks.items())),
        partitions=len(cluster.partitions),
        topics=len({p.topic for p in cluster.partitions}),
        bytes_on_disk=sum(p.load.disk * len(p.replicas) for p in cluster.partitions),
    )


def _goals(specs: tuple[GoalSpec, ...], before: WorkingModel, after: WorkingModel) -> tuple[GoalOutcome, ...]:
    """Each goal bound to the cluster before the plan, as the planner binds it, and judged on both."""
    # The intra-broker goals are judged by the planner's log-dir pass, per log dir, not per broker.
    goals = [build_goal(spec, before) for spec in priority_order(specs) if not spec.type.intra_broker]
    return tuple(
        GoalOutcome(
            g.spec.label, g.spec.type.value, g.hard, g.spec.priority, g.status(before), g.status(after)
        )
        for g in goals
    )


def _biggest_moves(before: Cluster, after: Cluster) -> tuple[MoveRow, ...]:
    moves = [
        MoveRow(
            old.topic,
            old.partition,
            old.replicas,
            new.replicas,
            len(set(new.replicas) - set(old.replicas)) * old.load.disk,
        )
        for old, new in zip(before.partitions, after.partitions, strict=True)
        if old.replicas != new.replicas
    ]
    moves.sort(key=lambda m: (-m.bytes_moved, m.topic, m.partition))
    return tuple(moves[:BIGGEST_MOVES])
