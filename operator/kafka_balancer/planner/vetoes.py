"""All band-goal vetoes evaluated in one vectorised pass.

Checking a batch of candidates against a dozen band goals one goal at a time costs a dozen
rounds of small numpy calls per action; stacking the goals' bands into ``[brokers, goals]``
arrays does the same arithmetic in one round, which matters at a million replicas.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.math import BoolArray, FloatArray
from kafka_balancer.planner.state import Candidates, PlanState

TOLERANCE = 1e-12


def _outside(q: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    return np.maximum(q - hi, 0.0) + np.maximum(lo - q, 0.0)


class BandVetoes:
    """No candidate may take any of these goals further outside its veto band on any broker."""

    def __init__(self, goals: list[BandGoal], n_brokers: int) -> None:
        active = [g for g in goals if g.active]
        self.columns = np.array([g.column for g in active], dtype=np.int64)
        shape = (n_brokers, len(active))
        self.lo = np.column_stack([g.veto_lo for g in active]) if active else np.zeros(shape)
        self.hi = np.column_stack([g.veto_hi for g in active]) if active else np.zeros(shape)
        scale = np.column_stack([g.scale for g in active]) if active else np.ones(shape)
        self.slack = TOLERANCE * scale
        self._key = -1
        self._q = np.zeros(shape)
        self._before = np.zeros(shape)

    def __bool__(self) -> bool:
        return len(self.columns) > 0

    def _current(self, state: PlanState) -> tuple[FloatArray, FloatArray]:
        if self._key != state.version:
            self._q = state.quantities()[:, self.columns]
            self._before = _outside(self._q, self.lo, self.hi)
            self._key = state.version
        return self._q, self._before

    def allowed(self, state: PlanState, cands: Candidates) -> BoolArray:
        """``[K, B]``: candidate k may go to broker b without worsening any goal on either end."""
        q, before = self._current(state)
        d = cands.delta[:, self.columns]
        src = cands.src
        after_src = _outside(q[src] - d, self.lo[src], self.hi[src])
        src_ok = np.asarray(((after_src - before[src]) <= self.slack[src]).all(axis=1), dtype=bool)
        after = _outside(q[None, :, :] + d[:, None, :], self.lo[None], self.hi[None])
        dst_ok = ((after - before[None]) <= self.slack[None]).all(axis=2)
        return np.asarray(src_ok[:, None] & dst_ok, dtype=bool)
