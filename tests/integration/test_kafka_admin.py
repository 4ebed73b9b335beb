"""KafkaAdmin against the real Kafka bed: topics' configs described in batches, brokers' one by one,
and a bootstrap server that takes connections but never answers."""

from __future__ import annotations

import socket
import time

import pytest
from tests.support.kafka_checks import create_topic, delete_topic

from kafka_balancer.kafka import admin as admin_module
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

RATE = "leader.replication.throttled.rate"
REPLICAS = "leader.replication.throttled.replicas"


def test_dynamic_configs_of_topics_in_batches_and_of_each_broker(
    kafka_bed: KafkaBed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(admin_module, "TOPICS_PER_DESCRIBE", 2)  # three topics: two requests
    topics = [create_topic(kafka_bed, "configs", [[1, 2]]) for _ in range(3)]
    admin = KafkaAdmin(kafka_bed.bootstrap_servers)
    try:
        admin.alter_configs("topic", topics[0], {REPLICAS: "0:1"})
        admin.alter_configs("topic", topics[2], {"retention.ms": "3600000"})
        admin.alter_configs("broker", "2", {RATE: "123456"})
        expected = {topics[0]: {REPLICAS: "0:1"}, topics[1]: {}, topics[2]: {"retention.ms": "3600000"}}
        # Brokers apply a committed change a moment later: poll, with a deadline.
        wait_until(
            lambda: admin.dynamic_configs("topic", topics) == expected,
            timeout_s=30,
            what="the topics' configs as set",
        )
        wait_until(
            lambda: admin.dynamic_configs("broker", ["1", "2"]) == {"1": {}, "2": {RATE: "123456"}},
            timeout_s=30,
            what="broker 2's rate, and none on broker 1",
        )
    finally:
        admin.alter_configs("broker", "2", {}, [RATE])
        admin.close()
        for topic in topics:
            delete_topic(kafka_bed, topic)


def test_a_bootstrap_server_that_never_answers_costs_one_share_of_one_call(kafka_bed: KafkaBed) -> None:
    """A hung broker still takes connections (its kernel does): the reassignment client, made anew
    after each failure, must not wait out its timeout on it again and again."""
    timeout_s = 10.0
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)  # never accepted, never answered
        healthy = kafka_bed.bootstrap_servers.split(",")[0]
        admin = KafkaAdmin(f"127.0.0.1:{hung.getsockname()[1]},{healthy}", timeout_s=timeout_s)
        try:
            started = time.monotonic()
            assert admin.reassignments() == {}
            first = time.monotonic() - started
            # Tried first, it is given half the time: the healthy one answers within the rest.
            assert first < timeout_s, first
            started = time.monotonic()
            for _ in range(8):
                admin.close()  # the next call bootstraps a new client
                assert admin.reassignments() == {}
            # Picked at random, the hung server would be tried by half of the 8 new clients, each
            # waiting out the timeout on it.
            later = time.monotonic() - started
            assert later < timeout_s, later
        finally:
            admin.close()
