"""A pool that names a Strimzi Kafka (reconcile/strimzi.py, k8s/strimzi.py): its connection,
credentials, capacities and node pool scale-downs read from Strimzi's resources in the shapes
Strimzi documents (tests/support/strimzi.py), on in-memory Kubernetes and Kafka. The same resources
on the real apiserver and Kafka: tests/integration/test_strimzi_pool.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import InputError
from kafka_balancer.k8s.pools import PoolObject
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.reconcile.strimzi import StrimziCluster, parse_node_ids, removed_node_ids, resolve
from tests.support import strimzi
from tests.unit.k8s.kube_fake import FakeKube
from tests.unit.k8s.test_orchestration import GOAL, RUNNING, Bed, bed

pytestmark = pytest.mark.unit

NAMESPACE = "kafka"
CLUSTER = "main"
CA = "-----BEGIN CERTIFICATE-----\nMIIBcurrent\n-----END CERTIFICATE-----\n"
OLD_CA = "-----BEGIN CERTIFICATE-----\nMIIBrenewed\n-----END CERTIFICATE-----\n"
CAPACITY = {"networkIn": "100M", "networkOut": "100M"}
HOST = f"{CLUSTER}-kafka-bootstrap.{NAMESPACE}.svc"


def spec(**strimzi_ref: Any) -> BrokerPoolSpec:
    ref = {"kafka": CLUSTER, "listener": "tls", "user": "balancer", **strimzi_ref}
    return BrokerPoolSpec.model_validate({"strimzi": ref, "capacity": CAPACITY})


def kafka(**spec_fields: Any) -> dict[str, Any]:
    found = strimzi.kafka(CLUSTER, NAMESPACE)
    found["spec"].update(spec_fields)
    listeners = [
        strimzi.listener_status("plain", HOST, 9092),
        strimzi.listener_status("tls", HOST, 9093, [CA]),
    ]
    found["status"] = strimzi.kafka_status(cluster_id="c", listeners=listeners, node_pools=["brokers"])
    return found


def node_pool(
    name: str = "brokers", ids: tuple[int, ...] = (1, 2, 3), replicas: int = 3, **fields: Any
) -> dict[str, Any]:
    found = strimzi.node_pool(name, NAMESPACE, CLUSTER, replicas=replicas, **fields)
    found["status"] = strimzi.node_pool_status(cluster=CLUSTER, pool=name, cluster_id="c", node_ids=ids)
    return found


def user(authentication: str = "scram-sha-512") -> dict[str, Any]:
    found = strimzi.kafka_user("balancer", NAMESPACE, CLUSTER, authentication=authentication)
    found["status"] = strimzi.kafka_user_status("balancer")
    return found


def encoded(data: dict[str, str]) -> dict[str, bytes]:
    return {k: v.encode() for k, v in data.items()}


def found(**fields: Any) -> StrimziCluster:
    values: dict[str, Any] = {
        "kafka": kafka(),
        "node_pools": [node_pool()],
        "ca_secret": encoded({"ca.crt": CA, "ca-2026-01-01.crt": OLD_CA, "ca.password": "x"}),
        "user": user(),
        "user_secret": encoded(strimzi.scram_user_secret("balancer", "s3cret")),
    }
    return StrimziCluster(**{**values, **fields})


def test_a_scram_user_on_a_tls_listener_connects_with_the_status_address_and_every_ca_certificate() -> None:
    resolved = resolve(spec(), found())

    kafka_ = resolved.spec.connection()
    assert (kafka_.bootstrap_servers, kafka_.security_protocol) == (f"{HOST}:9093", "SASL_SSL")
    assert kafka_.sasl is not None and kafka_.sasl.mechanism == "SCRAM-SHA-512"
    # The user name is the KafkaUser's status; its Secret has only the password.
    assert resolved.sasl == {"username": "balancer", "password": "s3cret"}
    assert resolved.tls == {"ca.crt": (CA + OLD_CA).encode()}


def test_a_tls_user_logs_in_with_its_certificate_and_key() -> None:
    data = strimzi.tls_user_secret("CERT\n", "KEY\n", CA)
    kafka_ = kafka()
    kafka_["spec"]["kafka"]["listeners"][1]["authentication"] = {"type": "tls"}

    resolved = resolve(spec(), found(kafka=kafka_, user=user("tls"), user_secret=encoded(data)))

    assert resolved.spec.connection().security_protocol == "SSL"
    assert resolved.sasl is None
    assert resolved.tls is not None
    assert (resolved.tls["tls.crt"], resolved.tls["tls.key"]) == (b"CERT\n", b"KEY\n")


def test_tls_authentication_on_a_listener_without_tls_is_refused() -> None:
    kafka_ = kafka()
    kafka_["spec"]["kafka"]["listeners"][0]["authentication"] = {"type": "tls"}

    with pytest.raises(InputError, match="listener plain authenticates with tls but has tls: false"):
        secret = encoded(strimzi.tls_user_secret("CERT\n", "KEY\n", CA))
        resolve(spec(listener="plain"), found(kafka=kafka_, user=user("tls"), user_secret=secret))


def test_a_plain_listener_needs_no_user_and_no_ca() -> None:
    resolved = resolve(spec(listener="plain", user=None), found(user=None, user_secret=None, ca_secret=None))

    assert resolved.spec.connection().bootstrap_servers == f"{HOST}:9092"
    assert resolved.spec.connection().security_protocol == "PLAINTEXT"
    assert (resolved.sasl, resolved.tls) == (None, None)


@pytest.mark.parametrize(
    ("ref", "cluster", "message"),
    [
        ({}, {"kafka": None}, "spec.strimzi.kafka: Kafka main not found in the pool's namespace"),
        (
            {"listener": "external"},
            {},
            "spec.strimzi.listener: Kafka main has no listener 'external' (it has ['plain', 'tls'])",
        ),
        ({"user": None}, {}, "spec.strimzi.user: Kafka main's listener tls authenticates with scram-sha-512"),
        ({}, {"user": None}, "spec.strimzi.user: KafkaUser balancer not found in the pool's namespace"),
        ({}, {"user": user("tls")}, "spec.strimzi.user: KafkaUser balancer is no scram-sha-512 user"),
        (
            {},
            {"ca_secret": None},
            "spec.strimzi.kafka: the cluster CA Secret main-cluster-ca-cert is missing",
        ),
        (
            {},
            {"kafka": kafka(cruiseControl={"autoRebalance": [{"mode": "remove-brokers"}]})},
            "spec.strimzi.kafka: Kafka main has spec.cruiseControl.autoRebalance",
        ),
        ({"nodePools": ["big"]}, {}, "spec.strimzi.nodePools: no KafkaNodePool ['big'] of Kafka main"),
        (
            {},
            {"node_pools": [node_pool(roles=("controller",))]},
            "spec.strimzi: Kafka main has no KafkaNodePool",
        ),
    ],
)
def test_what_strimzi_has_not_written_yet_or_cannot_serve_is_refused_naming_the_field(
    ref: dict[str, Any], cluster: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as err:
        resolve(spec(**ref), found(**cluster))
    assert str(err.value).startswith(message)


def test_capacities_a_node_pool_does_not_give_are_said_naming_it() -> None:
    no_cpu = node_pool()
    del no_cpu["spec"]["resources"]
    with pytest.raises(
        InputError, match=r"capacity\.cpu: not given, and KafkaNodePool brokers has no cpu limit"
    ):
        resolve(spec(), found(node_pools=[no_cpu]))
    bad_size = node_pool(volume_size="lots")
    with pytest.raises(
        InputError, match=r"KafkaNodePool brokers: spec\.storage size 'lots' is not a Kubernetes"
    ):
        resolve(spec(), found(node_pools=[bad_size]))


def test_a_kafka_not_ready_yet_is_said_so() -> None:
    kafka_ = kafka()
    del kafka_["status"]

    with pytest.raises(InputError, match="gives no bootstrap servers for listener tls yet"):
        resolve(spec(), found(kafka=kafka_))


def test_capacities_come_from_each_node_pool_and_what_the_pool_gives_wins() -> None:
    pools = [
        node_pool("old", (1, 2, 3), volume_size="100Gi", cpu="4"),
        node_pool("new", (10, 11), volume_size="1Ti", cpu="16"),
    ]

    capacity = resolve(spec(), found(node_pools=pools)).spec.capacity

    per_broker = {o.broker: (o.disk, o.cpu) for o in capacity.overrides}
    assert per_broker == {
        1: (100 * 2**30, "4"),
        2: (100 * 2**30, "4"),
        3: (100 * 2**30, "4"),
        10: (2**40, "16"),
        11: (2**40, "16"),
    }
    given = BrokerPoolSpec.model_validate(
        {"strimzi": {"kafka": CLUSTER, "listener": "plain"}, "capacity": {**CAPACITY, "cpu": "8"}}
    )
    capacity = resolve(given, found(node_pools=pools)).spec.capacity
    assert {o.broker: o.cpu for o in capacity.overrides} == dict.fromkeys((1, 2, 3, 10, 11), "8")


def test_a_node_pool_scale_down_drains_the_highest_ids_or_those_strimzi_is_told_to_remove() -> None:
    assert removed_node_ids(node_pool(ids=(1, 2, 3, 4), replicas=2)) == (3, 4)
    named = node_pool(ids=(1, 2, 3, 4), replicas=2)
    named["metadata"]["annotations"] = {"strimzi.io/remove-node-ids": "[2]"}
    assert removed_node_ids(named) == (2, 4)
    assert removed_node_ids(node_pool(ids=(1, 2, 3), replicas=3)) == ()
    assert removed_node_ids(node_pool(ids=(1, 2), replicas=5)) == ()

    by_hand = BrokerPoolSpec.model_validate(
        {"strimzi": {"kafka": CLUSTER, "listener": "plain"}, "capacity": CAPACITY, "drain": [7]}
    )
    resolved = resolve(by_hand, found(node_pools=[named]))

    assert resolved.spec.drain == [2, 4, 7]
    assert resolved.scale_downs == {"brokers": (2, 4)}


def test_strimzis_node_id_lists_are_read_as_it_writes_them() -> None:
    assert parse_node_ids("p", "[3, 5-7]") == [3, 5, 6, 7]
    assert parse_node_ids("p", "[9-7]") == [9, 8, 7]
    assert parse_node_ids("p", None) == []
    for bad in ("3,4", "[a]", "[1-]", "[0-99999]"):
        with pytest.raises(InputError, match=r"KafkaNodePool p: annotation strimzi\.io/remove-node-ids"):
            parse_node_ids("p", bad)


# -- through the pool service -----------------------------------------------------------------------


def strimzi_bed(tmp_path: Path, *, annotated: bool = True, replicas: int = 3) -> Bed:
    kube = FakeKube()
    kube.custom_objects[("kafkas", NAMESPACE, CLUSTER)] = kafka()
    pool = node_pool(replicas=replicas)
    kube.custom_objects[("kafkanodepools", NAMESPACE, "brokers")] = pool
    kube.custom_objects[("kafkausers", NAMESPACE, "balancer")] = user()
    kube.secrets[(NAMESPACE, "main-cluster-ca-cert")] = encoded({"ca.crt": CA})
    kube.secrets[(NAMESPACE, "balancer")] = encoded(strimzi.scram_user_secret("balancer", "s3cret"))
    if annotated:
        kube.secret_annotations[(NAMESPACE, "balancer")] = {"kafkabalancer.io/pools": "main"}
    return bed(tmp_path, kube=kube)


def sync(b: Bed, pool: PoolId, mode: str = "DryRun") -> None:
    manifest = {
        "mode": mode,
        "strimzi": {"kafka": CLUSTER, "listener": "tls", "user": "balancer"},
        "capacity": CAPACITY,
    }
    b.service.sync_blocking(PoolObject(pool, 1, manifest, b.kube.pool_status(pool), {}, (GOAL,)), 0, RUNNING)


POOL = PoolId(NAMESPACE, "main", "uid-main")


def test_a_users_secret_not_meant_for_the_pool_is_not_used(tmp_path: Path) -> None:
    b = strimzi_bed(tmp_path, annotated=False)

    sync(b, POOL)

    valid = next(c for c in b.status()["conditions"] if c["type"] == "SpecValid")
    assert valid["status"] == "False"
    assert valid["message"].startswith("spec.strimzi.user: Secret kafka/balancer is not meant for this pool")
    assert b.reader.reads == 0


def test_credentials_strimzi_renews_are_used_at_the_next_pass(tmp_path: Path) -> None:
    b = strimzi_bed(tmp_path)
    spec_ = BrokerPoolSpec.model_validate(
        {"strimzi": {"kafka": CLUSTER, "listener": "tls", "user": "balancer"}, "capacity": CAPACITY}
    )
    props = b.service.connection(POOL, spec_)
    assert (props["sasl.username"], props["sasl.password"]) == ("balancer", "s3cret")
    assert Path(props["ssl.ca.location"]).read_text() == CA

    b.kube.secrets[(NAMESPACE, "balancer")] = encoded(strimzi.scram_user_secret("balancer", "renewed"))
    b.kube.secrets[(NAMESPACE, "main-cluster-ca-cert")] = encoded({"ca.crt": CA, "ca-old.crt": OLD_CA})

    props = b.service.connection(POOL, spec_)
    assert props["sasl.password"] == "renewed"
    assert Path(props["ssl.ca.location"]).read_text() == CA + OLD_CA


def test_a_node_pool_scale_down_drains_its_brokers_cordoned_and_raising_replicas_withdraws_it(
    tmp_path: Path,
) -> None:
    b = strimzi_bed(tmp_path)
    pool = b.kube.custom_objects[("kafkanodepools", NAMESPACE, "brokers")]
    # Broker 2 holds replicas of every partition (test_orchestration's cluster); Strimzi is told
    # to remove it rather than the highest id.
    pool["spec"]["replicas"] = 2
    pool["metadata"]["annotations"] = {"strimzi.io/remove-node-ids": "[2]"}

    sync(b, POOL)

    assert b.status()["cordonedBrokers"] == [2]
    assert b.cluster.configs[("broker", "2")] == {"cordoned.log.dirs": "*"}
    plan = json.loads(b.kube.config_maps[(NAMESPACE, "main-plan")].data["plan.json"])
    assert plan["partitions"], "a drain of a broker holding replicas plans moves"
    assert all(2 not in move["replicas"] for move in plan["partitions"])

    pool["spec"]["replicas"] = 3
    sync(b, POOL)

    assert b.status()["cordonedBrokers"] == []
    assert b.cluster.configs[("broker", "2")] == {}
