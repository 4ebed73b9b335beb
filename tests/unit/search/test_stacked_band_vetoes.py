"""The stacked band vetoes refuse exactly the moves that worsen some goal at either end.

``StackedBands.allowed`` compares each candidate's change with rooms per broker and goal, and skips
the goals whose rooms every candidate fits; whatever it skips or stacks, its answer must be the
definition taken goal by goal: the move may go to broker b when neither b nor its source ends
further outside that goal's veto band than it was, beyond the tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.candidate_moves import leadership_away, replica_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, FloatArray
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.vetoes import TOLERANCE, StackedBands
from tests.unit.search.test_kept_state_equals_rebuilt import moved_clusters, moved_state


def _outside(q: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    return np.maximum(q - hi, 0.0) + np.maximum(lo - q, 0.0)


def _by_definition(
    state: WorkingModel, goals: list[BandGoal], cands: Candidates
) -> tuple[BoolArray, BoolArray]:
    """``[K, B]``: allowed by every goal; and where some goal's verdict is within rounding of
    its tolerance (either answer is right there)."""
    ok = np.ones((len(cands), state.n_brokers), dtype=bool)
    close = np.zeros_like(ok)
    for goal in goals:
        q = state.quantity(goal.column)
        lo, hi = goal.band_edges(False)
        slack = TOLERANCE * goal.scale
        d = cands.delta[:, goal.column]
        src = cands.src
        at_dst = _outside(q[None, :] + d[:, None], lo[None, :], hi[None, :]) - _outside(q, lo, hi)[None, :]
        at_src = _outside(q[src] - d, lo[src], hi[src]) - _outside(q[src], lo[src], hi[src])
        ok &= (at_dst <= slack[None, :]) & (at_src <= slack[src])[:, None]
        # Within rounding of the verdict's edge: the change there lands on the tolerance.
        figures = np.concatenate([q, d, lo, hi])
        edge = 1e-14 * float(np.abs(figures[np.isfinite(figures)]).max(initial=1.0))
        close |= np.abs(at_dst - slack[None, :]) < edge
        close |= (np.abs(at_src - slack[src]) < edge)[:, None]
    return ok, close


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters(), st.data())
def test_allowed_is_every_goals_verdict_at_both_ends(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]], data: st.DataObject
) -> None:
    state = moved_state(case)
    goals = [build_goal(spec, state) for spec in priority_order(default_goal_set())]
    bands = [g for g in goals if isinstance(g, BandGoal) and g.active]
    assume(bands)
    chosen = data.draw(st.lists(st.sampled_from(bands), min_size=1, unique_by=id))
    broker = data.draw(st.integers(0, state.n_brokers - 1))
    cands = Candidates.concat([replica_moves(state, broker), leadership_away(state, broker)])
    n = state.n_brokers
    open_to = data.draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n).map(np.array))

    got = StackedBands(chosen, n).allowed(state, cands, open_to)
    want, close = _by_definition(state, chosen, cands)
    if open_to is not None:
        want &= open_to[None, :]
    assert got.shape == want.shape
    assert np.array_equal(got[~close], want[~close])
