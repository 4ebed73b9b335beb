"""A plan is data: the diff between the original and the planned assignment, plus its figures."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_balancer.goals.base import GoalStatus
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.model.working import BrokerLoad, WorkingModel


@dataclass(frozen=True, slots=True)
class GoalOutcome:
    label: str
    type: str
    hard: bool
    priority: int
    before: GoalStatus
    after: GoalStatus


@dataclass(frozen=True, slots=True)
class PlanFigures:
    replica_moves: int
    leader_changes: int
    bytes_moved: float
    bytes_moved_lower_bound: float
    cross_rack_bytes: float
    # Copied between the log dirs of one broker: disk I/O, not network (not in ``bytes_moved``).
    intra_broker_bytes: float = 0.0
    # The least cross-rack bytes of any plan meeting the bands this one met (planner/bound.py).
    cross_rack_lower_bound: float = 0.0
    # The least bytes moved plus cross-rack bytes of any plan meeting those bands: what a plan
    # that keeps every replica in its rack moves at the least (planner/bound.py, fact 6).
    rack_local_lower_bound: float = 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """The planner's answer: the reassignments (what is executed) and what it predicts of them."""

    reassignments: ReassignmentPlan
    figures: PlanFigures
    goals: tuple[GoalOutcome, ...]
    brokers_before: tuple[BrokerLoad, ...]
    brokers_after: tuple[BrokerLoad, ...]
    seconds: float
    # Partitions a demoted broker still leads after the plan: every replica of theirs is demoted.
    led_by_demoted: tuple[str, ...] = ()
    # Partitions with no readable replica (on failed brokers or offline log dirs): left as they
    # are, since a reassignment copies from a readable replica and would never finish.
    stranded: tuple[str, ...] = ()


def diff(state: WorkingModel) -> tuple[ReassignmentPlan, PlanFigures]:
    """Reassignments for every changed partition and the data they move."""
    changed = state.changed_partitions()
    reassignments = []
    moves = 0
    bytes_moved = 0.0
    cross_rack = 0.0
    leader_changes = 0
    for p in changed:
        p = int(p)
        topic, number = state.names[p]
        reassignments.append(Reassignment(topic, number, tuple(state.assignment(p))))
        before = [int(b) for b in state.original_replicas[p, : state.rf[p]]]
        after = [int(b) for b in state.replicas[p, : state.rf[p]]]
        added = [b for b in after if b not in before]
        removed_racks = [int(state.rack[b]) for b in before if b not in after]
        moves += len(added)
        bytes_moved += len(added) * float(state.disk[p])
        for b in added:
            if int(state.rack[b]) in removed_racks:
                removed_racks.remove(int(state.rack[b]))
            else:
                cross_rack += float(state.disk[p])
        if (
            state.original_replicas[p, state.original_leader_slot[p]]
            != state.replicas[p, state.leader_slot[p]]
        ):
            leader_changes += 1
    figures = PlanFigures(moves, leader_changes, bytes_moved, 0.0, cross_rack)
    return ReassignmentPlan(tuple(reassignments)), figures
