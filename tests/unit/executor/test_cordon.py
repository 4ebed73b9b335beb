"""Cordoning the brokers a pool drains (kafka/cordon.py), against the in-memory fake cluster."""

from __future__ import annotations

from kafka_balancer.kafka.cordon import CORDONED_LOG_DIRS, sync_cordons
from tests.unit.executor_fakes import FakeKafkaCluster


def _cluster(**extra: object) -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("t", 0): (1, 3)},
        sizes={("t", 0): 100},
        **extra,  # type: ignore[arg-type]
    )


def _sync(cluster: FakeKafkaCluster, wanted: set[int], ours: frozenset[int] | set[int]) -> frozenset[int]:
    held = sync_cordons(cluster, wanted, ours)
    assert held is not None, "this Kafka knows cordoning"
    return held


def _cordoned(cluster: FakeKafkaCluster) -> dict[str, str]:
    return {b: c[CORDONED_LOG_DIRS] for (kind, b), c in cluster.configs.items() if CORDONED_LOG_DIRS in c}


def test_drained_brokers_are_cordoned_and_uncordoned_when_the_drain_is_withdrawn() -> None:
    cluster = _cluster()

    ours = _sync(cluster, {3, 4}, set())
    assert ours == frozenset({3, 4}) and _cordoned(cluster) == {"3": "*", "4": "*"}
    assert _sync(cluster, {3, 4}, ours) == frozenset({3, 4})  # nothing to change: nothing changed

    ours = _sync(cluster, {3}, ours)  # broker 4's drain withdrawn
    assert ours == frozenset({3}) and _cordoned(cluster) == {"3": "*"}
    assert _sync(cluster, set(), ours) == frozenset() and _cordoned(cluster) == {}


def test_a_broker_someone_else_cordoned_is_never_taken_for_ours_nor_uncordoned() -> None:
    cluster = _cluster()
    cluster.configs[("broker", "3")] = {CORDONED_LOG_DIRS: "/data/1"}

    ours = _sync(cluster, {3}, set())
    assert ours == frozenset() and _cordoned(cluster) == {"3": "/data/1"}
    assert _sync(cluster, set(), ours) == frozenset() and _cordoned(cluster) == {"3": "/data/1"}


def test_a_broker_down_keeps_its_record_until_it_is_back() -> None:
    cluster = _cluster()
    ours = _sync(cluster, {4}, set())
    cluster.brokers = frozenset({1, 2, 3})  # broker 4 stopped (scaled down, or restarting)

    ours = _sync(cluster, set(), ours)
    assert ours == frozenset({4})  # its config stays: uncordoned once broker 4 is back

    cluster.brokers = frozenset({1, 2, 3, 4})
    assert _sync(cluster, set(), ours) == frozenset() and _cordoned(cluster) == {}


def test_a_kafka_without_cordoning_changes_nothing_and_says_so() -> None:
    cluster = _cluster(cordoning=False)

    assert sync_cordons(cluster, {3}, set()) is None
    assert _cordoned(cluster) == {} and cluster.configs == {}
