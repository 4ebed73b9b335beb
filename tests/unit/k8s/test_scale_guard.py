"""The webhook's side of a StatefulSet scale-down (k8s/scale_guard.py), on a fake apiserver and a
fake Kafka: which pool answers, what it reads, what it records, and what it refuses when it cannot
tell."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import InputError, KafkaOperationError
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.scale_guard import ScaleGuard, match_conditions
from kafka_balancer.k8s.settings import WebhookSettings, webhook_settings
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.reconcile.scale_down import SCALE_DOWN_ANNOTATION, ScaleRequest
from tests.unit.executor_fakes import FakeKafkaCluster

SPEC = {
    "kafka": {"bootstrapServers": "k:9092"},
    "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
    "statefulSet": {"name": "kafka", "brokerIdOffset": 1},
}
DOWN = ScaleRequest("team-a", current=3, wanted=2, via_scale=True)


@dataclass
class GuardKubeFake:
    pools: list[dict[str, Any]] = field(default_factory=list)
    annotated: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    scoped: list[tuple[str, list[dict[str, str]]]] = field(default_factory=list)

    def list_pools(self, namespace: str) -> list[dict[str, Any]]:
        return [p for p in self.pools if p["metadata"]["namespace"] == namespace]

    def annotate_pool(self, namespace: str, name: str, key: str, value: str | None) -> None:
        self.annotated.append((namespace, name, key, value))

    def scope_webhook(self, configuration: str, conditions: list[dict[str, str]]) -> bool:
        changed = not self.scoped or self.scoped[-1] != (configuration, conditions)
        if changed:
            self.scoped.append((configuration, conditions))
        return changed


def pool_object(name: str, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "team-a",
            "name": name,
            "uid": f"uid-{name}",
            "annotations": dict(annotations or {}),
        },
        "spec": dict(SPEC),
    }


def guard(kube: GuardKubeFake, kafka: FakeKafkaCluster | None) -> ScaleGuard:
    @contextmanager
    def connect(_bootstrap: str, _props: Mapping[str, str], _timeout_s: float) -> Iterator[AdminPort]:
        if kafka is None:
            raise KafkaOperationError("reading topic metadata: no answer within 5s")
        yield kafka

    def connection(_pool: PoolId, _spec: BrokerPoolSpec) -> dict[str, str]:
        return {}

    return ScaleGuard(kube, connection, connect)


def cluster(cordoned: tuple[int, ...] = ()) -> FakeKafkaCluster:
    # Broker 3 is the pod of ordinal 2: it holds one replica of orders-0.
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3}),
        replicas={("orders", 0): (1, 3), ("orders", 1): (2, 1)},
        sizes={("orders", 0): 10, ("orders", 1): 10},
        configs={("broker", str(b)): {"cordoned.log.dirs": "*"} for b in cordoned},
    )


def test_a_stateful_set_no_pool_names_gets_no_answer_and_nothing_is_read() -> None:
    kube = GuardKubeFake([pool_object("main")])

    assert guard(kube, None).review("zookeeper", DOWN, dry_run=False) is None
    assert kube.annotated == []


def test_a_refused_scale_down_is_recorded_on_the_pool_and_a_dry_run_records_nothing() -> None:
    kube = GuardKubeFake([pool_object("main")])

    dry = guard(kube, cluster()).review("kafka", DOWN, dry_run=True)
    assert dry is not None and not dry.allowed
    assert kube.annotated == []

    answer = guard(kube, cluster()).review("kafka", DOWN, dry_run=False)
    assert answer is not None and not answer.allowed
    assert "brokers [3] still hold 1 replicas" in answer.message
    (namespace, name, key, value) = kube.annotated[0]
    assert (namespace, name, key) == ("team-a", "main", SCALE_DOWN_ANNOTATION)
    assert value is not None
    assert json.loads(value) == {"statefulSet": "kafka", "replicas": 2, "brokers": [3], "replicasHeld": 1}


def test_an_empty_cordoned_broker_may_go_and_its_record_is_written_once() -> None:
    kafka = cluster(cordoned=(3,))
    kafka.replicas[("orders", 0)] = (1, 2)
    kube = GuardKubeFake([pool_object("main")])

    first = guard(kube, kafka).review("kafka", DOWN, dry_run=False)
    assert first is not None and first.allowed
    assert len(kube.annotated) == 1
    held = kube.annotated[0][3]
    assert held is not None
    kube.pools = [pool_object("main", {SCALE_DOWN_ANNOTATION: held})]

    again = guard(kube, kafka).review("kafka", DOWN, dry_run=False)
    assert again is not None and again.allowed
    assert len(kube.annotated) == 1  # the same record is not written again


def test_a_scale_back_withdraws_the_record_without_asking_kafka() -> None:
    held = json.dumps({"statefulSet": "kafka", "replicas": 2, "brokers": [3], "replicasHeld": 1})
    kube = GuardKubeFake([pool_object("main", {SCALE_DOWN_ANNOTATION: held})])

    answer = guard(kube, None).review("kafka", ScaleRequest("team-a", 3, 3, True), dry_run=False)

    assert answer is not None and answer.allowed
    assert kube.annotated == [("team-a", "main", SCALE_DOWN_ANNOTATION, None)]


def test_what_cannot_be_checked_is_refused_in_words() -> None:
    kube = GuardKubeFake([pool_object("main")])

    answer = guard(kube, None).review("kafka", DOWN, dry_run=False)

    assert answer is not None and not answer.allowed
    assert answer.message == (
        "StatefulSet team-a/kafka: cannot tell whether brokers [3] are empty (reading topic metadata: "
        "no answer within 5s); nothing was removed; retry"
    )
    assert kube.annotated == []


def test_a_broker_that_looks_empty_to_a_principal_kept_from_some_topics_may_not_go() -> None:
    # Broker 3 holds a replica of a topic the principal may not describe: Kafka leaves it out of the
    # metadata, so the broker looks empty and cordoned, as one that may go.
    kafka = cluster(cordoned=(3,))
    kafka.replicas[("orders", 0)] = (1, 2)
    kafka.hidden = (
        "Kafka's ACLs keep part of the cluster from this principal, 1 topic(s) it may not describe: ledger"
    )
    kube = GuardKubeFake([pool_object("main")])

    answer = guard(kube, kafka).review("kafka", DOWN, dry_run=False)

    assert answer is not None and not answer.allowed
    assert answer.message.startswith("StatefulSet team-a/kafka: cannot tell whether brokers [3] are empty")
    assert "1 topic(s) it may not describe: ledger" in answer.message
    assert "a broker that looks empty may still hold their replicas" in answer.message
    assert kube.annotated == []


def test_two_pools_naming_one_stateful_set_refuse_its_scale_down() -> None:
    kube = GuardKubeFake([pool_object("main"), pool_object("other")])

    answer = guard(kube, cluster()).review("kafka", DOWN, dry_run=False)

    assert answer is not None and not answer.allowed
    assert answer.message == "StatefulSet team-a/kafka: BrokerPools main, other each name it; one may"


def test_the_webhook_is_scoped_to_the_pools_stateful_sets_and_to_possible_removals() -> None:
    kube = GuardKubeFake()
    scale_guard = guard(kube, None)
    wanted = [("team-b", "kafka"), ("team-a", "kafka")]

    scale_guard.scope("kb-scale-down", wanted)
    scale_guard.scope("kb-scale-down", list(reversed(wanted)))  # the same StatefulSets, in any order

    assert kube.scoped == [("kb-scale-down", match_conditions(wanted))]
    pools, removals = match_conditions(wanted)
    assert pools["expression"] == (
        '(request.namespace + \'/\' + request.name) in ["team-a/kafka", "team-b/kafka"]'
    )
    assert removals["expression"] == (
        "request.subResource == 'scale' || (has(object.spec.replicas) ? object.spec.replicas : 0) < "
        "(has(oldObject.spec.replicas) ? oldObject.spec.replicas : 0)"
    )


def test_the_webhook_settings_come_all_three_together() -> None:
    assert webhook_settings({}) is None
    full = {
        "KAFKA_BALANCER_WEBHOOK_PORT": "9443",
        "KAFKA_BALANCER_WEBHOOK_CERT_DIR": "/certs",
        "KAFKA_BALANCER_WEBHOOK_CONFIGURATION": "kb",
    }
    found = webhook_settings(full)
    assert found is not None and (found.port, str(found.cert_dir), found.configuration) == (
        9443,
        "/certs",
        "kb",
    )
    assert isinstance(found, WebhookSettings) and found.address == "0.0.0.0"
    with pytest.raises(InputError, match=r"^KAFKA_BALANCER_WEBHOOK_CERT_DIR: required"):
        webhook_settings({**full, "KAFKA_BALANCER_WEBHOOK_CERT_DIR": ""})
    with pytest.raises(InputError, match=r"^KAFKA_BALANCER_WEBHOOK_PORT: a port from 1 to 65535, got 70000"):
        webhook_settings({**full, "KAFKA_BALANCER_WEBHOOK_PORT": "70000"})
