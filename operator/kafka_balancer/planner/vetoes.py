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
        self._key = -1
        self._q = np.zeros(shape)
        self._before = np.zeros(shape)
        self._most = np.zeros(shape[::-1])
        self._least = np.zeros(shape[::-1])

    def __bool__(self) -> bool:
        return len(self.columns) > 0

    def _current(self, state: WorkingModel) -> tuple[FloatArray, FloatArray]:
        if self._key != state.version:
            self._q = state.quantities()[:, self.columns]
            self._before = _outside(self._q, self.lo, self.hi)
            # The distance outside a band is convex and piecewise linear, so "adding d to a broker
            # worsens no goal beyond the slack" is d ≤ most for d ≥ 0 and d ≥ least for d < 0, and
            # as least ≤ 0 ≤ most it is least ≤ d ≤ most whatever d's sign: two comparisons per
            # broker and goal instead of evaluating every band after every candidate's change.
            # Goals first ([G, B]): the check below reduces over goals, which numpy does fast
            # across whole [K, B] slabs and slowly along a short last axis.
            self._most = np.ascontiguousarray((self.hi - self._q + self._before + self.slack).T)
            self._least = np.ascontiguousarray((self.lo - self._q - self._before - self.slack).T)
            self._key = state.version
        return self._q, self._before

    def _at_source(self, state: WorkingModel, cands: Candidates) -> FloatArray:
        """Un-normalised change outside the bands at each candidate's source ``[K, G]``."""
        q, before = self._current(state)
        src = cands.src
        d = cands.delta[:, self.columns]
        return np.asarray(_outside(q[src] - d, self.lo[src], self.hi[src]) - before[src], dtype=np.float64)

    def allowed(self, state: WorkingModel, cands: Candidates, open_to: BoolArray | None = None) -> BoolArray:
        """``[K, B]``: candidate k may go to broker b without worsening any goal on either end;
        only the brokers of ``open_to`` (default all) are examined, the others come out False."""
        self._current(state)
        src_ok = np.asarray((self._at_source(state, cands) <= self.slack[cands.src]).all(axis=1), dtype=bool)
        n = self.lo.shape[0]
        brokers: IntArray = np.arange(n) if open_to is None else np.nonzero(open_to)[0]
        d = cands.delta[:, self.columns].T[:, :, None]
        ok = ((d <= self._most[:, None, brokers]) & (d >= self._least[:, None, brokers])).all(axis=0)
        ok &= src_ok[:, None]
        if open_to is None:
            return ok
        out = np.zeros((len(cands), n), dtype=bool)
        out[:, brokers] = ok
        return out

    def total_change(self, state: WorkingModel, cands: Candidates) -> FloatArray:
        """``[K, B]``: the goals' summed relative change if candidate k went to broker b."""
        q, before = self._current(state)
        at_src = self._at_source(state, cands)
        d = cands.delta[:, self.columns]
        at_dst = _outside(q[None, :, :] + d[:, None, :], self.lo[None], self.hi[None]) - before[None]
        src = (at_src / self.scale[cands.src]).sum(axis=1)
        return np.asarray(src[:, None] + (at_dst / self.scale[None]).sum(axis=2), dtype=np.float64)
