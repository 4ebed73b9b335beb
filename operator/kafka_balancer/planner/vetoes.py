"""Band goals evaluated together: the vetoes of a search, and the goals still to come.

Checking a batch of candidates against a dozen band goals one goal at a time costs a dozen
rounds of small numpy calls per action; stacking the goals' bands into ``[brokers, goals]``
arrays does the same arithmetic in one round, which matters at a million replicas.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, FloatArray
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

    def __bool__(self) -> bool:
        return len(self.columns) > 0

    def _current(self, state: WorkingModel) -> tuple[FloatArray, FloatArray]:
        if self._key != state.version:
            self._q = state.quantities()[:, self.columns]
            self._before = _outside(self._q, self.lo, self.hi)
            self._key = state.version
        return self._q, self._before

    def _changes(self, state: WorkingModel, cands: Candidates) -> tuple[FloatArray, FloatArray]:
        """Un-normalised change outside the bands at each source ``[K, G]`` and destination ``[K, B, G]``."""
        q, before = self._current(state)
        d = cands.delta[:, self.columns]
        src = cands.src
        at_src = _outside(q[src] - d, self.lo[src], self.hi[src]) - before[src]
        at_dst = _outside(q[None, :, :] + d[:, None, :], self.lo[None], self.hi[None]) - before[None]
        return at_src, at_dst

    def allowed(self, state: WorkingModel, cands: Candidates) -> BoolArray:
        """``[K, B]``: candidate k may go to broker b without worsening any goal on either end."""
        at_src, at_dst = self._changes(state, cands)
        src_ok = np.asarray((at_src <= self.slack[cands.src]).all(axis=1), dtype=bool)
        dst_ok = (at_dst <= self.slack[None]).all(axis=2)
        return np.asarray(src_ok[:, None] & dst_ok, dtype=bool)

    def total_change(self, state: WorkingModel, cands: Candidates) -> FloatArray:
        """``[K, B]``: the goals' summed relative change if candidate k went to broker b."""
        at_src, at_dst = self._changes(state, cands)
        src = (at_src / self.scale[cands.src]).sum(axis=1)
        return np.asarray(src[:, None] + (at_dst / self.scale[None]).sum(axis=2), dtype=np.float64)
