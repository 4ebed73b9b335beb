"""A disk shed that must leave its rack goes to a rack that must be fed from others before one with
room of its own: sent to a rack with room, it leaves the short rack to take yet another replica
across, and the plan copies across racks what a single move would have carried."""

from __future__ import annotations

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.plan import diff
from kafka_balancer.planner.search import Search

RACK = {0: "a", 1: "a", 2: "b", 3: "c", 4: "c"}
# (topic, bytes, brokers); the first replica leads. Disk per broker: 115, 109, 97, 93, 86 (mean
# 100, band 90..110, target band 91..109).
LAYOUT: tuple[tuple[str, float, tuple[int, ...]], ...] = (
    ("shed", 7.0, (0, 4)),
    ("rest", 108.0, (0,)),
    ("rest", 109.0, (1,)),
    ("rest", 92.0, (2,)),
    ("small", 5.0, (2,)),
    ("rest", 88.0, (3,)),
    ("small", 5.0, (3,)),
    ("rest", 79.0, (4,)),
)


def _cluster() -> tuple[WorkingModel, BandGoal]:
    brokers = tuple(Broker(b, RACK[b], BrokerState.ACTIVE, (1000.0, 1e3, 1e3, 1.0)) for b in range(5))
    parts = tuple(
        Partition(topic, i, replicas, replicas[0], PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, (topic, disk, replicas) in enumerate(LAYOUT)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    assert isinstance(goal, BandGoal)
    assert not goal.status(state).satisfied
    return state, goal


def test_a_shed_across_racks_goes_to_the_rack_short_of_its_floors() -> None:
    # Broker 0 must shed 6 and its rack mate has no room: "shed" (7) leaves rack a. Brokers 2
    # (rack b) and 3 (rack c) take it equally well, and 2 has the lower number. But rack c holds 1
    # less than its brokers' floors add up to (broker 4 lacks 4, broker 3 has 3 to spare): sent to
    # broker 3, broker 4 is then filled from broker 3 within rack c; sent to broker 2, broker 4 is
    # filled from broker 2, across racks.
    state, goal = _cluster()

    goal.optimize(state, Search(state, [], []))

    assert goal.status(state).satisfied
    assert sorted(int(b) for b in state.replicas[0] if b >= 0) == [3, 4]
    assert int(state.replicas[6, 0]) == 4, "broker 4 is filled from its rack mate"
    figures = diff(state)[1]
    assert (figures.bytes_moved, figures.cross_rack_bytes) == (12.0, 7.0)


def test_one_broker_shed_across_racks_goes_to_the_rack_short_of_its_floors() -> None:
    # The same choice made by one broker's shed (its candidates one at a time) rather than by
    # the sheds in rounds that the goal starts with.
    state, goal = _cluster()

    assert Search(state, [], []).shed(goal, 0)

    assert sorted(int(b) for b in state.replicas[0] if b >= 0) == [3, 4]
