"""Between a pool's passes, a broker joining or leaving its Kafka cluster wakes the pass: the change
told from the live brokers the last pass read, one client kept per pool for the reads, a failed read
waking nothing. (The pass run within seconds on real Kafka: tests/e2e/test_operator.py.)"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_balancer.errors import KafkaUnavailableError
from kafka_balancer.k8s.broker_watch import BrokerWatch
from kafka_balancer.reconcile.observed_brokers import membership_change
from tests.unit.executor_fakes import FakeKafkaCluster
from tests.unit.k8s.test_orchestration import POOL, bed, cluster

THREE = frozenset({1, 2, 3})  # the fake cluster's brokers


@dataclass
class WatchedCluster(FakeKafkaCluster):
    """The fake cluster, its DescribeCluster counted and unanswered while ``down``."""

    down: bool = False
    reads: int = 0

    def broker_ids(self) -> frozenset[int]:
        self.reads += 1
        if self.down:
            raise KafkaUnavailableError("describing the cluster: no answer within 5 s")
        return self.brokers


def watched() -> WatchedCluster:
    made = cluster()
    return WatchedCluster(made.brokers, made.replicas, made.sizes, racks=made.racks)


class Connections:
    """Stands in for the admin clients: each one made is counted, reads ``kafka`` and is closed when
    its block ends."""

    def __init__(self, kafka: WatchedCluster) -> None:
        self.kafka = kafka
        self.made: list[tuple[str, dict[str, str]]] = []
        self.closed = 0

    def __call__(self, bootstrap: str, props: Mapping[str, str], timeout_s: float) -> Connections:
        self.made.append((bootstrap, dict(props)))
        return self

    def __enter__(self) -> WatchedCluster:
        return self.kafka

    def __exit__(self, *_: object) -> None:
        self.closed += 1


# -- the change ------------------------------------------------------------------------------------


def test_a_broker_that_joins_or_goes_is_a_change_and_named() -> None:
    seen = frozenset({1, 2, 3})

    assert membership_change(seen, frozenset({1, 2, 3, 4})) == "live brokers changed: 4 joined"
    assert membership_change(seen, frozenset({1, 3})) == "live brokers changed: 2 gone"
    assert membership_change(seen, frozenset({1, 3, 5, 4})) == "live brokers changed: 4, 5 joined; 2 gone"


def test_the_same_brokers_or_none_read_are_no_change() -> None:
    seen = frozenset({1, 2, 3})

    assert membership_change(seen, frozenset({3, 2, 1})) is None
    # A read that failed wakes nothing: the next pass reports the connection as it does today.
    assert membership_change(seen, None) is None


# -- the watch's clients ------------------------------------------------------------------------------


def test_reads_of_a_pool_share_one_client_until_its_connection_changes() -> None:
    connections = Connections(watched())
    watch = BrokerWatch(5.0, connections)

    for _ in range(3):
        assert watch.live_brokers(POOL.key, "k:9092", {"security.protocol": "PLAINTEXT"}) == THREE

    assert len(connections.made) == 1 and connections.kafka.reads == 3
    # A rotated password: the pass now connects otherwise, and so does the watch.
    rotated = {"security.protocol": "SASL_SSL", "sasl.password": "new"}
    assert watch.live_brokers(POOL.key, "k:9092", rotated) == THREE
    assert connections.made[-1] == ("k:9092", rotated) and connections.closed == 1


def test_a_read_that_fails_is_none_and_keeps_the_client(caplog: pytest.LogCaptureFixture) -> None:
    connections = Connections(watched())
    watch = BrokerWatch(5.0, connections)
    connections.kafka.down = True

    with caplog.at_level(logging.INFO):
        assert watch.live_brokers(POOL.key, "k:9092", {}) is None
        assert watch.live_brokers(POOL.key, "k:9092", {}) is None

    assert caplog.records == []  # not a line every few seconds while Kafka is away: the pass says so
    connections.kafka.down = False
    assert watch.live_brokers(POOL.key, "k:9092", {}) == THREE
    assert len(connections.made) == 1


def test_forgetting_a_pool_closes_its_client() -> None:
    connections = Connections(watched())
    watch = BrokerWatch(5.0, connections)
    watch.live_brokers(POOL.key, "k:9092", {})

    watch.forget(POOL.key)
    watch.forget(POOL.key)

    assert connections.closed == 1
    watch.live_brokers(POOL.key, "k:9092", {})
    assert len(connections.made) == 2


# -- the pool service --------------------------------------------------------------------------------------


def test_a_pass_returns_the_live_brokers_it_read_and_a_broker_joining_since_wakes_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kafka = watched()
    connections = Connections(kafka)
    b = bed(tmp_path, kafka, connect=connections)

    seen = b.sync("DryRun").brokers

    assert seen == THREE
    assert not b.service.brokers_changed_blocking(POOL, seen)
    kafka.brokers = kafka.brokers | {4}
    kafka.racks[4] = "a"
    with caplog.at_level(logging.INFO):
        assert b.service.brokers_changed_blocking(POOL, seen)
    assert [r.getMessage() for r in caplog.records] == [
        "pool kafka/main: live brokers changed: 4 joined: syncing now"
    ]
    assert len(connections.made) == 1  # the checks read through one client
    assert b.sync("DryRun").brokers == {1, 2, 3, 4}


def test_a_broker_going_wakes_the_pass_and_an_unread_cluster_does_not(tmp_path: Path) -> None:
    kafka = watched()
    connections = Connections(kafka)
    b = bed(tmp_path, kafka, connect=connections)
    seen = b.sync("DryRun").brokers

    connections.kafka.down = True
    kafka.brokers = frozenset({1, 3})
    assert not b.service.brokers_changed_blocking(POOL, seen)
    connections.kafka.down = False
    assert b.service.brokers_changed_blocking(POOL, seen)


def test_a_pool_with_no_pass_yet_reads_nothing(tmp_path: Path) -> None:
    kafka = watched()
    connections = Connections(kafka)
    b = bed(tmp_path, kafka, connect=connections)

    assert not b.service.brokers_changed_blocking(POOL, frozenset({1, 2, 3}))
    assert connections.made == []
