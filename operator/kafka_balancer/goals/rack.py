"""RackAware: no rack holds more than ceil(RF / number of racks) replicas of a partition."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.base import Goal, GoalStatus
from kafka_balancer.goals.spec import GoalSpec
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.candidates import NO_BROKER
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from kafka_balancer.goals.port import SearchPort
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.working import WorkingModel


def rack_counts(state: WorkingModel, parts: IntArray) -> IntArray:
    """``[K, racks]``: replicas of each partition per rack."""
    return state.rack_count[parts]


class RackAwareGoal(Goal):
    per_partition = True

    def __init__(self, spec: GoalSpec, state: WorkingModel) -> None:
        super().__init__(spec)

    def excess(self, state: WorkingModel, parts: IntArray) -> IntArray:
        over = rack_counts(state, parts) - state.rack_limit[parts][:, None]
        return np.asarray(np.maximum(over, 0).sum(axis=1), dtype=np.int64)

    def evaluate(
        self, state: WorkingModel, cands: Candidates, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        k = len(cands)
        rows = np.arange(k)
        counts = rack_counts(state, cands.part)
        limit = state.rack_limit[cands.part]
        src_rack = state.rack[cands.src]
        # Per rack first ([K, racks]), then spread to brokers with one gather: a rack the
        # partition already fills gets worse, leaving an over-full rack gets better; within the
        # source's rack, and for a leader change, nothing changes.
        change = (counts >= limit[:, None]).astype(np.float64) - (counts[rows, src_rack] > limit)[:, None]
        change[rows, src_rack] = 0.0
        change[cands.dst != NO_BROKER] = 0.0
        return np.zeros(k), change[:, state.rack]

    def kept(self, state: WorkingModel, cands: Candidates, tolerance: float) -> BoolArray:
        # evaluate's changes are whole numbers and the source's is 0, so for a tolerance below
        # 1 "no worse" is "not into a rack the partition already fills, unless it leaves an
        # over-full one": the same answer without the arithmetic, as every search's hard veto.
        rows = np.arange(len(cands))
        counts = rack_counts(state, cands.part)
        limit = state.rack_limit[cands.part]
        src_rack = state.rack[cands.src]
        ok = (counts < limit[:, None]) | (counts[rows, src_rack] > limit)[:, None]
        ok[rows, src_rack] = True
        ok[cands.dst != NO_BROKER] = True
        return np.asarray(ok[:, state.rack], dtype=bool)

    def kept_at(self, state: WorkingModel, cands: Candidates, dest: int, tolerance: float) -> BoolArray:
        rows = np.arange(len(cands))
        counts = rack_counts(state, cands.part)
        limit = state.rack_limit[cands.part]
        src_rack = state.rack[cands.src]
        rack = int(state.rack[dest])
        ok = (counts[:, rack] < limit) | (counts[rows, src_rack] > limit) | (src_rack == rack)
        return np.asarray(ok | (cands.dst != NO_BROKER), dtype=bool)

    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        # Two different partitions: their rack changes add up.
        gives, takes = self._change_at(state, give, y), self._change_at(state, take, x)
        return np.zeros((len(give), len(take))), gives[:, None] + takes[None, :]

    def _change_at(self, state: WorkingModel, cands: Candidates, broker: int) -> FloatArray:
        """``[K]``: ``evaluate``'s change at the destination, column ``broker`` alone (a
        partner's replicas are thousands on a large cluster, its brokers hundreds)."""
        rows = np.arange(len(cands))
        counts = rack_counts(state, cands.part)
        limit = state.rack_limit[cands.part]
        src_rack = state.rack[cands.src]
        rack = int(state.rack[broker])
        change = (counts[:, rack] >= limit).astype(np.float64) - (counts[rows, src_rack] > limit)
        change[(src_rack == rack) | (cands.dst != NO_BROKER)] = 0.0
        return np.asarray(change, dtype=np.float64)

    def violating(self, state: WorkingModel) -> IntArray:
        """Partitions to fix; an excluded topic's (not movable) are left as they are."""
        parts = np.arange(len(state.rf))
        return np.nonzero((self.excess(state, parts) > 0) & state.movable)[0]

    def violation(self, state: WorkingModel) -> float:
        return float(self.excess(state, np.arange(len(state.rf)))[state.movable].sum())

    def status(self, state: WorkingModel) -> GoalStatus:
        bad = self.violating(state)
        if len(bad) == 0:
            return GoalStatus(True, 0.0, "")
        p = int(bad[0])
        topic, part = state.names[p]
        racks = [state.rack_names[state.rack[b]] for b in state.replicas[p, : state.rf[p]]]
        return GoalStatus(
            False,
            float(len(bad)),
            f"{len(bad)} partition(s) break rack awareness, e.g. {topic}-{part} with replicas in racks "
            f"{racks} (at most {int(state.rack_limit[p])} per rack)",
        )

    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        for p in self.violating(state):
            parts = np.array([p], dtype=np.int64)
            while self.excess(state, parts)[0] > 0:
                counts = rack_counts(state, parts)[0]
                row = state.replicas[p, : state.rf[p]]
                crowded = counts[state.rack[row]] > state.rack_limit[p]
                # Move followers before the leader, so leadership stays where it is.
                order = sorted(
                    (int(s) for s in np.nonzero(crowded)[0]), key=lambda s: (s == state.leader_slot[p], s)
                )
                cands = [replica_moves(state, int(row[s]), parts) for s in order]
                cands = [c for c in cands if len(c)]
                if not cands or search.place(self, type(cands[0]).concat(cands)) is None:
                    break
