"""The local Kafka bed is a real, rack-labelled KRaft cluster that moves partitions and runs Kafka's tools."""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaAdminClient, TopicPartition
from tests.support.messages import consume_digest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.kafka import (
    CONSUMER_PERFORMANCE,
    PRODUCER_PERFORMANCE,
    REASSIGN_PARTITIONS,
    KafkaBed,
)
from kafka_balancer_dev.localbed.procs import wait_until

MESSAGES = 10_000
KEYS = 97


def _processes_mentioning(path: Path) -> list[int]:
    """PIDs whose command line mentions ``path`` (what a bed starts always names its run directory)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if str(path).encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


def _admin(bed: KafkaBed) -> AdminClient:
    return AdminClient({"bootstrap.servers": bed.bootstrap_servers})


# Each helper keeps its AdminClient referenced until the answer is in: a client collected while a
# request is in flight never resolves that request's future.


def _live_racks(bed: KafkaBed) -> dict[int, str | None]:
    admin = _admin(bed)
    described = admin.describe_cluster(request_timeout=10).result(timeout=30)
    return {node.id: node.rack for node in described.nodes}


def _create_topic(bed: KafkaBed, topic: NewTopic) -> None:
    admin = _admin(bed)
    admin.create_topics([topic], operation_timeout=30)[topic.topic].result(timeout=60)


def _produce(bed: KafkaBed, topic: str, count: int) -> tuple[Counter[str], dict[str, str]]:
    """Produce ``count`` keyed messages; return per-key counts and per-key sha256 of the values in order."""
    producer = Producer(
        {
            "bootstrap.servers": bed.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
        }
    )
    failures: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    rng = random.Random(7)
    counts: Counter[str] = Counter()
    digests: defaultdict[str, hashlib._Hash] = defaultdict(hashlib.sha256)
    for i in range(count):
        key = f"key-{i % KEYS}"
        value = rng.randbytes(32 + i % 200)
        producer.produce(topic, key=key.encode(), value=value, on_delivery=delivered)
        producer.poll(0)
        counts[key] += 1
        digests[key].update(value)
    assert producer.flush(60) == 0, "messages still undelivered after 60s"
    assert not failures, f"delivery failures: {failures[:3]}"
    return counts, {key: digest.hexdigest() for key, digest in digests.items()}


def test_keyed_messages_survive_a_round_trip_on_a_rack_spanning_topic(kafka_bed: KafkaBed) -> None:
    topic = f"roundtrip-{uuid.uuid4().hex[:8]}"
    _create_topic(kafka_bed, NewTopic(topic, num_partitions=6, replication_factor=3))
    partitions = _admin(kafka_bed).list_topics(topic=topic, timeout=10).topics[topic].partitions
    assert len(partitions) == 6
    for partition in partitions.values():
        assert len({kafka_bed.racks[replica] for replica in partition.replicas}) == 3, partition.replicas

    sent_counts, sent_digests = _produce(kafka_bed, topic, MESSAGES)
    received_counts, received_digests = consume_digest(kafka_bed.bootstrap_servers, topic, MESSAGES)

    assert sum(received_counts.values()) == MESSAGES
    assert received_counts == sent_counts
    assert received_digests == sent_digests


def test_metadata_shows_every_broker_with_its_rack(kafka_bed: KafkaBed) -> None:
    live = _live_racks(kafka_bed)
    assert {broker_id: live[broker_id] for broker_id in (1, 2, 3, 4)} == {1: "a", 2: "b", 3: "c", 4: "a"}
    assert live == kafka_bed.racks


def test_a_partition_moves_and_kafkas_own_tool_verifies_it(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = f"move-{uuid.uuid4().hex[:8]}"
    _create_topic(kafka_bed, NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]]))
    _produce(kafka_bed, topic, 2_000)
    partition = TopicPartition(topic, 0)
    target = [4, 2]  # broker 4 shares rack "a" with broker 1: a same-rack move

    admin = KafkaAdminClient(bootstrap_servers=kafka_bed.bootstrap_servers.split(","))
    try:
        assert admin.alter_partition_reassignments({partition: target}) == {partition: None}
        wait_until(
            lambda: partition not in admin.list_partition_reassignments([partition]),
            timeout_s=60,
            what=f"the reassignment of {topic}-0 to finish",
        )
    finally:
        admin.close()
    replicas = _admin(kafka_bed).list_topics(topic=topic, timeout=10).topics[topic].partitions[0].replicas
    assert replicas == target

    plan = tmp_path / "reassignment.json"
    moves = [{"topic": topic, "partition": 0, "replicas": target}]
    plan.write_text(json.dumps({"version": 1, "partitions": moves}))
    verify = kafka_bed.run_tool(REASSIGN_PARTITIONS, ["--verify", "--reassignment-json-file", str(plan)])
    assert verify.returncode == 0, verify.stderr
    assert f"Reassignment of partition {topic}-0 is completed" in verify.stdout, verify.stdout


def test_kafkas_performance_tools_produce_and_consume_through_the_bed(kafka_bed: KafkaBed) -> None:
    topic = f"perf-{uuid.uuid4().hex[:8]}"
    _create_topic(kafka_bed, NewTopic(topic, num_partitions=3, replication_factor=3))
    load = ["--topic", topic, "--num-records", "1000", "--record-size", "100", "--throughput", "-1"]
    produced = kafka_bed.run_tool(PRODUCER_PERFORMANCE, [*load, "--command-property", "acks=all"])
    assert produced.returncode == 0, produced.stderr
    assert "1000 records sent" in produced.stdout, produced.stdout

    consumed = kafka_bed.run_tool(
        CONSUMER_PERFORMANCE, ["--topic", topic, "--num-records", "1000", "--timeout", "60000"]
    )
    assert consumed.returncode == 0, consumed.stderr
    header, row = consumed.stdout.strip().splitlines()[-2:]
    columns = dict(zip(header.split(", "), row.split(", "), strict=True))
    assert columns["data.consumed.in.nMsg"] == "1000", consumed.stdout


def test_an_added_broker_joins_with_its_rack_and_leaves_when_stopped(kafka_bed: KafkaBed) -> None:
    before = set(kafka_bed.racks)
    new_id = kafka_bed.add_broker(rack="b")
    try:
        assert new_id not in before
        assert _live_racks(kafka_bed)[new_id] == "b"
        assert kafka_bed.racks[new_id] == "b"
    finally:
        kafka_bed.stop_broker(new_id)
    assert new_id not in _live_racks(kafka_bed)
    assert set(kafka_bed.racks) == before


def test_a_bed_that_cannot_start_names_the_component_and_its_log(
    kafka_bed_factory: Callable[..., KafkaBed],
) -> None:
    bed = kafka_bed_factory(heap="1k")  # the JVM refuses so small a heap
    with pytest.raises(BedError) as failure:
        bed.start()
    message = str(failure.value)
    output = bed.run_dir / "controller-100" / "stdout.log"
    assert "Kafka controller-100 exited" in message
    assert "(Error occurred during initialization of VM)" in message
    assert str(output) in message
    assert "Error occurred during initialization of VM" in output.read_text()
    assert not (bed.run_dir / "kafka-bed.json").exists()
    assert _processes_mentioning(bed.run_dir) == []
