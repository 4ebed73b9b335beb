"""A search remembers the replica exchanges it found impossible, and the candidates it built for
them, only while nothing changes.

``swaps.exchange_replicas`` skips a (goal, x, y) exchange it already found impossible at the
same state version: a fill or shed asks its partners within its rack, then the same ones among
all. The sides it offers (a broker's heaviest and lightest replicas) and the leaderships a broker
can hand over are built once per state version. Whatever actions come between, each answer and the
state after it must be those of a search that remembers nothing.
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.swaps import exchange_leaderships, exchange_replicas
from tests.unit.clusters import broker, drawn_partitions, snapshot


@st.composite
def _cases(draw: st.DrawFn) -> tuple[WorkingModel, list[tuple[int, int, int]]]:
    n_brokers = draw(st.integers(3, 6))
    brokers = [broker(b, "abc"[b % 3]) for b in range(n_brokers)]
    parts = drawn_partitions(draw, draw(st.integers(4, 24)), n_brokers, 2, 3)
    state = WorkingModel(parse_snapshot(snapshot(brokers, parts)))
    moves = st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 2), st.integers(0, n_brokers - 1))
    return state, draw(st.lists(moves, min_size=1, max_size=12))


def _goals(state: WorkingModel) -> list[BandGoal]:
    built = [build_goal(spec, state, racks_held=True) for spec in priority_order(default_goal_set())]
    return [g for g in built if isinstance(g, BandGoal)]


def _move(state: WorkingModel, p: int, slot: int, dest: int) -> None:
    if slot < state.rf[p] and not (state.replicas[p] == dest).any():
        cands = replica_moves(state, int(state.replicas[p, slot]), np.array([p], dtype=np.int64), every=True)
        state.apply(cands, 0, dest)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases(), st.data())
def test_exchanges_answer_as_a_search_that_remembers_nothing(
    case: tuple[WorkingModel, list[tuple[int, int, int]]], data: st.DataObject
) -> None:
    remembering_state, moves = case
    fresh_state = copy.deepcopy(remembering_state)
    remembering_goals, fresh_goals = _goals(remembering_state), _goals(fresh_state)
    n = remembering_state.n_brokers
    # Two goals asked of the same pairs: what one goal cannot exchange, another may.
    asked = data.draw(
        st.lists(st.integers(0, len(remembering_goals) - 1), min_size=2, max_size=2, unique=True)
    )
    first = min(asked)
    vetoes = data.draw(st.lists(st.integers(0, first - 1), unique=True, max_size=2)) if first else []
    remembering = Search(remembering_state, [remembering_goals[v] for v in vetoes], [])
    # The same few pairs asked after every move, twice at one state version: a fill's partners.
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=3)
    )
    for p, slot, dest in moves:
        for (x, y), g in itertools.product(pairs + pairs, asked):
            if x == y:
                continue
            fresh = Search(fresh_state, [fresh_goals[v] for v in vetoes], [])
            assert exchange_replicas(remembering, remembering_goals[g], x, y) == exchange_replicas(
                fresh, fresh_goals[g], x, y
            )
            assert np.array_equal(remembering_state.replicas, fresh_state.replicas)
            fresh = Search(fresh_state, [fresh_goals[v] for v in vetoes], [])
            assert exchange_leaderships(remembering, remembering_goals[g], x, y) == exchange_leaderships(
                fresh, fresh_goals[g], x, y
            )
            assert np.array_equal(remembering_state.leader_slot, fresh_state.leader_slot)
        _move(remembering_state, p, slot, dest)
        _move(fresh_state, p, slot, dest)
