"""The clusters of real shape (issue 62) that the planner is benchmarked on must have the shape
the benchmark claims: unequal racks, an RF 3 / RF 2 mix, topics of 1 to 200 partitions, a
placement left by history, capacities respected, and the same cluster for the same seed."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from kafka_balancer.model.cluster import BrokerState, Cluster
from kafka_balancer_dev.real_shape import SIZES, RealShapeSpec, generate, history, sized

SMALL = SIZES["small"]
# Two generations and a rack that joins late, at a size a test generates in a blink.
TINY = replace(SMALL, topics=150, second_generation_era=2, seed=3)


@pytest.fixture(scope="module")
def small() -> Cluster:
    return generate(SMALL)


def test_racks_have_the_sizes_asked_for(small: Cluster) -> None:
    assert sorted(Counter(b.rack for b in small.brokers).values()) == sorted(SMALL.rack_sizes)


def test_topics_are_at_replication_factor_3_or_2_in_distinct_racks(small: Cluster) -> None:
    rack_of = {b.id: b.rack for b in small.brokers}
    rf_of_topic: dict[str, set[int]] = {}
    for p in small.partitions:
        assert len({rack_of[b] for b in p.replicas}) == len(p.replicas), p
        assert p.leader == p.replicas[0]
        rf_of_topic.setdefault(p.topic, set()).add(len(p.replicas))
    assert all(len(rfs) == 1 for rfs in rf_of_topic.values())
    share = sum(rfs == {2} for rfs in rf_of_topic.values()) / len(rf_of_topic)
    assert {rf for rfs in rf_of_topic.values() for rf in rfs} == {2, 3}
    assert abs(share - SMALL.rf2_share) < 0.1


def test_topics_have_1_to_200_partitions_most_of_them_few(small: Cluster) -> None:
    counts = Counter(p.topic for p in small.partitions)
    numbers: dict[str, set[int]] = {}
    for p in small.partitions:
        numbers.setdefault(p.topic, set()).add(p.partition)
    assert all(numbers[t] == set(range(n)) for t, n in counts.items())
    sizes = np.array(list(counts.values()))
    assert sizes.min() >= 1 and sizes.max() <= 200
    # Heavy-tailed: single-partition topics and topics near the cap, and most topics small.
    assert (sizes == 1).any() and (sizes > 150).any()
    assert np.median(sizes) < sizes.mean() / 1.5


def test_an_early_topic_has_no_replica_on_a_later_broker() -> None:
    cluster = generate(TINY)
    broker_era, topic_era = history(TINY)
    assert broker_era.min() < broker_era.max() and topic_era.min() < topic_era.max()
    for p in cluster.partitions:
        era = topic_era[int(p.topic.removeprefix("topic-"))]
        assert all(broker_era[b] <= era for b in p.replicas), p
    # The late rack holds none of the first era's topics.
    late_rack = {b.id for b in cluster.brokers if b.rack == "d"}
    first = [p for p in cluster.partitions if topic_era[int(p.topic.removeprefix("topic-"))] == 0]
    assert first and not any(set(p.replicas) & late_rack for p in first)


def test_later_brokers_are_of_the_second_generation() -> None:
    cluster = generate(TINY)
    broker_era, _ = history(TINY)
    first = np.array(TINY.capacity)
    for b in cluster.brokers:
        factors = TINY.second_generation_factors if broker_era[b.id] >= 2 else (1.0,) * 4
        assert b.capacity == pytest.approx(tuple(first * np.array(factors)))


def test_the_same_seed_gives_the_same_cluster() -> None:
    assert generate(TINY) == generate(TINY)
    assert generate(TINY) != generate(replace(TINY, seed=4))


def test_capacities_are_respected(small: Cluster) -> None:
    disk = dict.fromkeys((b.id for b in small.brokers), 0.0)
    for p in small.partitions:
        for b in p.replicas:
            disk[b] += p.load.disk
    capacity = {b.id: b.capacity for b in small.brokers}
    fill = [disk[b] / capacity[b][0] for b in capacity]
    assert max(fill) <= SMALL.max_disk_fill + 1e-9
    assert np.mean(fill) <= SMALL.disk_fill + 1e-9
    smallest = min(c[0] for c in capacity.values()), min(c[1] for c in capacity.values())
    assert max(p.load.disk for p in small.partitions) <= SMALL.partition_cap * smallest[0] + 1
    assert max(p.load.network_in for p in small.partitions) <= SMALL.partition_cap * smallest[1] + 1


def test_disk_and_network_do_not_go_together(small: Cluster) -> None:
    # Each topic has its own retention: per byte in, topics keep very different amounts on disk.
    per_byte = np.array([p.load.disk / p.load.network_in for p in small.partitions if p.load.network_in])
    assert np.percentile(per_byte, 95) / np.percentile(per_byte, 5) > 10


def test_a_scale_out_adds_empty_brokers_to_the_same_cluster(small: Cluster) -> None:
    grown = generate(sized("small", "scale-out"))
    added = grown.brokers[len(small.brokers) :]
    assert grown.partitions == small.partitions
    assert grown.brokers[: len(small.brokers)] == small.brokers
    assert added and all(b.state is BrokerState.ACTIVE for b in added)
    assert len({b.rack for b in added}) == min(len(added), len(SMALL.rack_sizes))


def test_a_decommission_drains_the_oldest_brokers(small: Cluster) -> None:
    spec = sized("small", "decommission")
    drained = generate(spec)
    assert drained.partitions == small.partitions
    leaving = [b.id for b in drained.brokers if b.state is BrokerState.DRAINING]
    assert leaving == list(range(spec.draining)) and spec.draining > 0
    held = {b for p in drained.partitions for b in p.replicas}
    assert set(leaving) <= held


def test_a_rack_layout_without_3_racks_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer than 3 racks"):
        generate(RealShapeSpec(rack_sizes=(4, 4), rack_eras=(0, 0), topics=5, mean_partitions=4.0))


def test_replicas_come_to_topics_times_mean_partitions_times_mean_rf(small: Cluster) -> None:
    # What the named sizes' replica counts below are computed from.
    replicas = sum(len(p.replicas) for p in small.partitions)
    assert replicas == pytest.approx(_expected_replicas(SMALL), rel=0.1)


@pytest.mark.parametrize(
    ("name", "brokers", "replicas"), [("mid", 240, 2.6e5), ("base", 240, 1.3e6), ("xlarge", 360, 2.8e6)]
)
def test_named_sizes_are_the_issues(name: str, brokers: int, replicas: float) -> None:
    assert SIZES[name].brokers == brokers
    assert _expected_replicas(SIZES[name]) == pytest.approx(replicas, rel=0.05)


def _expected_replicas(spec: RealShapeSpec) -> float:
    return spec.topics * spec.mean_partitions * (3 - spec.rf2_share)
