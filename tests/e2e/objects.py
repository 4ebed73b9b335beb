"""Building and reading the e2e objects: pools and goals applied with kubectl, topics on the bed."""

from __future__ import annotations

import json
from typing import Any

from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed

from .conftest import wait_for

PLAN_TIMEOUT_S = 120.0


# The goal that judges a skewed_topic() whatever else the shared bed holds. ReplicaDistribution counts
# every topic's replicas: once the tier's earlier tests have left a few hundred partitions spread over
# the brokers, 8 more replicas on each of brokers 1 and 2 fit inside a ±10 % band (a CI run found the
# dry-run pool's goal reported Satisfied). Per topic, brokers 3 and 4 hold none of the 4 expected.
OWN_TOPIC_SPREAD = "TopicReplicaDistribution"


def skewed_topic(bed: KafkaBed, name: str) -> None:
    """8 partitions, RF 2, every replica on brokers 1 and 2 (racks a and b): a plan must move some."""
    admin = KafkaAdminClient(bootstrap_servers=bed.bootstrap_servers.split(","))
    try:
        assignment = {p: ([1, 2] if p % 2 else [2, 1]) for p in range(8)}
        admin.create_topics(
            [NewTopic(name=name, num_partitions=-1, replication_factor=-1, replica_assignments=assignment)]
        )
    finally:
        admin.close()


def replicas_of(bed: KafkaBed, topic: str) -> dict[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})

    def described() -> dict[int, list[int]]:
        found = admin.list_topics(topic, timeout=30).topics[topic]
        replicas = {pid: list(p.replicas) for pid, p in found.partitions.items()}
        return replicas if len(replicas) == 8 else {}

    found: dict[int, list[int]] = wait_for(described, 30, f"metadata of topic {topic}")
    return found


def apply(bed: kube.KubeBed, namespace: str, *objects: dict[str, Any]) -> None:
    for obj in objects:
        obj["metadata"]["namespace"] = namespace
    applied = bed.kubectl(
        "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    )
    assert applied.returncode == 0, applied.stderr


def pool(name: str, bootstrap: str, mode: str, topic: str | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "mode": mode,
        "detectionIntervalSeconds": 10,
        "kafka": {"bootstrapServers": bootstrap},
        "capacity": {"disk": "100Gi", "networkIn": "100M", "networkOut": "100M", "cpu": 4},
        "execution": {"throttleBytesPerSecond": "10Mi", "maxMovesPerBroker": 2, "maxMoves": 4},
    }
    if topic is not None:
        # The bed is shared: this pool only ever plans (and moves) its own topic.
        spec["excludedTopics"] = [f"(?!{topic}$).*"]
    spec.update(extra)
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "metadata": {"name": name},
        "spec": spec,
    }


def goal(name: str, pool_name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancerGoal",
        "metadata": {"name": name},
        "spec": {**spec, "poolRef": {"name": pool_name}},
    }


def get(bed: kube.KubeBed, namespace: str, kind: str, name: str) -> dict[str, Any]:
    got = bed.kubectl("get", kind, name, "-n", namespace, "-o", "json")
    assert got.returncode == 0, got.stderr
    found: dict[str, Any] = json.loads(got.stdout)
    return found


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def events(bed: kube.KubeBed, namespace: str) -> list[dict[str, Any]]:
    got = bed.kubectl("get", "events", "-n", namespace, "-o", "json")
    assert got.returncode == 0, got.stderr
    items: list[dict[str, Any]] = json.loads(got.stdout)["items"]
    return items
