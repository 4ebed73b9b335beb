"""A plan is data: the diff between the original and the planned assignment, plus its figures."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kafka_balancer.goals.base import GoalStatus
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.model.working import BrokerLoad, WorkingModel
from kafka_balancer.planner.bound import BoundBands


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
    # The bands the lower bounds of ``figures`` rely on (the goals the plan met, the bands it
    # reached of the others): a benchmark judges the plan against other bounds of the same bands.
    bound_bands: BoundBands = field(default_factory=BoundBands)


def diff(state: WorkingModel) -> tuple[ReassignmentPlan, PlanFigures]:
    """Reassignments for every changed partition and the data they move."""
    changed = state.changed_partitions()
    before, after = state.original_replicas[changed], state.replicas[changed]
    held = after >= 0
    # A broker of the new list that was not in the old one receives a copy.
    added = held & (after[:, :, None] != before[:, None, :]).all(axis=2)
    removed = (before >= 0) & (before[:, :, None] != after[:, None, :]).all(axis=2)
    disk = state.disk[changed]
    # Per partition and rack, the copies it gains there beyond the replicas it loses there cross
    # racks: (row, rack) keys, +1 for each replica added, -1 for each removed, summed per key.
    n_racks = len(state.rack_names)
    rows_added, slots_added = np.nonzero(added)
    rows_removed, slots_removed = np.nonzero(removed)
    keys = np.concatenate(
        [
            rows_added * n_racks + state.rack[after[rows_added, slots_added]],
            rows_removed * n_racks + state.rack[before[rows_removed, slots_removed]],
        ]
    )
    signs = np.concatenate([np.ones(len(rows_added)), -np.ones(len(rows_removed))])
    cells, inverse = np.unique(keys, return_inverse=True)
    gained = np.maximum(np.bincount(inverse, weights=signs, minlength=len(cells)), 0.0)
    cross_rack = float(gained @ disk[cells // n_racks]) if len(cells) else 0.0
    rows = np.arange(len(changed))
    leader_changes = int(
        (before[rows, state.original_leader_slot[changed]] != after[rows, state.leader_slot[changed]]).sum()
    )
    # Broker ids leader first, the followers in their slots' order, the empty slots last.
    slot = np.arange(after.shape[1])[None, :]
    key = np.where(slot == state.leader_slot[changed][:, None], -1, np.where(held, slot, after.shape[1]))
    ordered = np.take_along_axis(after, np.argsort(key, axis=1, kind="stable"), axis=1)
    ids = np.where(ordered >= 0, state.broker_ids[ordered], -1).tolist()
    reassignments = []
    for p, rf, row in zip(changed.tolist(), state.rf[changed].tolist(), ids, strict=True):
        topic, number = state.names[p]
        reassignments.append(Reassignment(topic, number, tuple(row[:rf])))
    moves = int(added.sum())
    figures = PlanFigures(moves, leader_changes, float(added.sum(axis=1) @ disk), 0.0, cross_rack)
    return ReassignmentPlan(tuple(reassignments)), figures
