"""Racks of unequal capacity: brokers of twice the capacity fill one rack in six, so the other
racks' brokers shed a share of their load to it across racks, and more brokers share each rack
than a fill asks donors of or an exchange asks partners of. Every band is met (with a rack of
twelve brokers all over their disk band, a fill asked its own rack's brokers only, and an
exchange its own rack's: the plan met three of the distribution bands of seven)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate


def _twice(capacity: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    disk, network_in, network_out, cpu = capacity
    return 2 * disk, 2 * network_in, 2 * network_out, 2 * cpu


@pytest.mark.parametrize("brokers", [36, 60])
def test_a_rack_of_larger_brokers_takes_its_share_and_every_band_is_met(brokers: int) -> None:
    partitions = 3000 if brokers == 36 else 5000
    spec = SyntheticSpec(
        brokers=brokers,
        partitions=partitions,
        racks=6,
        replication_factor=3,
        hot_brokers=2,
        seed=7,
        mean_partition_bytes=0.4 * 4.0e12 * brokers / (partitions * 3),
    )
    cluster = generate(spec)
    # Rack b (brokers 1, 7, 13, ...) has twice the capacity of every other.
    doubled = tuple(replace(b, capacity=_twice(b.capacity)) if b.id % 6 == 1 else b for b in cluster.brokers)
    cluster = replace(cluster, brokers=doubled)
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    assert result.figures.cross_rack_bytes > 0
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0
