"""A replica the plan copies across racks comes back into its rack: alone when a broker of the rack
may take it (the same bytes moved, none across), else in exchange for a replica of its topic less
than half its size going across instead, the smallest that fits, or making way for one: fewer
bytes across racks, fewer bytes moved and across together, the topic cells and every band as they
were."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.plan import diff
from kafka_balancer.planner.prune import prune

RACK = {0: "a", 1: "a", 2: "b"}


def _counted(spec_count: int, state: WorkingModel) -> Goal:
    """A ReplicaCapacity of ``spec_count`` replicas a broker."""
    spec = GoalSpec.default(GoalType.REPLICA_CAPACITY, max_replicas_per_broker=spec_count)
    return build_goal(spec, state)


def planned(
    layout: tuple[tuple[str, float, int], ...],
    room_on_1: float = 100.0,
    drained: bool = False,
    full_count: bool = True,
    room_on_0: float = 5.0,
    in_rack: int | None = None,
) -> tuple[WorkingModel, list[Goal]]:
    """``layout``: (topic, bytes, broker) of single-replica partitions, the first p on broker 0.
    Broker 0 (rack a) holds ``room_on_0`` (5 bytes), so p (8 bytes) can neither stay nor come home;
    broker 1 (rack a) holds ``room_on_1``, broker 2 (rack b) 100. The plan sends p to broker 2,
    across racks. ``full_count``: a broker holds no more replicas than broker 1 has, so p comes
    into rack a only in exchange (as a full topic cell keeps it out in a real plan).
    ``drained``: broker 0 is draining, and the partitions are of topics the plan may not move
    (only a drain moves them). ``in_rack``: the plan also moves that partition from broker 0 to
    broker 1, and a broker holds one more replica than broker 1 had."""
    capacity = {0: room_on_0, 1: room_on_1, 2: 100.0}
    states = {
        0: BrokerState.DRAINING if drained else BrokerState.ACTIVE,
        1: BrokerState.ACTIVE,
        2: BrokerState.ACTIVE,
    }
    brokers = tuple(Broker(b, RACK[b], states[b], (capacity[b], 1e3, 1e3, 1.0)) for b in range(3))
    parts = tuple(
        Partition(topic, i, (b,), b, PartitionLoad(disk, 0.0, 0.0, 0.0), movable=not drained)
        for i, (topic, disk, b) in enumerate(layout)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goals = [build_goal(GoalSpec.default(GoalType.DISK_CAPACITY, threshold_percent=100), state)]
    if full_count:
        goals.append(_counted(sum(1 for _, _, b in layout if b == 1) + (in_rack is not None), state))
    state.apply(replica_moves(state, 0, np.array([0]), every=True), 0, 2)
    if in_rack is not None:
        state.apply(replica_moves(state, 0, np.array([in_rack])), 0, 1)
    assert all(goal.status(state).satisfied for goal in goals)
    return state, goals


def test_a_replica_copied_across_racks_trades_places_with_the_smallest_of_its_topic_in_its_rack() -> None:
    # q (3 bytes) and r (1.5) are less than half of p's 8; s (5) is not; u (1) is of another topic.
    state, goals = planned((("t", 8.0, 0), ("t", 3.0, 1), ("t", 1.5, 1), ("t", 5.0, 1), ("u", 1.0, 1)))
    assert diff(state)[1].cross_rack_bytes == 8.0

    prune(state, goals)

    assert all(goal.status(state).satisfied for goal in goals)
    assert [int(state.replicas[p, 0]) for p in range(5)] == [1, 1, 2, 1, 1]
    figures = diff(state)[1]
    assert figures.cross_rack_bytes == 1.5
    assert figures.bytes_moved == 9.5


def test_a_replica_the_plan_moved_within_the_rack_may_go_across_instead() -> None:
    # Broker 0 holds 2 bytes: q (3) must leave it too, and the plan sends q to broker 1, in rack
    # a. Broker 1 holds two replicas at most (u and q), so p comes back only in q's place.
    state, goals = planned((("t", 8.0, 0), ("t", 3.0, 0), ("u", 1.0, 1)), room_on_0=2.0, in_rack=1)
    assert diff(state)[1].bytes_moved == 11.0
    assert diff(state)[1].cross_rack_bytes == 8.0

    prune(state, goals)

    assert all(goal.status(state).satisfied for goal in goals)
    assert [int(state.replicas[p, 0]) for p in range(2)] == [1, 2]
    figures = diff(state)[1]
    assert figures.cross_rack_bytes == 3.0
    assert figures.bytes_moved == 11.0


def test_no_replica_of_its_topic_half_its_size_leaves_it_across() -> None:
    state, goals = planned((("t", 8.0, 0), ("t", 4.0, 1), ("u", 1.0, 1)))

    prune(state, goals)

    assert [int(state.replicas[p, 0]) for p in range(3)] == [2, 1, 1]
    assert diff(state)[1].cross_rack_bytes == 8.0


def test_a_trade_the_bands_refuse_is_not_made() -> None:
    # Broker 1 has room for 10 bytes: with p (8) instead of r (1.5) it would hold 11.5.
    state, goals = planned((("t", 8.0, 0), ("t", 1.5, 1), ("u", 2.0, 1)), room_on_1=10.0)

    prune(state, goals)

    assert [int(state.replicas[p, 0]) for p in range(3)] == [2, 1, 1]


def test_a_replica_the_plan_may_not_move_stays_where_a_drain_sent_it() -> None:
    # Of a topic the plan leaves alone: only the drain of broker 0 moves it (here across racks).
    state, goals = planned((("t", 8.0, 0), ("t", 1.0, 1)), drained=True)

    prune(state, goals)

    assert [int(state.replicas[p, 0]) for p in range(2)] == [2, 1]


def test_a_replica_a_broker_of_its_rack_may_take_comes_back_alone() -> None:
    # Broker 1 may hold any number of replicas: p goes there, copied as far but not across.
    state, goals = planned((("t", 8.0, 0), ("t", 3.0, 1), ("u", 1.0, 1)), full_count=False)

    prune(state, goals)

    assert all(goal.status(state).satisfied for goal in goals)
    assert [int(state.replicas[p, 0]) for p in range(3)] == [1, 1, 1]
    figures = diff(state)[1]
    assert figures.cross_rack_bytes == 0.0
    assert figures.bytes_moved == 8.0


def relayed(
    room_on_3: float, room_on_1: float = 100.0, partner: float | None = None
) -> tuple[WorkingModel, list[Goal]]:
    """p (8 bytes, topic t) on broker 0 (rack a, room for 2) must leave; the plan sends it to
    broker 2 (rack b). q (3 bytes, t) has replicas on broker 1 (rack a, room for ``room_on_1``)
    and on broker 2, so the exchange of p and q between 1 and 2 is refused (2 holds q already).
    Broker 3 (rack c) holds ``room_on_3``; u (1 byte, topic v) stays on broker 1. A broker holds
    as many replicas as broker 1 has at most, so p comes into rack a only in place of one.
    ``partner``: broker 1 also holds s, a replica of t of that size, which may be exchanged."""
    racks = {0: "a", 1: "a", 2: "b", 3: "c"}
    capacity = {0: 2.0, 1: room_on_1, 2: 100.0, 3: room_on_3}
    brokers = tuple(Broker(b, racks[b], BrokerState.ACTIVE, (capacity[b], 1e3, 1e3, 1.0)) for b in range(4))
    layout: tuple[tuple[str, float, tuple[int, ...]], ...] = (
        ("t", 8.0, (0,)),
        ("t", 3.0, (1, 2)),
        ("v", 1.0, (1,)),
    )
    if partner is not None:
        layout = (*layout, ("t", partner, (1,)))
    parts = tuple(
        Partition(topic, i, replicas, replicas[0], PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, (topic, disk, replicas) in enumerate(layout)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goals = [build_goal(GoalSpec.default(GoalType.DISK_CAPACITY, threshold_percent=100), state)]
    goals.append(_counted(len(layout) - 1, state))
    state.apply(replica_moves(state, 0, np.array([0])), 0, 2)
    assert all(goal.status(state).satisfied for goal in goals)
    return state, goals


def _brokers_of(state: WorkingModel, p: int) -> set[int]:
    return {int(b) for b in state.replicas[p] if b >= 0}


@pytest.mark.parametrize(
    "partner",
    [
        None,  # no exchange is allowed: broker 2 holds q already
        3.5,  # s (3.5 bytes) could trade places with p, but q (3) is smaller and can make way
    ],
)
def test_a_small_replica_makes_way_for_p_by_going_to_a_third_rack(partner: float | None) -> None:
    state, goals = relayed(room_on_3=100.0, partner=partner)
    assert diff(state)[1].cross_rack_bytes == 8.0

    prune(state, goals)

    assert all(goal.status(state).satisfied for goal in goals)
    assert _brokers_of(state, 0) == {1}
    assert _brokers_of(state, 1) == {2, 3}
    assert _brokers_of(state, 2) == {1}
    if partner is not None:
        assert _brokers_of(state, 3) == {1}
    figures = diff(state)[1]
    assert figures.cross_rack_bytes == 3.0
    assert figures.bytes_moved == 11.0


@pytest.mark.parametrize(
    ("room_on_3", "room_on_1"),
    [
        (2.0, 100.0),  # q (3 bytes) fits nowhere but where it is
        (100.0, 8.0),  # q can go to broker 3, but p (8) and u (1) would not fit in broker 1's 8
    ],
)
def test_a_relay_that_cannot_be_completed_leaves_everything_as_it_was(
    room_on_3: float, room_on_1: float
) -> None:
    state, goals = relayed(room_on_3, room_on_1)
    before = state.replicas.copy(), state.leader_slot.copy()

    prune(state, goals)

    assert all(goal.status(state).satisfied for goal in goals)
    assert np.array_equal(state.replicas, before[0])
    assert np.array_equal(state.leader_slot, before[1])
    assert not state.moved[1:].any()
    assert diff(state)[1].cross_rack_bytes == 8.0
