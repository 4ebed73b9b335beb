"""A replica the plan copies across racks comes back into its rack in exchange for a replica of
its topic less than half its size going across instead, the smallest that fits: fewer bytes
across racks, fewer bytes moved and across together, the topic cells and every band as they
were."""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.plan import diff
from kafka_balancer.planner.prune import prune

RACK = {0: "a", 1: "a", 2: "b"}


def planned(
    layout: tuple[tuple[str, float, int], ...], room_on_1: float = 100.0, drained: bool = False
) -> tuple[WorkingModel, list[Goal]]:
    """``layout``: (topic, bytes, broker) of single-replica partitions, the first p on broker 0.
    Broker 0 (rack a) holds no more than 5 bytes, so p (8 bytes) can neither stay nor come home;
    broker 1 (rack a) holds ``room_on_1``, broker 2 (rack b) 100. The plan sends p to broker 2,
    across racks. ``drained``: broker 0 is draining, and the partitions are of topics the plan
    may not move (only a drain moves them)."""
    capacity = {0: 5.0, 1: room_on_1, 2: 100.0}
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
    state.apply(state.replica_moves(0, np.array([0]), every=True), 0, 2)
    assert goals[0].status(state).satisfied
    return state, goals


def test_a_replica_copied_across_racks_trades_places_with_the_smallest_of_its_topic_in_its_rack() -> None:
    # q (3 bytes) and r (1.5) are less than half of p's 8; s (5) is not; u (1) is of another topic.
    state, goals = planned((("t", 8.0, 0), ("t", 3.0, 1), ("t", 1.5, 1), ("t", 5.0, 1), ("u", 1.0, 1)))
    assert diff(state)[1].cross_rack_bytes == 8.0

    prune(state, goals)

    assert goals[0].status(state).satisfied
    assert [int(state.replicas[p, 0]) for p in range(5)] == [1, 1, 2, 1, 1]
    figures = diff(state)[1]
    assert figures.cross_rack_bytes == 1.5
    assert figures.bytes_moved == 9.5


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
