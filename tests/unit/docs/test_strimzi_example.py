"""examples/strimzi/, which the README's "Kafka run by Strimzi" quickstart applies: the pool names the
Kafka, listener and KafkaUser beside it, and with the status Strimzi would write for them it connects
with SCRAM over TLS, its Secret is meant for it, its capacities come from the broker node pool, and
the quickstart's scale-down drains the node id it names. That the Strimzi manifests are valid for
Strimzi's CRDs: tests/integration/test_strimzi_crds.py."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from kafka_balancer.api import BrokerPool
from kafka_balancer.k8s.pool_secrets import POOLS_ANNOTATION
from kafka_balancer.reconcile.strimzi import StrimziCluster, resolve
from tests.support import strimzi
from tests.support.readme import README, ROOT

pytestmark = pytest.mark.unit

EXAMPLE = ROOT / "examples" / "strimzi"
NAMESPACE = "kafka"


def documents() -> list[dict[str, Any]]:
    return [
        doc for path in sorted(EXAMPLE.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc
    ]


def one(kind: str, name: str) -> dict[str, Any]:
    found = [doc for doc in documents() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(found) == 1, f"examples/strimzi: {len(found)} {kind} named {name}"
    return found[0]


def quickstart() -> str:
    text = README
    start = text.index("### Kafka run by Strimzi")
    return text[start : text.index("\n## ", start)]


def played(replicas: int) -> tuple[BrokerPool, StrimziCluster]:
    """The example's resources with the status Strimzi writes for them, the broker node pool at
    ``replicas``: node ids from its next-node-ids annotation, as Strimzi assigns them."""
    pool = BrokerPool.model_validate(one("BrokerPool", "demo"))
    ref = pool.spec.strimzi
    assert ref is not None and ref.user is not None
    kafka = one("Kafka", ref.kafka)
    host = f"{ref.kafka}-kafka-bootstrap.{NAMESPACE}.svc"
    listeners = [strimzi.listener_status(ref.listener, host, 9093, ["CA"])]
    kafka["status"] = strimzi.kafka_status(cluster_id="c", listeners=listeners, node_pools=["brokers"])
    brokers = one("KafkaNodePool", "brokers")
    first = int(re.findall(r"\d+", brokers["metadata"]["annotations"]["strimzi.io/next-node-ids"])[0])
    ids = range(first, first + brokers["spec"]["replicas"])
    brokers["spec"]["replicas"] = replicas
    brokers["status"] = strimzi.node_pool_status(
        cluster=ref.kafka, pool="brokers", cluster_id="c", node_ids=ids
    )
    user = one("KafkaUser", ref.user)
    user["status"] = strimzi.kafka_user_status(ref.user)
    secret = strimzi.scram_user_secret(ref.user, "pw")
    found = StrimziCluster(
        kafka,
        [brokers, one("KafkaNodePool", "controllers")],
        {"ca.crt": b"CA\n"},
        user,
        {k: v.encode() for k, v in secret.items()},
    )
    return pool, found


def test_the_example_pool_connects_with_the_kafkas_listener_and_its_own_user() -> None:
    pool, found = played(replicas=4)

    resolved = resolve(pool.spec, found)

    kafka = resolved.spec.connection()
    assert (kafka.security_protocol, kafka.bootstrap_servers) == (
        "SASL_SSL",
        "demo-kafka-bootstrap.kafka.svc:9093",
    )
    assert resolved.sasl == {"username": "kafka-balancer", "password": "pw"}
    # The user operator copies the template's annotations onto the Secret: meant for this pool.
    annotations = one("KafkaUser", "kafka-balancer")["spec"]["template"]["secret"]["metadata"]["annotations"]
    assert pool.metadata.name in annotations[POOLS_ANNOTATION].split(",")
    assert {(o.disk, o.cpu) for o in resolved.spec.capacity.overrides} == {(100 * 2**30, "2")}
    assert resolved.spec.drain == []


def test_the_quickstarts_scale_down_drains_the_node_id_it_names() -> None:
    text = quickstart()
    lowered = re.search(
        r"kafkanodepool brokers -n kafka --type=merge -p '\{\"spec\":\{\"replicas\":(\d+)\}\}'", text
    )
    assert lowered is not None, "the quickstart lowers the brokers node pool's replicas"
    pool, found = played(replicas=int(lowered[1]))

    drained = resolve(pool.spec, found).spec.drain

    named = re.findall(r"# (\d+)=Draining", text)
    assert [str(b) for b in drained] == named
    for path in re.findall(r"-f (examples/strimzi/\S+)", text):
        assert (ROOT / path).is_file(), path
    assert {p.name for p in EXAMPLE.glob("*.yaml")} == set(re.findall(r"-f examples/strimzi/(\S+)", text))
