"""Log dirs (JBOD) through KafkaAdmin on the real Kafka bed, whose brokers have two log dirs each:
DescribeLogDirs names each replica's dir and each dir's size, and AlterReplicaLogDirs moves a replica
between a broker's dirs under the intra-broker throttle, with every message kept and the throttle
removed after."""

from __future__ import annotations

from tests.support.kafka_checks import Writer, assert_no_throttle_left, create_topic, delete_topic
from tests.support.messages import consume_digest

from kafka_balancer.kafka.admin import KafkaAdmin, LogDirState
from kafka_balancer_dev.localbed.kafka import LOG_DIRS_PER_BROKER, KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

INTRA_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"


def _dir_of(dirs: tuple[LogDirState, ...], tp: tuple[str, int]) -> list[str]:
    return [d.path for d in dirs if tp in d.replicas]


def test_a_replica_moves_between_the_log_dirs_of_its_broker_with_every_message_kept(
    kafka_bed: KafkaBed,
) -> None:
    topic = create_topic(kafka_bed, "logdirs", [[1, 2]])
    tp = (topic, 0)
    writer = Writer(kafka_bed, topic)
    writer.write(2_000, 500)
    admin = KafkaAdmin(kafka_bed.bootstrap_servers)
    try:
        dirs = admin.log_dirs([1, 2])
        # The collector's view: each broker's dirs, online, with their volume's size, and the one
        # dir that holds each replica (sizes reach the leader's log once it is flushed to the dir).
        assert sorted(dirs) == [1, 2]
        for broker in (1, 2):
            assert len(dirs[broker]) == LOG_DIRS_PER_BROKER
            assert all(d.online and d.total_bytes is not None and d.total_bytes > 0 for d in dirs[broker])
            assert len(_dir_of(dirs[broker], tp)) == 1
        [source] = _dir_of(dirs[1], tp)
        [target] = [d.path for d in dirs[1] if d.path != source]

        admin.alter_configs("broker", "1", {INTRA_THROTTLE: "10000000"})
        try:
            assert admin.alter_replica_log_dirs({(topic, 0, 1): target}) == {}

            def moved() -> bool:
                now = admin.log_dirs([1])[1]
                return _dir_of(now, tp) == [target] and all(tp not in d.future for d in now)

            wait_until(moved, timeout_s=60, what=f"{topic}-0 in {target} on broker 1, no future replica left")
        finally:
            admin.alter_configs("broker", "1", {}, [INTRA_THROTTLE])
        assert_no_throttle_left(kafka_bed, topic)
        # Broker 2's replica stayed where it was.
        assert _dir_of(admin.log_dirs([2])[2], tp) == _dir_of(dirs[2], tp)
    finally:
        admin.close()
    assert consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent) == writer.result()
    delete_topic(kafka_bed, topic)
