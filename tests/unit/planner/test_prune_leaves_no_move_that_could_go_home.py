"""No moved replica in a plan could go back home with every goal still met: the plan copies no
replica that the bands it met do not need (one undo at a time), and stays stable and the same."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.optimizer import plan
from kafka_balancer.planner.prune import prune
from kafka_balancer_dev.synthetic import SyntheticSpec, generate

# The planner benchmark's small cluster: hot and empty brokers, topics crowding a few brokers.
SPEC = SyntheticSpec.filled(
    12,
    900,
    racks=3,
    hot_brokers=1,
    empty_brokers=1,
    seed=7,
)


def planned(cluster: Cluster) -> Cluster:
    result = plan(cluster, default_goal_set())
    new = {(r.topic, r.partition): r.replicas for r in result.reassignments.reassignments}
    parts = tuple(
        replace(p, replicas=new[(p.topic, p.partition)], leader=new[(p.topic, p.partition)][0])
        if (p.topic, p.partition) in new
        else p
        for p in cluster.partitions
    )
    return replace(cluster, partitions=parts)


def all_met(cluster: Cluster) -> bool:
    state = WorkingModel(cluster)
    specs = tuple(s for s in default_goal_set() if not s.type.intra_broker)
    return all(build_goal(s, state).status(state).satisfied for s in specs)


def test_no_moved_replica_could_go_home() -> None:
    before = generate(SPEC)
    after = planned(before)
    assert all_met(after)
    homes = {(p.topic, p.partition): p.replicas for p in before.partitions}
    undoable = []
    for i, p in enumerate(after.partitions):
        old = homes[(p.topic, p.partition)]
        for now in (b for b in p.replicas if b not in old):
            for was in (b for b in old if b not in p.replicas):
                back = tuple(was if b == now else b for b in p.replicas)
                parts = (*after.partitions[:i], replace(p, replicas=back, leader=back[0]))
                if all_met(replace(after, partitions=parts + after.partitions[i + 1 :])):
                    undoable.append((p.name, now, was))
    assert undoable == []
    assert plan(after, default_goal_set()).reassignments.reassignments == ()
    assert planned(before) == after


def test_no_two_moved_replicas_could_trade_back_home() -> None:
    # A replica moved h → a and one moved a → h: going home together keeps both brokers' counts
    # and changes their loads by the difference only, where going home alone may leave a band.
    before = generate(SPEC)
    after = planned(before)
    homes = {(p.topic, p.partition): p.replicas for p in before.partitions}
    moved = [
        (i, now, was)
        for i, p in enumerate(after.partitions)
        for now in p.replicas
        if now not in (old := homes[(p.topic, p.partition)])
        for was in old
        if was not in p.replicas
    ]
    assert moved
    tradable = []
    for n, (i, now, was) in enumerate(moved):
        for j, other_now, other_was in moved[n + 1 :]:
            if (other_now, other_was) != (was, now) or i == j:
                continue
            parts = list(after.partitions)
            for k, a, h in ((i, now, was), (j, other_now, other_was)):
                back = tuple(h if b == a else b for b in parts[k].replicas)
                parts[k] = replace(parts[k], replicas=back, leader=back[0])
            if all_met(replace(after, partitions=tuple(parts))):
                tradable.append((after.partitions[i].name, after.partitions[j].name, now, was))
    assert tradable == []


def test_a_move_that_cannot_go_home_alone_gives_way_to_a_smaller_one() -> None:
    # Broker 0: p 5, q 3, s 4; broker 1: r 4. DiskDistribution ±20 % is 6.4 .. 9.6 on each. Moving
    # p (5 bytes) meets it, p cannot go home alone (12 on broker 0), but p home and q (3 bytes)
    # moving instead meets it too with 2 bytes fewer; s instead would save only 1.
    layout = (("p", 5.0, 0), ("q", 3.0, 0), ("s", 4.0, 0), ("r", 4.0, 1))
    brokers = tuple(Broker(b, "a", BrokerState.ACTIVE, (1e3, 1e3, 1e3, 1.0)) for b in range(2))
    parts = tuple(
        Partition(topic, 0, (b,), b, PartitionLoad(disk, 0.0, 0.0, 0.0)) for topic, disk, b in layout
    )
    state = WorkingModel(Cluster(brokers, parts))
    goals = [build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION, range_percent=20), state)]
    state.apply(replica_moves(state, 0, np.array([0])), 0, 1)
    assert goals[0].status(state).satisfied
    prune(state, goals)
    assert goals[0].status(state).satisfied
    assert [state.names[p][0] for p in np.nonzero(state.moved.any(axis=1))[0]] == ["q"]
    assert state.replicas[1, 0] == 1


def test_a_move_the_topic_cells_keep_away_gives_way_to_a_smaller_one_of_its_topic() -> None:
    # Topic t's four partitions all start on broker 0; its band is 1..3 per broker. Moving p (5
    # bytes) meets it, p cannot go home alone (4 on broker 0), but p home and q (3 bytes, the
    # same topic) moving instead keeps both cells and saves 2 bytes; a partner of another topic
    # would leave broker 0 with 4 of t, the others of t save less.
    layout = (("t", 5.0, 0), ("t", 3.0, 0), ("t", 4.0, 0), ("t", 4.5, 0), ("u", 2.0, 0), ("v", 1.0, 1))
    brokers = tuple(Broker(b, "a", BrokerState.ACTIVE, (1e3, 1e3, 1e3, 1.0)) for b in range(2))
    parts = tuple(
        Partition(topic, i, (b,), b, PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, (topic, disk, b) in enumerate(layout)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goal = build_goal(GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION, range_percent=50), state)
    assert not goal.status(state).satisfied
    state.apply(replica_moves(state, 0, np.array([0])), 0, 1)
    assert goal.status(state).satisfied
    prune(state, [goal])
    assert goal.status(state).satisfied
    assert [state.names[p] for p in np.nonzero(state.moved.any(axis=1))[0]] == [("t", 1)]
    assert state.replicas[1, 0] == 1


def test_same_topic_exchanges_are_asked_of_every_moved_replica_not_only_the_largest() -> None:
    # 34 topics of two single-replica partitions, both on broker 0 (topic band 1..1 per broker),
    # the larger of each moved to broker 1. Each could go home in exchange for its topic's smaller
    # one; broker 0 has 5 bytes of disk capacity left, so only the exchange that adds 1 byte fits,
    # that of the smallest moved replica: the 34th asked, after the 32 largest found nothing.
    layout = [(100.0 + i, 90.0 + i) for i in range(33)] + [(50.0, 49.0)]
    brokers = (
        Broker(0, "a", BrokerState.ACTIVE, (sum(s for _, s in layout) + 5.0, 1e3, 1e3, 1.0)),
        Broker(1, "a", BrokerState.ACTIVE, (1e6, 1e3, 1e3, 1.0)),
    )
    parts = tuple(
        Partition(f"t{i}", n, (0,), 0, PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, sizes in enumerate(layout)
        for n, disk in enumerate(sizes)
    )
    state = WorkingModel(Cluster(brokers, parts))
    goals = [
        build_goal(GoalSpec.default(GoalType.DISK_CAPACITY, threshold_percent=100), state),
        build_goal(GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION, range_percent=0), state),
    ]
    larger = np.array([2 * i for i in range(len(layout))])
    for p in larger:
        state.apply(replica_moves(state, 0, np.array([p])), 0, 1)
    assert all(g.status(state).satisfied for g in goals)

    prune(state, goals)

    assert all(g.status(state).satisfied for g in goals)
    moved = [state.names[p] for p in np.nonzero(state.moved.any(axis=1))[0]]
    assert moved == [(f"t{i}", 0) for i in range(33)] + [("t33", 1)]
