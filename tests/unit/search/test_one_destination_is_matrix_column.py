"""A search with one destination (a fill, a pull, an undo), or within a rack, or an exchange
between two brokers, judges it as the search with every destination does.

``Search.allowed(cands, dest)`` answers from the destination's column alone (the rules, the band
rooms, and each other goal's ``kept_at``) instead of the ``[K, B]`` matrix; its answer must be that
matrix's column, whatever the brokers' states, the rack pins and the demotions. A search within a
rack (``in_rack``) examines only the brokers it may still go to, and must answer the matrix with
the other racks' replica moves struck out. An exchange reads each side's one column of the rules
and of RackAware (``pairs_allowed``, ``RackAwareGoal.evaluate_pairs``): the columns of the matrices
that ``holds``, ``rack_allowed`` and ``evaluate`` build.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.rack import RackAwareGoal
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set
from kafka_balancer.model.candidate_moves import leadership_away, replica_moves
from kafka_balancer.model.candidates import NO_BROKER, Candidates
from kafka_balancer.model.destinations import holds, rack_allowed
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from tests.unit.clusters import broker, drawn_partitions, snapshot


@st.composite
def _cases(draw: st.DrawFn) -> tuple[WorkingModel, int]:
    n_brokers = draw(st.integers(4, 8))
    states = draw(
        st.lists(st.sampled_from(["active", "active", "draining"]), min_size=n_brokers, max_size=n_brokers)
    )
    brokers = [broker(b, "abc"[b % 3], states[b]) for b in range(n_brokers)]
    parts = drawn_partitions(draw, draw(st.integers(4, 30)), n_brokers, 2, 3)
    state = WorkingModel(parse_snapshot(snapshot(brokers, parts)))
    for p, slot, dest in draw(
        st.lists(st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 2), st.integers(0, n_brokers - 1)))
    ):
        if slot < state.rf[p] and not (state.replicas[p] == dest).any():
            cands = replica_moves(
                state, int(state.replicas[p, slot]), np.array([p], dtype=np.int64), every=True
            )
            state.apply(cands, 0, dest)
    for p, slot in draw(st.lists(st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 2)), max_size=6)):
        if slot < state.rf[p]:
            state.pin_to_rack(p, slot)
    # A demoted broker takes no leadership: as the optimizer marks those the pool demotes.
    state.demoted[:] = draw(st.lists(st.booleans(), min_size=n_brokers, max_size=n_brokers))
    return state, draw(st.integers(0, n_brokers - 1))


def _searched(case: tuple[WorkingModel, int], data: st.DataObject) -> tuple[WorkingModel, Search, Candidates]:
    """The case's state, a search with some of the default goals as its vetoes, and every move
    and leader change off the case's broker."""
    state, source = case
    goals = [build_goal(spec, state, racks_held=True) for spec in priority_order(default_goal_set())]
    vetoes = data.draw(st.lists(st.sampled_from(goals), min_size=1, unique_by=id))
    cands = Candidates.concat([replica_moves(state, source, every=True), leadership_away(state, source)])
    return state, Search(state, vetoes, []), cands


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases(), st.data())
def test_one_destination_is_the_matrix_column(case: tuple[WorkingModel, int], data: st.DataObject) -> None:
    state, search, cands = _searched(case, data)
    every = search.allowed(cands)
    for dest in range(state.n_brokers):
        one = search.allowed(cands, dest)
        assert np.array_equal(one[:, dest], every[:, dest])
        assert not np.delete(one, dest, axis=1).any()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases(), st.data())
def test_within_a_rack_is_the_matrix_within_it(case: tuple[WorkingModel, int], data: st.DataObject) -> None:
    state, search, cands = _searched(case, data)
    same_rack = state.rack[None, :] == state.rack[cands.src][:, None]
    expected = search.allowed(cands) & (same_rack | (cands.dst != NO_BROKER)[:, None])
    assert np.array_equal(search.allowed(cands, in_rack=True), expected)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases(), st.data())
def test_an_exchange_reads_the_matrices_columns(case: tuple[WorkingModel, int], data: st.DataObject) -> None:
    state, x = case
    y = data.draw(st.integers(0, state.n_brokers - 1).filter(lambda b: b != x))
    rack_aware = build_goal(GoalSpec.default(GoalType.RACK_AWARE), state, racks_held=True)
    assert isinstance(rack_aware, RackAwareGoal)
    give, take = replica_moves(state, x, every=True), replica_moves(state, y, every=True)
    rules_give = ~holds(state, give.part)[:, y] & rack_allowed(state, give.part, give.slot)[:, y]
    rules_take = ~holds(state, take.part)[:, x] & rack_allowed(state, take.part, take.slot)[:, x]
    expected = rules_give[:, None] & rules_take[None, :]
    if state.demoted[y]:
        expected &= (give.delta[:, LEADERS] <= 0)[:, None]
    if state.demoted[x]:
        expected &= (take.delta[:, LEADERS] <= 0)[None, :]
    assert np.array_equal(Search(state, [], []).pairs_allowed(give, take, x, y), expected)
    at_x, at_y = rack_aware.evaluate_pairs(state, give, take, x, y)
    gives, takes = rack_aware.evaluate(state, give)[1][:, y], rack_aware.evaluate(state, take)[1][:, x]
    changes = gives[:, None] + takes[None, :]
    assert not at_x.any()
    assert np.array_equal(at_y, changes)
