"""Cordoning a drained broker on the real Kafka bed (4.3, KIP-1066): a topic created meanwhile gets
no replica on it, and one created after the uncordon may again."""

from __future__ import annotations

from tests.support.kafka_checks import delete_topic, extra_broker, partitions
from tests.support.traffic import create_topic

from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.cordon import CORDONED_LOG_DIRS, sync_cordons
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until


def _placed_on(bed: KafkaBed, topic: str) -> set[int]:
    return {b for replicas, _, _ in partitions(bed, topic).values() for b in replicas}


def test_a_topic_created_during_a_drain_gets_no_replica_on_the_cordoned_broker(kafka_bed: KafkaBed) -> None:
    with extra_broker(kafka_bed, "b") as drained:
        admin = KafkaAdmin(kafka_bed.bootstrap_servers)
        created: list[str] = []

        def cordon() -> str | None:
            return admin.dynamic_configs("broker", [str(drained)])[str(drained)].get(CORDONED_LOG_DIRS)

        try:
            assert CORDONED_LOG_DIRS in admin.broker_config_names(drained)
            ours = sync_cordons(admin, {drained}, set())
            assert ours == frozenset({drained})
            wait_until(
                lambda: (
                    admin.dynamic_configs("broker", [str(drained)])[str(drained)].get(CORDONED_LOG_DIRS)
                    == "*"
                ),
                timeout_s=30,
                what=f"broker {drained} cordoned",
            )
            # Many partitions of RF 2 over five brokers: without the cordon, some land on every broker.
            during = create_topic(kafka_bed.bootstrap_servers, "cordoned", 40, 2)
            created.append(during)
            assert drained not in _placed_on(kafka_bed, during)

            assert sync_cordons(admin, set(), ours) == frozenset()
            wait_until(
                lambda: (
                    CORDONED_LOG_DIRS not in admin.dynamic_configs("broker", [str(drained)])[str(drained)]
                ),
                timeout_s=30,
                what=f"broker {drained} uncordoned",
            )

            # The controller learns the broker's dirs are usable from its next heartbeat.
            def lands_again() -> bool:
                topic = create_topic(kafka_bed.bootstrap_servers, "uncordoned", 40, 2)
                created.append(topic)
                return drained in _placed_on(kafka_bed, topic)

            wait_until(lands_again, timeout_s=60, what=f"a new topic with a replica on broker {drained}")
        finally:
            # Whatever failed: no broker of the shared bed stays cordoned (an id can come back).
            sync_cordons(admin, set(), {drained})
            for topic in created:
                delete_topic(kafka_bed, topic)
            admin.close()
