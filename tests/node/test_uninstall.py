"""`helm uninstall` leaves no pool stuck on the operator's finalizer: its pre-delete hook has the
operator cancel a pool's moves in flight, remove its throttles and let the pool go, so deleting the
pool afterwards completes; the pools stay, and `helm install` takes them back."""

from __future__ import annotations

import time
from typing import Any

from kafka_balancer.k8s.handover import KOPF_FINALIZER, RELEASE_ANNOTATION, RELEASED
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import apply, pool
from tests.e2e.test_lifecycle import traffic
from tests.support.kafka_checks import assert_no_throttle_left, create_topic, throttles_left

from .conftest import (
    CHART,
    OPERATOR_NAMESPACE,
    RELEASE,
    OperatorPods,
    half_done_pool,
    kubectl_json,
    namespace_of,
)

# The pool's deletion once the operator is gone: nothing is left to wait for.
DELETION_S = 30.0
# The garbage collector's deletion of the uninstalled Deployment's pods.
OPERATOR_GONE_S = 60.0


def meta(bed: node.NodeBed, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl_json(bed, "get", "bp", name, "-n", namespace)["metadata"]
    return found


def reinstall(bed: node.NodeBed) -> None:
    """The session's release again, as conftest's operator_release installs it (unless the uninstall
    failed, and it is still there)."""
    if bed.helm("status", RELEASE, "-n", OPERATOR_NAMESPACE).returncode == 0:
        return
    installed = bed.helm(
        "install", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--set", "clusterWide=true",
        "--wait", "--timeout", "5m", timeout_s=360.0,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr


def test_helm_uninstall_releases_a_pool_mid_execution_and_install_takes_it_back(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    with namespace_of(node_bed, "kb-node-uninstall") as namespace:
        topic = create_topic(pod_kafka, "node-uninstall", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
        # A second pool, idle, to be taken back by the next install.
        apply(node_bed.api, namespace, pool("kept", pod_kafka.pod_bootstrap_servers, "Manual", "absent"))
        with traffic(pod_kafka, topic, messages=16_000, size=1_000):
            half_done_pool(node_bed, pods, pod_kafka, namespace, topic)
            assert throttles_left(pod_kafka, topic), "throttled while copying"
            assert KOPF_FINALIZER in meta(node_bed, namespace, "main").get("finalizers", [])
            uninstalled = node_bed.helm(
                "uninstall", RELEASE, "-n", OPERATOR_NAMESPACE, "--wait", "--timeout", "5m", timeout_s=360.0
            )
        try:
            assert uninstalled.returncode == 0, uninstalled.stdout + uninstalled.stderr
            # helm returns once the Deployment is gone; its ReplicaSet and pods are deleted after
            # that by the garbage collector (background propagation), so they are polled for.
            wait_for(lambda: not pods.live(), OPERATOR_GONE_S, "the operator's pods to be deleted")
            for name in ("main", "kept"):
                released = meta(node_bed, namespace, name)
                assert released["annotations"][RELEASE_ANNOTATION] == RELEASED
                assert not released.get("finalizers"), released
            assert_no_throttle_left(pod_kafka, topic)

            started = time.monotonic()
            deleted = node_bed.kubectl(
                "delete", "bp", "main", "-n", namespace, f"--timeout={DELETION_S:.0f}s", timeout_s=60.0
            )
            assert deleted.returncode == 0, deleted.stderr
            assert node_bed.kubectl("get", "bp", "main", "-n", namespace).returncode != 0
            print(f"\npool deleted {time.monotonic() - started:.1f}s after the uninstall")
        finally:
            reinstall(node_bed)

        def taken_back() -> bool:
            kept = meta(node_bed, namespace, "kept")
            return RELEASE_ANNOTATION not in kept.get("annotations", {}) and KOPF_FINALIZER in kept.get(
                "finalizers", []
            )

        wait_for(taken_back, 120.0, "the reinstalled operator to take the kept pool back", pods)
