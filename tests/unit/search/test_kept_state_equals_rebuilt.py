"""What the planner keeps up to date between actions must equal what it would build anew.

The search keeps per-partition rack counts, a fill's donor pools and the working model's journal
between actions instead of rebuilding them; a plan is only the same as before if each of them is,
array for array, what building it from the state at that point gives. Likewise a shed or fill
asks one broker's band figures, which must be the every-broker figures at that broker, and
TopicReplicaDistribution keeps its cells' change on a replica's arrival.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.candidate_moves import extreme_replica_moves, leadership_away, replica_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.journal import JOURNAL
from kafka_balancer.model.math import FloatArray
from kafka_balancer.model.quantities import REPLICAS
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.pool import Pool, after_swap, new_pool, preference, refreshed, shed_candidates
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.swaps import swap_with_partners
from tests.unit.clusters import broker, drawn_partitions, partition, snapshot


@st.composite
def moved_clusters(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[int, int, int]]]:
    """A cluster and a sequence of (partition, slot, destination) moves to apply to it."""
    n_brokers = draw(st.integers(4, 8))
    parts = drawn_partitions(draw, draw(st.integers(4, 30)), n_brokers, 2, 3)
    moves = draw(
        st.lists(
            st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 2), st.integers(0, n_brokers - 1)),
            max_size=20,
        )
    )
    return snapshot([broker(b, "abc"[b % 3]) for b in range(n_brokers)], parts), moves


def _apply(state: WorkingModel, p: int, slot: int, dest: int) -> bool:
    """Move replica ``slot`` of partition p to ``dest`` when that is a move; whether it was."""
    if slot >= state.rf[p] or (state.replicas[p] == dest).any():
        return False
    src = int(state.replicas[p, slot])
    cands = replica_moves(state, src, np.array([p], dtype=np.int64), every=True)
    state.apply(cands, 0, dest)
    return True


def moved_state(case: tuple[dict[str, Any], list[tuple[int, int, int]]]) -> WorkingModel:
    """The drawn cluster's working model with the drawn moves applied (those that are moves)."""
    snap, moves = case
    state = WorkingModel(parse_snapshot(snap))
    for p, slot, dest in moves:
        _apply(state, p, slot, dest)
    return state


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_rack_counts_and_journal_follow_every_move(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    snap, moves = case
    state = WorkingModel(parse_snapshot(snap))
    applied = []
    for p, slot, dest in moves:
        version = state.journal.version
        src = int(state.replicas[p, slot]) if slot < state.rf[p] else -1
        if _apply(state, p, slot, dest):
            applied.append((p, src, dest))
            assert state.journal.changes_since(version) == [(p, src, dest)]
        # Asked after every move, so that a broker's kept list is asked again after it changed.
        for b in range(state.n_brokers):
            held = np.nonzero((state.replicas == b).any(axis=1))[0]
            assert state.parts_on(b).tolist() == held.tolist()
    counted = np.zeros_like(state.rack_count)
    for p, row in enumerate(state.replicas):
        for b in row[row >= 0]:
            counted[p, state.rack[b]] += 1
    assert np.array_equal(state.rack_count, counted)
    assert state.journal.changes_since(0) == (applied if len(applied) <= JOURNAL else None)
    assert state.journal.changes_since(state.journal.version) == []
    assert state.journal.changes_since(None) is None


@st.composite
def rounds_of_moves(draw: st.DrawFn) -> tuple[dict[str, Any], list[list[tuple[int, int, int]]]]:
    """4 brokers of ~60 replicas, and rounds of up to 8 (partition, slot, destination) moves."""
    n_brokers = 4
    parts = drawn_partitions(draw, 80, n_brokers, 3, 3)
    move = st.tuples(st.integers(0, len(parts) - 1), st.integers(0, 2), st.integers(0, n_brokers - 1))
    rounds = draw(st.lists(st.lists(move, max_size=8), min_size=1, max_size=6))
    return snapshot([broker(b, "abc"[b % 3]) for b in range(n_brokers)], parts), rounds


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds_of_moves())
def test_a_brokers_partitions_asked_after_a_few_moves_are_the_ones_it_holds(
    case: tuple[dict[str, Any], list[list[tuple[int, int, int]]]],
) -> None:
    # Several moves between two asks, moves back onto a broker among them: the kept lists are
    # patched rather than built anew, which a move or two on a broker of a handful of replicas
    # never exercises.
    snap, rounds = case
    state = WorkingModel(parse_snapshot(snap))
    for moves in rounds:
        for p, slot, dest in moves:
            _apply(state, p, slot, dest)
        for b in range(state.n_brokers):
            held = np.nonzero((state.replicas == b).any(axis=1))[0]
            assert state.parts_on(b).tolist() == held.tolist()


def _fresh(search: Search, goal: BandGoal, s: int, broker: int) -> Pool:
    """A donor's pool as ``ladder.pull`` builds it."""
    state = search.state
    parts = state.parts_on(s)
    parts = parts[(state.replicas[parts] != broker).all(axis=1)]
    return Pool(replica_moves(state, s, parts), goal.column, search.norm)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_a_fills_refreshed_donor_pools_are_the_pools_built_anew(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    snap, moves = case
    state = WorkingModel(parse_snapshot(snap))
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    assert isinstance(goal, BandGoal)
    search = Search(state)
    broker = 0
    pools = {s: _fresh(search, goal, s, broker) for s in range(1, state.n_brokers)}
    half = len(moves) // 2
    # The first moves are the fill's own (each retired in every pool), the rest an exchange's.
    for p, slot, dest in moves[:half]:
        if _apply(state, p, slot, dest):
            for pool in pools.values():
                pool.retire(p)
    version = state.journal.version
    for p, slot, dest in moves[half:]:
        _apply(state, p, slot, dest)
    kept = refreshed(search, goal, broker, pools, state.journal.changes_since(version))
    if state.journal.changes_since(version) is None:
        assert kept == {}
        return
    assert kept.keys() == pools.keys()
    for s, pool in kept.items():
        fresh = _fresh(search, goal, s, broker)
        for name in ("part", "slot", "src", "dst", "delta", "cost"):
            got, want = getattr(pool.cands, name), getattr(fresh.cands, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), name
        assert np.array_equal(pool.side, fresh.side) and pool.alive.all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_one_brokers_band_figures_are_every_brokers_at_that_broker(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    """A shed or fill asks its broker's figures after every action, one broker at a time."""
    state = moved_state(case)
    for spec in default_goal_set():
        goal = build_goal(spec, state)
        if not isinstance(goal, BandGoal):
            continue
        q = state.quantity(goal.column)
        fix = goal.needs_fix(state)
        for b in range(state.n_brokers):
            assert goal.needs_fix_at(state, b) == fix[b]
            assert goal.excess(state, b) == float(q[b] - goal.target_hi[b])
            assert goal.deficit(state, b) == float(goal.target_lo[b] - q[b])


def _topic_change(goal: TopicReplicaDistributionGoal, state: WorkingModel, cands: Candidates) -> FloatArray:
    """TopicReplicaDistribution's change at every destination, computed from the counts anew."""
    t = state.topic[cands.part]
    q = state.topic_count[t]
    d = cands.delta[:, REPLICAS]
    step = (q >= goal.hi[t]).astype(np.float64) - (q < goal.lo[t])
    return np.asarray(d[:, None] * step / goal.scale[t], dtype=np.float64)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_topic_cells_kept_between_actions_are_the_cells_counted_anew(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    """Asked after every move (its cells kept up to date) or after many (rebuilt), the topic
    goal's change at each destination is the one counted from the cells, bit for bit."""
    snap, moves = case
    state = WorkingModel(parse_snapshot(snap))
    goal = TopicReplicaDistributionGoal(GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION), state)
    for i, (p, slot, dest) in enumerate(moves):
        _apply(state, p, slot, dest)
        if i % 3 == 2:
            continue
        for b in range(state.n_brokers):
            for cands in (replica_moves(state, b), leadership_away(state, b)):
                _, dst = goal.evaluate(state, cands)
                assert dst.tobytes() == _topic_change(goal, state, cands).tobytes()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters(), st.integers(1, 12))
def test_a_brokers_extreme_moves_are_the_head_of_all_its_moves_sorted(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]], n: int
) -> None:
    """A swap's sides, chosen before the candidates are built, are the rows building every move
    of the broker and sorting them by the goal's quantity would keep, in the same order."""
    state = moved_state(case)
    for b in range(state.n_brokers):
        every = replica_moves(state, b)
        for column in range(state.quantities().shape[1]):
            for largest in (True, False):
                key = -every.delta[:, column] if largest else every.delta[:, column]
                want = every.take(np.argsort(key, kind="stable")[:n])
                got = extreme_replica_moves(state, b, column, n, largest)
                for name in ("part", "slot", "src", "dst", "delta", "cost"):
                    assert np.array_equal(getattr(got, name), getattr(want, name)), (name, column)


def test_the_journal_tells_the_latest_actions_and_nothing_further_back() -> None:
    """What is kept up to date is rebuilt when more actions came since than the journal holds."""
    snap = snapshot([broker(b, "abc"[b % 3]) for b in range(3)], [partition("t", 0, [0])])
    state = WorkingModel(parse_snapshot(snap))
    for i in range(JOURNAL + 1):
        _apply(state, 0, 0, (i + 1) % 3)
        expected = [(0, j % 3, (j + 1) % 3) for j in range(i + 1)]
        assert state.journal.changes_since(0) == (expected if i < JOURNAL else None)
        assert state.journal.changes_since(state.journal.version - 1) == [(0, i % 3, (i + 1) % 3)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 39), max_size=40), st.integers(1, 4))
@example(ranks=list(range(1, 12)), limit=2)  # the best row live, the next eleven retired
def test_a_pools_order_after_retiring_rows_is_its_live_rows_ranked_anew(ranks: list[int], limit: int) -> None:
    """A shed's pool is ranked once and then only loses rows (drawn by their first rank, so that
    runs of retired rows sit right after live ones): asked after each retirement, its first rows
    are those of ranking its live rows anew."""
    parts = [partition(f"t{n % 3}", n, [0], disk=1e9 * (1 + (7 * n) % 40)) for n in range(40)]
    state = WorkingModel(parse_snapshot(snapshot([broker(b, "ab"[b % 2]) for b in range(3)], parts)))
    pool = Pool(replica_moves(state, 0), REPLICAS, Search(state).norm)
    c, need = pool.cands, 100.0
    first = preference(pool.benefit, c.cost, need, c.part, pool.side, pool.alive, len(c))
    for rank in ranks:
        pool.retire(int(c.part[first[rank]]))
        anew = preference(pool.benefit, c.cost, need, c.part, pool.side, pool.alive, len(c))
        assert pool.ordered(need, limit).tolist() == anew[:limit].tolist()


def _ranked(pool: Pool, need: float, across: bool) -> list[tuple[Any, ...]]:
    """A pool's live candidates in its order of preference, each as what defines the move."""
    c, rows = pool.cands, pool.ordered(need, len(pool.cands), across).tolist()
    return [
        (
            int(c.part[k]),
            int(c.slot[k]),
            int(c.src[k]),
            int(c.dst[k]),
            *c.delta[k].tolist(),
            float(pool.crossing[k]),
        )
        for k in rows
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_a_sheds_pool_after_a_swap_is_the_pool_built_anew(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    """``Search.shed`` keeps its broker's pool after an exchange of replicas or leaderships,
    retiring the partitions it changed and adding the one it brought, instead of building it
    anew: its live candidates, in the order a shed takes them, must be the rebuilt pool's."""
    state = moved_state(case)
    search = Search(state)
    for spec in priority_order(default_goal_set()):
        goal = build_goal(spec, state, racks_held=True)
        if not isinstance(goal, BandGoal):
            continue
        for b in range(state.n_brokers):
            pool = new_pool(search, goal, shed_candidates(search, goal, b))
            # Up to three swaps in a row on the kept pool, as a shed does while its broker is over.
            for _ in range(3):
                # Asked before the swap too, so that the kept pool's sorted orders are carried on.
                for across in (False, True):
                    _ranked(pool, 1e30, across)
                since = state.journal.version
                if not swap_with_partners(search, goal, b, over=True):
                    break
                kept = after_swap(search, goal, b, pool, since)
                assert kept is not None  # a swap is two actions: the journal keeps them
                pool = kept
                anew = new_pool(search, goal, shed_candidates(search, goal, b))
                for need in (1e-9, 1e30):
                    for across in (False, True):
                        assert _ranked(pool, need, across) == _ranked(anew, need, across), (goal, b)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=2, max_size=40),
    st.lists(st.integers(0, 39), max_size=20),
    st.integers(1, 39),
    st.lists(st.integers(1, 40), min_size=1, max_size=4),
)
def test_a_pool_extended_ranks_as_a_pool_built_of_all_its_rows(
    sizes: list[int], retired: list[int], split: int, limits: list[int]
) -> None:
    """``Pool.extended`` carries the pool's sorted orders over, each added row put where a sort
    of every row would rank it: after rows ranked before it, after rows tied with it on every
    key. Sizes of few values make ties common; half the rows leave their rack when moved; the
    added rows repeat the pool's last two, which then tie with them on every key."""
    parts = [partition(f"t{n % 2}", n, [0], disk=1e9 * size) for n, size in enumerate(sizes)]
    state = WorkingModel(parse_snapshot(snapshot([broker(b, "ab"[b % 2]) for b in range(3)], parts)))
    norm = Search(state).norm
    every = replica_moves(state, 0)
    leaving = np.where(np.arange(len(every)) % 2 == 0, state.disk[every.part], 0.0)
    split = min(split, len(every) - 1)
    first, rest = np.arange(split), np.arange(max(split - 2, 0), len(every))
    kept = Pool(every.take(first), REPLICAS, norm, leaving[first])
    both = np.concatenate([first, rest])
    anew = Pool(every.take(both), REPLICAS, norm, leaving[both])
    for across in (False, True):
        kept.ordered(1e30, 1, across)
    for p in retired:
        if p < split:
            kept.retire(p)
            anew.retire(p)
    grown = kept.extended(every.take(rest), leaving[rest])
    for p in retired:
        grown.retire(p)
        anew.retire(p)
    for limit, across in itertools.product(limits, (False, True)):
        assert grown.ordered(1e30, limit, across).tolist() == anew.ordered(1e30, limit, across).tolist()
