"""Band goals evaluated together: the vetoes of a search, and the goals still to come.

Checking a batch of candidates against a dozen band goals one goal at a time costs a dozen
rounds of small numpy calls per action; stacking the goals' bands into ``[brokers, goals]``
arrays does the same arithmetic in one round, which matters at a million replicas.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.working import WorkingModel

TOLERANCE = 1e-12


def _outside(q: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    return np.maximum(q - hi, 0.0) + np.maximum(lo - q, 0.0)


class StackedBands:
    """Several band goals' bands stacked into ``[brokers, goals]`` arrays, evaluated together."""

    def __init__(self, goals: list[BandGoal], n_brokers: int, target: bool = False) -> None:
        active = [g for g in goals if g.active]
        self.columns = np.array([g.column for g in active], dtype=np.int64)
        shape = (n_brokers, len(active))
        bands = [g.band_edges(target) for g in active]
        self.lo = np.column_stack([lo for lo, _ in bands]) if active else np.zeros(shape)
        self.hi = np.column_stack([hi for _, hi in bands]) if active else np.zeros(shape)
        self.scale = np.column_stack([g.scale for g in active]) if active else np.ones(shape)
        self.slack = TOLERANCE * self.scale
        self._lo_t, self._hi_t, self._scale_t = (
            np.ascontiguousarray(a.T)[:, None, :] for a in (self.lo, self.hi, self.scale)
        )
        self._by_goal_key = -1
        self._q_t = np.zeros((len(active), 1, n_brokers))
        self._before_t = np.zeros((len(active), 1, n_brokers))
        self._key = -1
        self._q = np.zeros(shape)
        self._before = np.zeros(shape)
        self._rooms_key = -1
        self._most = np.zeros(shape[::-1])
        self._least = np.zeros(shape[::-1])
        self._most_anywhere = np.zeros(len(active))
        self._least_anywhere = np.zeros(len(active))

    def __bool__(self) -> bool:
        return len(self.columns) > 0

    def _current(self, state: WorkingModel) -> tuple[FloatArray, FloatArray]:
        if self._key != state.journal.version:
            self._q = state.quantities()[:, self.columns]
            self._before = _outside(self._q, self.lo, self.hi)
            self._key = state.journal.version
        return self._q, self._before

    def rooms(self, state: WorkingModel) -> tuple[FloatArray, FloatArray]:
        """``[G, B]``: the least and the most change each broker may take for each goal.

        The distance outside a band is convex and piecewise linear, so "adding d to a broker
        worsens the goal by at most the slack" is d ≤ most for d ≥ 0 and d ≥ least for d < 0,
        and as least ≤ 0 ≤ most it is least ≤ d ≤ most whatever d's sign: two comparisons per
        broker and goal instead of evaluating the band after every candidate's change. Goals
        first: the check reduces over goals, which numpy does fast across whole [K, B] slabs and
        slowly along a short last axis."""
        if self._rooms_key != state.journal.version:
            q, before = self._current(state)
            self._most = np.ascontiguousarray((self.hi - q + before + self.slack).T)
            self._least = np.ascontiguousarray((self.lo - q - before - self.slack).T)
            self._most_anywhere = self._most.min(axis=1)
            self._least_anywhere = self._least.max(axis=1)
            self._rooms_key = state.journal.version
        return self._least, self._most

    def allowed(self, state: WorkingModel, cands: Candidates, open_to: BoolArray | None = None) -> BoolArray:
        """``[K, B]``: candidate k may go to broker b without worsening any goal on either end;
        only the brokers of ``open_to`` (default all) can come out True."""
        least, most = self.rooms(state)
        d = cands.delta[:, self.columns].T
        src = cands.src
        # The source takes −d: least ≤ −d ≤ most there.
        src_ok = np.asarray(((d <= -least[:, src]) & (d >= -most[:, src])).all(axis=0), dtype=bool)
        n = self.lo.shape[0]
        # A goal whose every candidate fits the rooms of every broker refuses none: only the others
        # are compared broker by broker (the capacity goals' rooms are wide, and most changes small).
        if d.shape[1] == 0:
            return np.zeros((0, n), dtype=bool)
        tight = (d.max(axis=1) > self._most_anywhere) | (d.min(axis=1) < self._least_anywhere)
        if not tight.all():
            d, least, most = d[tight], least[tight], most[tight]
        d3 = d[:, :, None]
        if open_to is None or 2 * int(open_to.sum()) > n:
            # Most brokers are open: comparing them all beats gathering the open ones.
            ok = ((d3 <= most[:, None, :]) & (d3 >= least[:, None, :])).all(axis=0)
            ok &= src_ok[:, None]
            return ok if open_to is None else np.asarray(ok & open_to[None, :], dtype=bool)
        brokers: IntArray = np.nonzero(open_to)[0]
        ok = ((d3 <= most[:, None, brokers]) & (d3 >= least[:, None, brokers])).all(axis=0)
        ok &= src_ok[:, None]
        out = np.zeros((len(cands), n), dtype=bool)
        out[:, brokers] = ok
        return out

    def allowed_at(self, state: WorkingModel, cands: Candidates, dest: int) -> BoolArray:
        """``[K]``: ``allowed``'s column ``dest``."""
        least, most = self.rooms(state)
        d = cands.delta[:, self.columns].T
        src = cands.src
        ok = ((d <= -least[:, src]) & (d >= -most[:, src])).all(axis=0)
        ok &= ((d <= most[:, dest, None]) & (d >= least[:, dest, None])).all(axis=0)
        return np.asarray(ok, dtype=bool)

    def pair_allowed(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int
    ) -> BoolArray:
        """``[I, J]``: ``give[i]`` moving from x to y and ``take[j]`` from y to x together worsen
        no goal at x or at y."""
        least, most = self.rooms(state)
        # y takes d = give − take and x takes −d: per goal, d within [lo, hi].
        lo = np.maximum(least[:, y], -most[:, x])
        hi = np.minimum(most[:, y], -least[:, x])
        g = give.delta[:, self.columns].T
        t = take.delta[:, self.columns].T
        g_min, g_max = g.min(axis=1), g.max(axis=1)
        # A goal no pair can leave its rooms is not compared pair by pair, and a partner out of
        # every give's reach on some goal is dropped, with [G, J] comparisons instead of
        # [G, I, J]: the capacity goals' rooms are wide, and most of a broker's replicas are
        # too large or too small to even out what the bands refused of the give alone.
        near = (t >= (g_min - hi)[:, None]) & (t <= (g_max - lo)[:, None])
        js = np.nonzero(near.all(axis=0))[0]
        out = np.zeros((len(give), len(take)), dtype=bool)
        if len(js) == 0:
            return out
        t = t[:, js]
        tight = (g_min - t.max(axis=1) < lo) | (g_max - t.min(axis=1) > hi)
        d = g[tight][:, :, None] - t[tight][:, None, :]
        out[:, js] = ((d >= lo[tight, None, None]) & (d <= hi[tight, None, None])).all(axis=0)
        return out

    def _at_source(self, state: WorkingModel, cands: Candidates) -> FloatArray:
        """Un-normalised change outside the bands at each candidate's source ``[K, G]``."""
        q, before = self._current(state)
        src = cands.src
        d = cands.delta[:, self.columns]
        return np.asarray(_outside(q[src] - d, self.lo[src], self.hi[src]) - before[src], dtype=np.float64)

    def total_change(self, state: WorkingModel, cands: Candidates) -> FloatArray:
        """``[K, B]``: the goals' summed relative change if candidate k went to broker b."""
        at_src = self._at_source(state, cands)
        d = cands.delta[:, self.columns]
        src = (at_src / self.scale[cands.src]).sum(axis=1)
        # Goals first, [G, K, B], reduced over goals slab by slab, and in place: the same
        # arithmetic as along a short last axis, which numpy does slowly, in fresh arrays.
        q_t, before_t = self._current_by_goal(state)
        now = q_t + d.T[:, :, None]
        at_dst = np.maximum(now - self._hi_t, 0.0)
        at_dst += np.maximum(np.subtract(self._lo_t, now, out=now), 0.0)
        at_dst -= before_t
        at_dst /= self._scale_t
        return np.asarray(src[:, None] + at_dst.sum(axis=0), dtype=np.float64)

    def _current_by_goal(self, state: WorkingModel) -> tuple[FloatArray, FloatArray]:
        """``[G, 1, B]`` twice: ``_current``'s quantities and distances, goals first."""
        if self._by_goal_key != state.journal.version:
            q, before = self._current(state)
            self._q_t = np.ascontiguousarray(q.T)[:, None, :]
            self._before_t = np.ascontiguousarray(before.T)[:, None, :]
            self._by_goal_key = state.journal.version
        return self._q_t, self._before_t
