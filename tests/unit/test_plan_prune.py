"""No moved replica in a plan could go back home with every goal still met: the plan copies no
replica that the bands it met do not need (one undo at a time), and stays stable and the same."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate

# The planner benchmark's small cluster: hot and empty brokers, topics crowding a few brokers.
SPEC = SyntheticSpec(
    brokers=12,
    partitions=900,
    racks=3,
    hot_brokers=1,
    empty_brokers=1,
    seed=7,
    mean_partition_bytes=0.4 * 4.0e12 * 12 / (900 * 3),
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
