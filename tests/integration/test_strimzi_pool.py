"""A pool that names a Strimzi Kafka, on the real apiserver and a real Kafka with SCRAM over TLS.

Strimzi's cluster operator cannot run here. The test plays its documented part: it writes the Kafka's
and the node pool's status, the cluster CA Secret and the KafkaUser's Secret in Strimzi's shapes
(tests/support/strimzi.py, on CRDs generated from Strimzi's published API), lowers the node pool's
replicas as a user would, and removes the broker only once it is empty, as Strimzi's own scale-down
check does. The operator's side is its pool service (k8s/pools.py) in this process, with the real
Kubernetes client and Kafka: every pass kopf would run, without kopf (whose Events it keeps).

What this proves: the connection (bootstrap servers from the status, SCRAM credentials from the
KafkaUser's Secret, the CA from Strimzi's Secret) reaches a real secured Kafka; a node pool scale-down
drains exactly the node id Strimzi will remove, into its rack, cordoned, with traffic running and no
message lost. What it does not: that Strimzi's operator then removes the node (its check is played).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from tests.e2e.objects import replicas_of
from tests.e2e.test_lifecycle import assert_clean
from tests.support import strimzi
from tests.support.chart import apply_crds
from tests.support.kafka_checks import topic_with_traffic
from tests.support.status_subresource import write_status

from kafka_balancer.k8s.executions import ExecutionService
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import Liveness
from kafka_balancer.k8s.pools import GoalObject, PoolObject, PoolService
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.cordon import CORDONED_LOG_DIRS
from kafka_balancer.reconcile.events import Event
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

pytestmark = pytest.mark.integration

NAMESPACE = "kb-strimzi-pool"
CLUSTER = "main"
RUNNING = Liveness(stopping=lambda: False, paused=lambda: False)
DRAIN_TIMEOUT_S = 180


@pytest.fixture
def api(kube_bed: kube.KubeBed, strimzi_crds: Path) -> Iterator[kube.KubeBed]:
    apply_crds(kube_bed)
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(strimzi_crds))
    assert applied.returncode == 0, applied.stderr
    for crd in (*strimzi.CRDS, "brokerpools.kafkabalancer.io"):
        kube.wait_established(kube_bed, crd)
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield kube_bed
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def create(api: kube.KubeBed, manifest: dict[str, Any], status: dict[str, Any] | None = None) -> None:
    done = api.kubectl("-n", NAMESPACE, "create", "-f", "-", stdin=json.dumps(manifest))
    assert done.returncode == 0, done.stderr
    if status is not None:
        write_status(api, manifest["kind"].lower(), manifest["metadata"]["name"], NAMESPACE, status)


def secret(api: kube.KubeBed, name: str, data: dict[str, str], annotations: dict[str, str]) -> None:
    create(
        api,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "annotations": annotations},
            "stringData": data,
        },
    )


def play_strimzi(api: kube.KubeBed, bed: KafkaBed) -> None:
    """What Strimzi's operators write for a ready cluster of brokers 1 to 4 with a SCRAM user."""
    access = bed.secured_access("SASL_SSL")
    props = access.properties
    kafka = strimzi.kafka(CLUSTER, NAMESPACE)
    host, _, port = access.bootstrap_servers.split(",")[0].rpartition(":")
    listeners = [strimzi.listener_status("tls", host, int(port))]
    # Strimzi gives one bootstrap address (a Service); the bed has no Service, so every broker's.
    listeners[0]["bootstrapServers"] = access.bootstrap_servers
    status = strimzi.kafka_status(cluster_id=bed.cluster_id, listeners=listeners, node_pools=["brokers"])
    create(api, kafka, status)
    ca = Path(props["ssl.ca.location"]).read_text()
    secret(api, strimzi_ca(), {"ca.crt": ca, "ca.password": "unused"}, {})
    user = strimzi.kafka_user(
        "balancer", NAMESPACE, CLUSTER, secret_annotations={"kafkabalancer.io/pools": "main"}
    )
    user_status = strimzi.kafka_user_status("balancer")
    user_status["username"] = props["sasl.username"]  # the bed's SCRAM user
    create(api, user, user_status)
    # The user operator writes the Secret with the template's annotations.
    secret(
        api,
        "balancer",
        strimzi.scram_user_secret(props["sasl.username"], props["sasl.password"]),
        {"kafkabalancer.io/pools": "main"},
    )
    pool = strimzi.node_pool("brokers", NAMESPACE, CLUSTER, replicas=4)
    create(api, pool, node_pool_status(bed, (1, 2, 3, 4)))


def set_replicas(api: kube.KubeBed, replicas: int) -> None:
    """The user's part: the broker node pool's ``spec.replicas``."""
    patch = json.dumps({"spec": {"replicas": replicas}})
    done = api.kubectl("-n", NAMESPACE, "patch", "kafkanodepool", "brokers", "--type=merge", "-p", patch)
    assert done.returncode == 0, done.stderr


def strimzi_ca() -> str:
    return f"{CLUSTER}-cluster-ca-cert"


def node_pool_status(bed: KafkaBed, ids: tuple[int, ...]) -> dict[str, Any]:
    return strimzi.node_pool_status(cluster=CLUSTER, pool="brokers", cluster_id=bed.cluster_id, node_ids=ids)


class EventsKept(Kube):
    """The real client, but the pools' Events are kept here: kopf posts them (kopf.event), and kopf's
    settings exist only inside a running operator."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(kubeconfig)
        self.events: list[Event] = []

    def post_event(self, pool: PoolId, event: Event) -> None:
        self.events.append(event)


def service(api: kube.KubeBed, tmp_path: Path) -> tuple[Kube, PoolService]:
    client = EventsKept(str(api.kubeconfig))
    metrics = OperatorMetrics(CollectorRegistry())
    timings = Timings(execution_poll_s=1.0)
    executions = ExecutionService(client, tmp_path, timings, metrics)
    return client, PoolService(client, ClusterSource(), executions, tmp_path, timings, metrics)


def syncing(api: kube.KubeBed, tmp_path: Path) -> Callable[[], dict[str, Any]]:
    """One pass over the pool each call, as kopf's daemon makes them; returns the pool's status."""
    client, pools = service(api, tmp_path)
    goal = GoalObject("racks", {"type": "RackAware", "poolRef": {"name": "main"}}, 1, ())

    def sync() -> dict[str, Any]:
        found = client.read_custom_object("kafkabalancer.io", "v1alpha1", "brokerpools", NAMESPACE, "main")
        assert found is not None
        meta = found["metadata"]
        pool = PoolObject(
            PoolId(NAMESPACE, "main", meta["uid"]),
            meta["generation"],
            found["spec"],
            found.get("status") or {},
            meta.get("annotations") or {},
            (goal,),
        )
        pools.sync_blocking(pool, 0, RUNNING)
        after = client.read_custom_object("kafkabalancer.io", "v1alpha1", "brokerpools", NAMESPACE, "main")
        assert after is not None
        status: dict[str, Any] = after.get("status") or {}
        return status

    return sync


def test_a_node_pool_scale_down_drains_the_removed_broker_into_its_rack_without_losing_a_message(
    api: kube.KubeBed, kafka_bed_factory: Callable[..., KafkaBed], tmp_path: Path
) -> None:
    # Racks a, b, a, b: broker 4's rack has broker 2 to take its replicas.
    bed = kafka_bed_factory(brokers=4, racks=2, secured=True)
    bed.start()
    play_strimzi(api, bed)
    create(
        api,
        {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BrokerPool",
            "metadata": {"name": "main"},
            "spec": {
                "mode": "Auto",
                "strimzi": {"kafka": CLUSTER, "listener": "tls", "user": "balancer"},
                "capacity": {"networkIn": "100M", "networkOut": "100M"},
                "execution": {"throttleBytesPerSecond": "10Mi"},
            },
        },
    )
    sync = syncing(api, tmp_path)
    # RF 2 in racks a and b: 4 of 8 partitions have a replica on broker 4.
    assignment = [[1, 2], [2, 3], [3, 4], [4, 1], [1, 4], [2, 3], [3, 4], [4, 1]]
    with topic_with_traffic(bed, "strimzi", assignment) as traffic:
        status = sync()
        assert condition(status, "KafkaReachable") == "True"
        before = replicas_of(bed, traffic.topic)

        # The user lowers the node pool's replicas: Strimzi will remove the highest id, 4.
        set_replicas(api, 3)
        asked = time.monotonic()
        deadline = asked + DRAIN_TIMEOUT_S
        while 4 in {b for replicas in replicas_of(bed, traffic.topic).values() for b in replicas}:
            assert time.monotonic() < deadline, f"broker 4 not drained within {DRAIN_TIMEOUT_S} s: {status}"
            status = sync()
        drained_s = time.monotonic() - asked

        after = replicas_of(bed, traffic.topic)
        racks = bed.racks
        for partition, replicas in before.items():
            # Broker 4's replica went to broker 2, its rack's other broker; nothing else moved.
            expected = [2 if b == 4 else b for b in replicas]
            assert sorted(after[partition]) == sorted(expected), (partition, replicas, after[partition])
            assert sorted(racks[b] for b in after[partition]) == sorted(racks[b] for b in replicas)
        assert status["cordonedBrokers"] == [4]
        assert cordons(bed) == {"4": "*"}
        traffic.assert_all_read_back()
        assert_clean(bed, traffic.topic)
        print(f"\nbroker 4 drained {drained_s:.1f} s after the node pool's replicas were lowered")

        # Strimzi's check passes (broker 4 holds nothing): it removes the node and updates the status.
        bed.stop_broker(4)
        write_status(api, "kafkanodepool", "brokers", NAMESPACE, node_pool_status(bed, (1, 2, 3)))
        status = sync()
        assert condition(status, "KafkaReachable") == "True"
        state = {b["id"]: b["state"] for b in status["brokers"]}
        assert state[4] != "Draining", state
        # A broker that is gone cannot be uncordoned: its record stays until the id is back.
        assert status["cordonedBrokers"] == [4]

        # Strimzi reuses a freed node id at the next scale-up: the broker comes back uncordoned.
        set_replicas(api, 4)
        bed.restart_broker(4)
        write_status(api, "kafkanodepool", "brokers", NAMESPACE, node_pool_status(bed, (1, 2, 3, 4)))
        status = sync()
        assert status["cordonedBrokers"] == []
        wait_until(lambda: cordons(bed) == {}, timeout_s=30, what="broker 4's cordon to be removed")


def condition(status: dict[str, Any], kind: str) -> str:
    return str(next(c for c in status["conditions"] if c["type"] == kind)["status"])


def cordons(bed: KafkaBed) -> dict[str, str]:
    """The running brokers' cordon configs (KIP-1066), as Kafka holds them."""
    admin = KafkaAdmin(bed.bootstrap_servers)
    try:
        found = admin.dynamic_configs("broker", [str(b) for b in sorted(bed.racks)])
    finally:
        admin.close()
    return {
        broker: configs[CORDONED_LOG_DIRS]
        for broker, configs in found.items()
        if CORDONED_LOG_DIRS in configs
    }
