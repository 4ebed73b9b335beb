"""KafkaAdmin's config calls against the real Kafka bed: topics described in batches, brokers one by one."""

from __future__ import annotations

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
