"""A broker whose rack has no room sheds across racks the replica that copies the fewest bytes
moved and across together: a replica the plan already moved within its rack costs no more bytes
to send on, but every one of its bytes across, so it is not free when it leaves the rack."""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.plan import diff
from kafka_balancer.planner.search import Search

RACK = {0: "a", 1: "a", 2: "b", 3: "b"}
# (topic, bytes, broker) of single-replica partitions: "moved" starts on broker 1 and the plan
# moves it to broker 0 before the shed.
LAYOUT = (
    ("moved", 10.0, 1),
    ("small", 3.0, 0),
    ("small", 3.0, 0),
    ("rest", 96.0, 0),
    ("rest", 110.0, 1),
    ("rest", 88.0, 2),
    ("rest", 90.0, 3),
)


def test_a_shed_across_racks_sends_a_small_unmoved_replica_rather_than_one_moved_within_the_rack() -> None:
    # Disk band 90..110 (mean 100), target band 91..109. After the first move broker 0 holds
    # 112 and broker 1 110: rack a has no room, so broker 0 sheds 3 to broker 2 (rack b, 88).
    # The moved replica (10) cost 0 bytes moved and went across; a small one moves 3 and 3 across.
    brokers = tuple(Broker(b, RACK[b], BrokerState.ACTIVE, (1000.0, 1e3, 1e3, 1.0)) for b in range(4))
    parts = tuple(
        Partition(topic, i, (b,), b, PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, (topic, disk, b) in enumerate(LAYOUT)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    assert isinstance(goal, BandGoal)
    state.apply(replica_moves(state, 1, np.array([0])), 0, 0)
    assert Search(state, [], []).shed(goal, 0)
    assert goal.status(state).satisfied
    figures = diff(state)[1]
    assert int(state.replicas[0, 0]) == 0, "the replica moved within rack a stays there"
    assert (figures.bytes_moved, figures.cross_rack_bytes) == (13.0, 3.0)
