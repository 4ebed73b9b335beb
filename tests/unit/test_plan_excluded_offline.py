"""A replica of an excluded topic on an offline log dir leaves its broker like any other (Kafka
never brings it back there), and pruning leaves it where that put it: it raised an IndexError,
the undo candidates of the receiving broker leaving out excluded topics."""

from __future__ import annotations

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, LogDir, Partition, PartitionLoad
from kafka_balancer.planner.optimizer import plan

RACK = {0: "a", 1: "b", 2: "a", 3: "b"}


def test_an_excluded_replica_on_an_offline_log_dir_goes_to_its_rack_and_stays_there() -> None:
    # Broker 0's /d1 is offline; partition x-0 (excluded) has its leader there. The 23 other
    # partitions (RF 2, 4 GB) are spread so that brokers 0 and 2 need balancing moves.
    brokers = tuple(
        Broker(
            b,
            RACK[b],
            BrokerState.ACTIVE,
            (2e11, 1e8, 1e8, 4.0),
            log_dirs=(LogDir("/d0", 1e11), LogDir("/d1", 1e11, online=b != 0)),
        )
        for b in range(4)
    )
    parts = []
    for i in range(24):
        replicas = ((0, 1), (2, 3), (0, 3), (2, 1))[i % 4]
        dirs = tuple("/d1" if i == 0 else f"/d{i // 4 % 2}" for _ in replicas)
        load = PartitionLoad(4e9, 1e5, 1e5, 0.01)
        parts.append(Partition("x" if i == 0 else "t", i, replicas, replicas[0], load, i != 0, dirs))
    result = plan(Cluster(brokers, tuple(parts)), default_goal_set())
    [excluded] = [r for r in result.reassignments if r.topic == "x"]
    assert set(excluded.replicas) == {1, 2}
    assert [g.label for g in result.goals if not g.after.satisfied] == []
