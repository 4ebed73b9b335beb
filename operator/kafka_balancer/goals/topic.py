"""TopicReplicaDistribution: each topic's replicas spread over brokers like the whole cluster's.

This module is the goal's measure: each topic × broker cell's band (the contract) and where the
planner aims it (the aim, narrower where a rack cannot meet the contract), how far the cells are
outside them, and what a move or an exchange changes of that. How the goal moves replicas to
bring its cells into their bands is its tactics, in ``topic_tactics``. docs/how-a-plan-is-made.md
names the terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals import topic_tactics
from kafka_balancer.goals.base import EPSILON, Goal, GoalStatus
from kafka_balancer.goals.spec import GoalSpec
from kafka_balancer.model import math
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import REPLICAS
from kafka_balancer.model.rack_totals import topic_rack_totals

if TYPE_CHECKING:
    from kafka_balancer.goals.port import SearchPort
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.working import WorkingModel


def _arrival(q: IntArray, lo: FloatArray, hi: FloatArray, scale: FloatArray) -> FloatArray:
    """A replica arriving at cells of counts ``q``: +1 at or past the top, −1 below the bottom,
    each ÷ its scale."""
    return np.asarray(((q >= hi).astype(np.float64) - (q < lo)) / scale, dtype=np.float64)


class TopicReplicaDistributionGoal(Goal):
    def __init__(self, spec: GoalSpec, state: WorkingModel, racks_held: bool = False) -> None:
        """``racks_held``: RackAware is hard or optimised before this goal, so no move breaks it."""
        super().__init__(spec)
        self.range = spec.range_percent / 100.0
        share = state.share
        self.fraction = share / share.sum() if share.sum() > 0 else share
        expected = state.topic_total[:, None] * self.fraction[None, :]
        # The contract (status, reports, the bytes-moved bound) ...
        self.lo, self.hi = math.count_bounds(expected, self.range)
        self.expected = expected
        # ... and where the optimizer aims: the contract, but for the cells of a topic in a rack
        # that cannot meet it (``short``, [T, racks]), the rack's own share of that topic.
        self.rack_totals = topic_rack_totals(state) if racks_held else None
        self.aim_lo, self.aim_hi = self.lo, self.hi
        self.short = np.zeros((state.n_topics, len(state.rack_names)), dtype=bool)
        if self.rack_totals is not None:
            self._aim_within_racks(state, self.rack_totals)
        self.scale = np.maximum(expected, 1.0)
        # Each broker's rack, −1 for an inactive one, and [T, racks] the sum of each topic's aimed
        # tops over each rack's active brokers; None with one rack. Summed rack by rack, not by a
        # matrix product: BLAS threads spinning after each product slowed the rounds of sheds on
        # large clusters.
        self.live_rack: IntArray | None = None
        self.rack_hi: FloatArray = np.zeros((0, 0))
        if state.n_racks >= 2:
            self.live_rack = np.where(state.active, state.rack, -1)
            self.rack_hi = np.stack(
                [
                    np.where(self.live_rack == r, self.aim_hi, 0.0).sum(axis=1)
                    for r in range(len(state.rack_names))
                ],
                axis=1,
            )
        # An excluded topic (no movable partition) is left as it is, not counted as a violation.
        self.judged = np.zeros(state.n_topics, dtype=bool)
        self.judged[state.topic[state.movable]] = True
        # ``_arrivals``, and the state version it is of (None: not yet built).
        self._arrival: FloatArray = np.zeros((0, 0))
        self._arrival_key: int | None = None
        # Whether an exchange that evens out two of a broker's cells outside their bands counts
        # as a gain (the tactics' last phase only, ``topic_tactics.optimize``).
        self.evening = False

    def _aim_within_racks(self, state: WorkingModel, totals: FloatArray) -> None:
        """Aim each topic's cells in a rack whose total of that topic (which no plan that meets
        RackAware changes) lies outside the sum of their bands at that total split by the brokers'
        shares, floor .. ceil: the split with the least worst deviation the rack allows."""
        self.aim_lo, self.aim_hi = self.lo.copy(), self.hi.copy()
        for rack in range(len(state.rack_names)):
            members = (state.rack == rack) & (self.fraction > 0)
            expected = self.expected[:, members].sum(axis=1)
            least, most = self.lo[:, members].sum(axis=1), self.hi[:, members].sum(axis=1)
            short = (expected > 0) & ((totals[:, rack] < least) | (totals[:, rack] > most))
            if not short.any():
                continue
            cells = np.ix_(short, members)
            split = self.expected[cells] * (totals[short, rack] / expected[short])[:, None]
            self.aim_lo[cells], self.aim_hi[cells] = math.count_bounds(split, 0.0)
            self.short[short, rack] = True

    def _arrivals(self, state: WorkingModel) -> FloatArray:
        """``[T, B]``: how far further outside its band (÷ its scale) each cell gets when a
        replica arrives, kept up to date from the actions since it was built (two cells each)
        instead of gathered from four ``[T, B]`` arrays for every candidate batch."""
        if self._arrival_key != state.journal.version:
            changes = state.journal.changes_since(self._arrival_key)
            if changes is None:
                self._arrival = _arrival(state.topic_count, self.aim_lo, self.aim_hi, self.scale)
            else:
                # Two cells an action, as Python numbers: gathering them as arrays cost far
                # more, and the arithmetic is _arrival's to the bit.
                count, lo, hi, scale = state.topic_count, self.aim_lo, self.aim_hi, self.scale
                for p, src, dst in changes:
                    t = int(state.topic[p])
                    for b in (src, dst):
                        q = count[t, b]
                        self._arrival[t, b] = (float(q >= hi[t, b]) - float(q < lo[t, b])) / scale[t, b]
            self._arrival_key = state.journal.version
        return self._arrival

    def on(self, state: WorkingModel, t: int, broker: int) -> IntArray:
        """Partitions of topic ``t`` with a replica on ``broker``."""
        parts = state.parts_of_topic[t]
        return np.asarray(parts[(state.replicas[parts] == broker).any(axis=1)], dtype=np.int64)

    def per_cell(self, state: WorkingModel) -> FloatArray:
        """``[T, B]``: each judged cell's distance outside its aimed band (÷ its scale)."""
        return self._outside(state, self.aim_lo, self.aim_hi)

    def contract_cells(self, state: WorkingModel) -> FloatArray:
        """``[T, B]``: each judged cell's distance outside the contract's band (÷ its scale)."""
        return self._outside(state, self.lo, self.hi)

    def _outside(self, state: WorkingModel, lo: FloatArray, hi: FloatArray) -> FloatArray:
        outside = math.outside_band(state.topic_count, lo, hi) / self.scale
        return np.asarray(np.where(self.judged[:, None], outside, 0.0), dtype=np.float64)

    def evaluate(
        self, state: WorkingModel, cands: Candidates, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        t = state.topic[cands.part]
        d = cands.delta[:, REPLICAS]
        return self._leaving(state, cands, t, d), d[:, None] * self._arrivals(state)[t]

    def kept_at(self, state: WorkingModel, cands: Candidates, dest: int, tolerance: float) -> BoolArray:
        t = state.topic[cands.part]
        d = cands.delta[:, REPLICAS]
        at_dest = d * self._arrivals(state)[t, dest]
        kept = (self._leaving(state, cands, t, d) <= tolerance) & (at_dest <= tolerance)
        return np.asarray(kept, dtype=bool)

    def _leaving(self, state: WorkingModel, cands: Candidates, t: IntArray, d: FloatArray) -> FloatArray:
        """``[K]``: the change at each candidate's source."""
        src = cands.src
        # Counts and band edges are whole numbers and a candidate moves one replica (d = 1) or
        # none (a leader change, d = 0), so a cell's distance outside its band changes by d when
        # it is at or past its top and by −d when it is below its bottom. With d 0 or 1,
        # d × (step ÷ scale) is (d × step) ÷ scale to the bit, signed zeros included.
        at_src = state.topic_count[t, src]
        src_change = d * ((at_src <= self.aim_lo[t, src]).astype(np.float64) - (at_src > self.aim_hi[t, src]))
        return np.asarray(src_change / self.scale[t, src], dtype=np.float64)

    def _cell_change(self, state: WorkingModel, topics: IntArray, broker: int, step: float) -> FloatArray:
        """How the cells of ``topics`` on ``broker`` change when a replica of each arrives (step
        1) or leaves (−1): their distance outside the band, or in the tactics' last phase its
        square, ÷ its scale."""
        q = state.topic_count[topics, broker].astype(np.float64)
        lo, hi = self.aim_lo[topics, broker], self.aim_hi[topics, broker]
        before, after = math.outside_band(q, lo, hi), math.outside_band(q + step, lo, hi)
        if self.evening:
            before, after = before**2, after**2
        return np.asarray((after - before) / self.scale[topics, broker], dtype=np.float64)

    def _pair_change(self, state: WorkingModel, away: IntArray, back: IntArray, broker: int) -> FloatArray:
        """``[I, J]``: the change at ``broker`` when a replica of ``away[i]`` leaves it and one of
        ``back[j]`` arrives: of the distances outside the bands or, in the tactics' last phase,
        of their squares. By the squares, one cell ten over giving a replica to a cell one over
        is a gain (the measure itself does not change, or changes by the cells' scales): what
        cannot be met (a broker full of excluded topics' replicas, or one filled to its count
        floor from few topics) is spread over the cells instead of left in one."""
        out = self._cell_change(state, away, broker, -1.0)
        into = self._cell_change(state, back, broker, 1.0)
        return np.asarray(out[:, None] + into[None, :], dtype=np.float64)

    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        tg, tt = state.topic[give.part], state.topic[take.part]
        moves = give.delta[:, REPLICAS][:, None] * take.delta[:, REPLICAS][None, :]
        differ = (tg[:, None] != tt[None, :]) & (moves > 0)
        dx = self._pair_change(state, tg, tt, x)
        dy = self._pair_change(state, tt, tg, y).T
        return np.where(differ, dx, 0.0), np.where(differ, dy, 0.0)

    def violation(self, state: WorkingModel) -> float:
        return float(self.contract_cells(state).sum())

    def status(self, state: WorkingModel) -> GoalStatus:
        cells = self.contract_cells(state)
        active = state.active
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = np.where(self.expected > 0, np.abs(state.topic_count - self.expected) / self.expected, 0.0)
        judged = dev[self.judged][:, active]
        worst = float(100.0 * judged.max()) if judged.size else 0.0
        if not (cells > EPSILON).any():
            return GoalStatus(True, worst, "")
        t, b = np.unravel_index(int(np.argmax(cells)), cells.shape)
        return GoalStatus(
            False,
            worst,
            f"topic {state.topic_names[t]} has {int(state.topic_count[t, b])} replicas on broker "
            f"{int(state.broker_ids[b])}, band {int(self.lo[t, b])}..{int(self.hi[t, b])}"
            + (self._why_short(state, int(t), int(b)) or self._why_excluded(state, int(t), int(b))),
        )

    def _why_short(self, state: WorkingModel, t: int, broker: int) -> str:
        """Why the cell of topic ``t`` on ``broker`` cannot be brought into its band, when its
        rack is why."""
        rack = int(state.rack[broker])
        if self.rack_totals is None or not self.short[t, rack]:
            return ""
        members = (state.rack == rack) & (self.fraction > 0)
        return (
            f"; rack {state.rack_names[rack]} holds {self.rack_totals[t, rack]:.0f} of its replicas, which "
            f"RackAware keeps in it, and its brokers' bands add up to {self.lo[t, members].sum():.0f}.."
            f"{self.hi[t, members].sum():.0f}: they are balanced around the rack's own share instead"
        )

    def _why_excluded(self, state: WorkingModel, t: int, broker: int) -> str:
        """Why the cell of topic ``t`` on ``broker`` is below its band, when the excluded topics
        are why: their replicas, which no plan moves, take more than the broker's share of its
        room."""
        excluded = ~self.judged & (state.topic_total > 0)
        held = int(state.topic_count[excluded, broker].sum())
        share = float(self.expected[excluded, broker].sum())
        if state.topic_count[t, broker] >= self.lo[t, broker] or held <= share:
            return ""
        return (
            f"; broker {int(state.broker_ids[broker])} holds {held} replicas of excluded topics (its "
            f"share {share:.0f}), which no plan moves and which take the room its bands leave"
        )

    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        """Bring the cells into their aimed bands (``topic_tactics.optimize``)."""
        topic_tactics.optimize(self, state, search)
