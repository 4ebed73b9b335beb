"""Moves placed apart, many from one evaluation, must each be one ``place`` would make when applied.

``Search.place_apart`` (TopicReplicaDistribution's sheds) and ``Search.shed_apart`` (a band goal's)
judge a batch of candidates once and then apply several of them, skipping any whose partition,
source or best destinations an earlier move of the batch touched. Each move applied must pass every
veto, improve the goal and go to a destination ranked as high as the one ``place`` would choose
among the brokers the batch has not touched, all on the state at the moment it is applied.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import EPSILON, Goal
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.candidate_moves import slot_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.math import BoolArray
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.vetoes import TOLERANCE
from tests.unit.clusters import broker, partition, snapshot
from tests.unit.search.test_kept_state_equals_rebuilt import moved_clusters, moved_state


def _searched(state: WorkingModel, kind: GoalType) -> tuple[Goal, Search]:
    """The default set's goal of type ``kind``, and its search as the optimizer builds it (the
    goals before it veto, the soft goals after it are still to come)."""
    goals = [build_goal(spec, state) for spec in priority_order(default_goal_set())]
    i = next(n for n, g in enumerate(goals) if g.spec.type is kind)
    goal = goals[i]
    vetoes = [g for g in goals[:i] if not g.hard] + [g for g in goals if g.hard and g is not goal]
    return goal, Search(state, vetoes, [g for g in goals[i + 1 :] if not g.hard])


def _in_rack_short_of_disk(state: WorkingModel, goal: Goal) -> BoolArray:
    """``[brokers]``: for a disk goal, whether the broker's rack holds less than its active
    brokers' band floors add up to (a move across racks goes to such a rack first)."""
    if not isinstance(goal, BandGoal) or goal.column != Resource.DISK:
        return np.zeros(state.n_brokers, dtype=bool)
    floor, _ = goal.band_edges(False)
    held, floors = np.zeros(len(state.rack_names)), np.zeros(len(state.rack_names))
    for b in np.nonzero(state.active)[0]:
        held[state.rack[b]] += state.quantity(goal.column)[b]
        floors[state.rack[b]] += floor[b]
    return np.asarray((held < floors)[state.rack], dtype=bool)


def _checking(state: WorkingModel, goal: Goal, search: Search) -> list[tuple[int, int]]:
    """Replaces ``state.apply`` with one that first checks, on the state at that moment, that
    the move passes every veto, improves the goal and goes to a destination ranked as high as
    the one ``place`` would choose among the brokers no earlier move of the call touched (a
    touched broker may have become a better destination meanwhile: the call never looks at it
    again); the (partition, source) of every move applied, in order."""
    applied: list[tuple[int, int]] = []
    touched = np.zeros(state.n_brokers, dtype=bool)
    # The call's ``in_rack`` (None: every candidate may leave its rack).
    kept_in: list[BoolArray | None] = [None]
    apply = state.apply

    def checked(c: Candidates, k: int, y: int) -> None:
        row = c.take(np.array([k]))
        allowed = search.allowed(row)[0]
        in_rack = kept_in[0]
        if in_rack is not None and in_rack[k]:
            allowed &= state.rack == state.rack[row.src[0]]
        assert allowed[y] and not touched[y]
        src, dst = goal.evaluate(state, row, target=True)
        ok = allowed & (
            ((src[0] < -EPSILON) & (dst[0] <= TOLERANCE)) | ((dst[0] < -EPSILON) & (src[0] <= TOLERANCE))
        )
        assert ok[y]
        ys = np.nonzero(ok & ~touched)[0]
        other_rack = state.rack != state.rack[row.src[0]]
        unfed = ~_in_rack_short_of_disk(state, goal)
        gain, later = src[0] + dst[0], search.later_cost(row)[0]
        best = int(ys[np.lexsort((ys, later[ys], gain[ys], unfed[ys], other_rack[ys]))[0]])
        assert (other_rack[y], unfed[y], gain[y], later[y]) == (
            other_rack[best],
            unfed[best],
            gain[best],
            later[best],
        )
        applied.append((int(row.part[0]), int(row.src[0])))
        touched[[int(row.src[0]), y]] = True
        apply(c, k, y)

    judge = search.apart

    def one_call(
        goal: Goal, cands: Candidates, in_order: bool, in_rack: BoolArray | None = None
    ) -> tuple[list[int], BoolArray]:
        touched[:] = False
        kept_in[0] = in_rack
        return judge(goal, cands, in_order, in_rack)

    # Instances' methods, replaced for this test.
    setattr(state, "apply", checked)  # noqa: B010
    setattr(search, "apart", one_call)  # noqa: B010
    return applied


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters(), st.randoms(use_true_random=False), st.booleans())
def test_each_move_placed_apart_is_acceptable_and_ranked_best_when_applied(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]], rng: random.Random, some_in_rack: bool
) -> None:
    state = moved_state(case)
    goal, search = _searched(state, GoalType.TOPIC_REPLICA_DISTRIBUTION)
    assert isinstance(goal, TopicReplicaDistributionGoal)
    parts, slots = np.nonzero(state.replicas >= 0)
    cands = slot_moves(state, parts, slots)
    in_rack = np.array([rng.random() < 0.5 for _ in parts], dtype=bool) if some_in_rack else None
    applied = _checking(state, goal, search)

    count, refused = search.place_apart(goal, cands, in_rack)

    assert count == len(applied)
    assert len({p for p, _ in applied}) == count
    rows = [int(np.nonzero((cands.part == p) & (cands.src == x))[0][0]) for p, x in applied]
    assert not refused[rows].any()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters(), st.sampled_from([GoalType.REPLICA_DISTRIBUTION, GoalType.DISK_DISTRIBUTION]))
def test_each_move_shed_apart_is_acceptable_and_ranked_best_when_applied(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]], kind: GoalType
) -> None:
    """A band goal's sheds in rounds: every move passes every veto, improves the goal and goes
    where ``place`` would send it, on the state it is applied to; moves come only off the over
    brokers."""
    state = moved_state(case)
    goal, search = _searched(state, kind)
    assert isinstance(goal, BandGoal)
    q = state.quantity(goal.column)
    over = [b for b in np.argsort(-goal.needs_fix(state), kind="stable").tolist() if q[b] > goal.hi[b]]
    applied = _checking(state, goal, search)

    moved = search.shed_apart(goal, over)

    assert moved == bool(applied)
    assert {x for _, x in applied} <= set(over)


def test_sheds_apart_move_many_replicas_off_several_over_brokers_in_few_rounds() -> None:
    """Two brokers of rack a hold 40 single-replica partitions each, four hold none: the rounds
    bring both into ReplicaDistribution's band, several moves per round."""
    brokers = [broker(b, "a") for b in range(6)]
    parts = [partition(f"t{b}", n, [b], disk=1e9 + n) for b in range(2) for n in range(40)]
    state = WorkingModel(parse_snapshot(snapshot(brokers, parts)))
    goal, search = _searched(state, GoalType.REPLICA_DISTRIBUTION)
    assert isinstance(goal, BandGoal)

    assert search.shed_apart(goal, [0, 1])

    counts = state.replica_count.tolist()
    assert max(counts[:2]) <= goal.hi[0] and sum(counts) == 80, counts
    assert search.actions == 80 - sum(counts[:2])


def test_a_round_ranks_each_move_by_the_racks_as_the_moves_before_it_left_them() -> None:
    """Disk band 90..110 (mean 100), target band 91..109. Brokers 0 and 1 (rack a, 119 each) shed
    7 each across racks in one round. Rack c (88 and 88) holds 4 less than its floors add up to,
    rack b (86 and 100) does not. The first move goes to rack c (to broker 3, which gains as much
    as broker 4, and is numbered first) and fills it; the second, ranked after it, finds rack c no
    longer short and goes to broker 2, which gains the most, as ``place`` would send it."""
    racks = {0: "a", 1: "a", 2: "b", 3: "c", 4: "c", 5: "b"}
    layout = ((7.0, 0), (112.0, 0), (7.0, 1), (112.0, 1), (86.0, 2), (88.0, 3), (88.0, 4), (100.0, 5))
    brokers = tuple(Broker(b, racks[b], BrokerState.ACTIVE, (1000.0, 1e3, 1e3, 1.0)) for b in range(6))
    parts = tuple(
        Partition("t", i, (b,), b, PartitionLoad(disk, 0.0, 0.0, 0.0)) for i, (disk, b) in enumerate(layout)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    assert isinstance(goal, BandGoal)
    search = Search(state, [], [])
    applied = _checking(state, goal, search)

    assert search.shed_apart(goal, [0, 1])

    assert applied[:2] == [(0, 0), (2, 1)]
    assert (int(state.replicas[0, 0]), int(state.replicas[2, 0])) == (3, 2)


def test_a_broker_whose_first_choices_no_broker_takes_sheds_its_next_in_the_rounds() -> None:
    """Broker 0 holds two large partitions with a replica on every broker (no destination can take
    them, and their size ranks them first) and twelve small ones of its own: the rounds pass over
    the two and shed the small ones, instead of dropping broker 0 at its first refused head."""
    brokers = [broker(b, "a") for b in range(4)]
    shared = [partition("wide", n, [0, 1, 2, 3], disk=10e9) for n in range(2)]
    own = [partition("own", n, [0], disk=5e9 + n) for n in range(12)]
    state = WorkingModel(parse_snapshot(snapshot(brokers, shared + own)))
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    assert isinstance(goal, BandGoal)
    search = Search(state, [], [])
    disk = state.quantity(goal.column)
    assert disk[0] > goal.hi[0]
    applied = _checking(state, goal, search)

    assert search.shed_apart(goal, [0])

    assert disk[0] <= goal.aim_hi[0], disk
    assert applied and {p for p, _ in applied} <= set(range(2, 14)), applied
    assert [int(r) for r in state.replicas[:2, :4].ravel()] == [0, 1, 2, 3] * 2
