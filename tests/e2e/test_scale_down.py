"""A scale-down of the StatefulSet that runs a pool's brokers waits until they are drained: the real
apiserver calls the operator's webhook (tests/e2e/conftest.py's scale_down_webhook), the operator
drains the broker into its rack on a real Kafka bed under traffic, and the retried scale-down goes
through.

What this bed plays: the StatefulSet is an API object only (the bed runs no controller manager, so
no pods): its broker ids are the bed's, and the test stops broker 4 where Kubernetes would delete
its pod. The node tier runs Kafka as real pods of a StatefulSet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import create_topic, partitions, under_replicated

from .conftest import OperatorProcess, wait_for
from .objects import apply, get
from .test_lifecycle import (
    BALANCE_TIMEOUT_S,
    DRAIN_PAIRS,
    assert_clean,
    auto_pool,
    balanced,
    pool_status,
    rack_aware,
    traffic,
)

SCALE_DOWN = "kafkabalancer.io/scale-down"


def stateful_set(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "kafka", "image": "kafka-balancer-bed/kafka:none"}]},
            },
        },
    }


def scale(kube_bed: kube.KubeBed, namespace: str, name: str, replicas: int, *flags: str) -> tuple[bool, str]:
    done = kube_bed.kubectl("scale", "statefulset", name, "-n", namespace, f"--replicas={replicas}", *flags)
    return done.returncode == 0, (done.stderr or done.stdout).strip()


def replicas_of_set(kube_bed: kube.KubeBed, namespace: str, name: str) -> int:
    return int(get(kube_bed, namespace, "statefulset", name)["spec"]["replicas"])


def annotation(kube_bed: kube.KubeBed, namespace: str) -> dict[str, Any] | None:
    found = get(kube_bed, namespace, "bp", "main")["metadata"].get("annotations", {}).get(SCALE_DOWN)
    return None if found is None else dict(json.loads(found))


def broker_state(kube_bed: kube.KubeBed, namespace: str, broker: int) -> str:
    brokers = pool_status(kube_bed, namespace).get("brokers", [])
    return next((str(b["state"]) for b in brokers if b["id"] == broker), "")


def test_a_scale_down_waits_for_its_broker_to_drain_into_its_rack_then_goes_through(
    kube_bed: kube.KubeBed,
    kafka_bed_factory: Callable[..., KafkaBed],
    operator: OperatorProcess,
    namespace: str,
) -> None:
    bed = kafka_bed_factory(brokers=4, racks=3)  # racks a, b, c, a
    bed.start()
    topic = create_topic(bed, "e2e-scale-down", [list(p) for p in DRAIN_PAIRS])
    apply(kube_bed, namespace, stateful_set("kafka", 4), stateful_set("zookeeper", 3))

    with traffic(bed, topic):
        auto_pool(bed, kube_bed, namespace, topic, statefulSet={"name": "kafka", "brokerIdOffset": 1})
        wait_for(balanced(kube_bed, namespace), BALANCE_TIMEOUT_S, "the pool to be Balanced", operator)
        start = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        held = sum(4 in replicas for replicas in start.values())
        assert held > 0

        # A server-side dry run gets the answer and starts nothing.
        allowed, said = scale(kube_bed, namespace, "kafka", 3, "--dry-run=server")
        assert not allowed and "held back" in said, said
        assert annotation(kube_bed, namespace) is None

        requested = time.monotonic()
        allowed, said = scale(kube_bed, namespace, "kafka", 3)
        assert not allowed
        assert (
            f"StatefulSet {namespace}/kafka: scale-down to 3 replicas held back: brokers [4] still hold "
            f"{held} replicas (0 of {held} moved so far); BrokerPool {namespace}/main drains them into "
            "their racks and the drain runs by itself; retry the same scale-down once they are empty"
        ) in said, said
        assert replicas_of_set(kube_bed, namespace, "kafka") == 4
        # The same count in the manifest, as kubectl apply or a GitOps sync sends it: the same answer.
        manifest = {**stateful_set("kafka", 3), "metadata": {"name": "kafka", "namespace": namespace}}
        applied = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
        assert applied.returncode != 0 and "scale-down to 3 replicas held back" in applied.stderr, (
            applied.stderr
        )
        assert replicas_of_set(kube_bed, namespace, "kafka") == 4

        # kubectl scale back to the count it has withdraws the drain; asked again, it starts again.
        allowed, said = scale(kube_bed, namespace, "kafka", 4)
        assert allowed, said
        assert annotation(kube_bed, namespace) is None
        allowed, _ = scale(kube_bed, namespace, "kafka", 3)
        assert not allowed
        assert annotation(kube_bed, namespace) == {
            "statefulSet": "kafka",
            "replicas": 3,
            "brokers": [4],
            "replicasHeld": held,
        }

        wait_for(
            lambda: broker_state(kube_bed, namespace, 4) == "Drained",
            BALANCE_TIMEOUT_S,
            "broker 4 to be Drained",
            operator,
        )
        allowed, said = scale(kube_bed, namespace, "kafka", 3)
        took = time.monotonic() - requested
        assert allowed, said
        assert replicas_of_set(kube_bed, namespace, "kafka") == 3
        assert pool_status(kube_bed, namespace).get("cordonedBrokers") == [4]
        after = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        bed.stop_broker(4)  # what the StatefulSet controller does to the pod of ordinal 3

    # Every replica broker 4 held landed on broker 1, the other broker of rack a: none crossed racks.
    assert all(4 not in replicas for replicas in after.values())
    for p, replicas in start.items():
        if 4 in replicas:
            assert 1 in after[p], f"partition {p}: {replicas} -> {after[p]}"
    assert rack_aware(bed, topic)
    assert under_replicated(bed) == []
    assert_clean(bed, topic)
    wait_for(lambda: broker_state(kube_bed, namespace, 4) == "Removed", 60, "broker 4 Removed", operator)

    # An operator that is down holds up only the pools' scale-downs, never another StatefulSet.
    operator.stop()
    try:
        asked = time.monotonic()
        allowed, said = scale(kube_bed, namespace, "zookeeper", 1)
        other_s = time.monotonic() - asked
        assert allowed, said
        allowed, said = scale(kube_bed, namespace, "kafka", 2)
        assert not allowed and "failed calling webhook" in said, said
        assert replicas_of_set(kube_bed, namespace, "kafka") == 3
    finally:
        operator.start()
    print(
        f"\nscale-down: first request → allowed {took:.1f}s ({held} replicas moved, 0 across racks); "
        f"another StatefulSet scaled with the operator down in {other_s:.2f}s"
    )
