"""The bed of the StatefulSet scenarios: Kafka's brokers as pods of a StatefulSet, with ids and racks from
their ordinals, reachable over the bootstrap Service from pods and from this machine, and a scale-up
that registers the next broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafka_balancer.kafka.client_log import with_client_log
from kafka_balancer_dev.localbed import kafka_statefulset as sts

from .conftest import container_pids
from .kafka_statefulset import KafkaStatefulSet

TOPIC = "sts-bed"
MESSAGES = 200


def rss_mib(pod: dict[str, Any]) -> float:
    """The resident memory of a pod's container processes."""
    container_id = pod["status"]["containerStatuses"][0]["containerID"].rpartition("//")[2]
    total_kib = 0
    for pid in container_pids(container_id):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
    return total_kib / 1024


def replicas(kafka: KafkaStatefulSet, topic: str) -> list[list[int]]:
    admin = AdminClient(with_client_log({"bootstrap.servers": kafka.host_bootstrap_servers}))
    metadata = admin.list_topics(topic, timeout=10).topics[topic]
    return [list(metadata.partitions[p].replicas) for p in sorted(metadata.partitions)]


def test_brokers_run_as_a_statefulset_that_scales_up_and_back(kafka_statefulset: KafkaStatefulSet) -> None:
    kafka = kafka_statefulset
    assert kafka.registered() == {100: "a", 101: "b", 102: "c", 103: "a"}

    # Created from a pod over the bootstrap Service: the path a client in the cluster takes.
    created = kafka.run_tool(
        "org.apache.kafka.tools.TopicCommand",
        "--bootstrap-server",
        kafka.spec.bootstrap_servers,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "4",
        "--replication-factor",
        "3",
    )
    assert created.returncode == 0, created.stderr
    placed = replicas(kafka, TOPIC)
    racks = kafka.registered()
    assert all(len({racks[b] for b in replica_set}) == 3 for replica_set in placed), placed

    # Written from this machine over the same Service, read back in the pod.
    sent = [f"m{i}" for i in range(MESSAGES)]
    producer = Producer(with_client_log({"bootstrap.servers": kafka.host_bootstrap_servers, "acks": "all"}))
    for value in sent:
        producer.produce(TOPIC, value.encode())
    assert producer.flush(30) == 0
    consumed = kafka.run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server",
        kafka.spec.bootstrap_servers,
        "--topic",
        TOPIC,
        "--from-beginning",
        "--max-messages",
        str(MESSAGES),
        "--timeout-ms",
        "60000",
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == sorted(sent)

    rss = {p["metadata"]["name"]: rss_mib(p) for p in kafka.broker_pods()}
    print("RSS per broker pod (MiB): " + ", ".join(f"{name} {mib:.0f}" for name, mib in rss.items()))

    started = time.monotonic()
    kafka.scale(5)
    print(f"scale to 5 → broker {sts.broker_id(4)} registered: {time.monotonic() - started:.1f}s")
    assert kafka.registered()[sts.broker_id(4)] == "b"
    # The new broker holds nothing yet: scaling it away puts no data at risk.
    started = time.monotonic()
    kafka.scale(4)
    print(f"scale back to 4 → broker {sts.broker_id(4)} gone: {time.monotonic() - started:.1f}s")
    assert sorted(kafka.registered()) == [100, 101, 102, 103]
