"""A replica that no active broker may hold under a hard capacity goal is named at once, with what
it needs: the plan used to run to the end and then blame the broker it sat on."""

from __future__ import annotations

import pytest

from kafka_balancer.errors import InfeasibleError
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.planner.optimizer import plan


def _cluster(capacities: tuple[float, ...], big: float) -> Cluster:
    brokers = tuple(Broker(b, "a", BrokerState.ACTIVE, (c, 1e6, 1e6, 16.0)) for b, c in enumerate(capacities))
    small = tuple(
        Partition("small", i, (i % len(brokers),), i % len(brokers), PartitionLoad(1.0, 0.0, 0.0, 0.0))
        for i in range(6)
    )
    return Cluster(brokers, (Partition("big", 0, (0,), 0, PartitionLoad(big, 0.0, 0.0, 0.0)), *small))


def test_a_replica_larger_than_any_broker_may_hold_is_named_with_what_it_needs() -> None:
    with pytest.raises(InfeasibleError) as refused:
        plan(_cluster((100.0, 100.0, 100.0), 85.0), default_goal_set())

    assert str(refused.value) == (
        "hard goal DiskCapacity cannot be satisfied: partition big-0 alone needs 85.00% of the largest "
        "active broker's disk capacity, above the threshold of 80%"
    )


def test_a_replica_that_fits_a_larger_broker_is_moved_there() -> None:
    result = plan(_cluster((100.0, 100.0, 200.0), 85.0), default_goal_set())

    assert [(r.topic, r.partition, r.replicas) for r in result.reassignments if r.topic == "big"] == [
        ("big", 0, (2,))
    ]
    assert next(g for g in result.goals if g.label == "DiskCapacity").after.satisfied
