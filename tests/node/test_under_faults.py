"""One executor at a time in the cluster too: the chart's operator pods under a frozen container, a
deleted pod with a standby beside it, and the apiserver restarted under a running pod.

The same scenarios as tests/e2e/test_fencing.py, with the operator as users run it: pods of the
chart's Deployment, scheduled by a real kubelet, reaching the apiserver through the cluster's Service.
A producer writes throughout and every message is read back.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import events
from tests.e2e.test_fencing import (
    OUTAGE_S,
    assert_taken_over_once,
    executed,
    finished_then_dry_run,
    moves_to_go,
    reasons_for,
    submissions,
)
from tests.e2e.test_lifecycle import BALANCE_TIMEOUT_S, assert_clean, traffic
from tests.support.kafka_checks import create_topic

from .conftest import (
    OPERATOR_NAMESPACE,
    RESTART_TIMEOUT_S,
    KeptLogs,
    OperatorPods,
    apply_pool,
    container_pids,
    half_done_pool,
    kubectl_json,
    namespace_of,
    upgrade,
)

# A standby takes over 15 s after the active replica falls silent (the execution lease is 15 s too).
PEERING_LIFETIME_S = 15
# The frozen container is thawed once the standby took over, and at the latest after this: below
# kubelet's liveness limit (3 failed probes 20 s apart), so the replica wakes up rather than restarts.
FREEZE_LIMIT_S = 38.0


@pytest.fixture
def two_replicas(node_bed: node.NodeBed, pods: OperatorPods) -> Iterator[list[str]]:
    """The release with two replicas and a short peering lifetime; the pods' names, oldest first."""
    upgrade(node_bed, replicaCount=2, peeringLifetimeSeconds=PEERING_LIFETIME_S)
    try:
        ready = wait_for(lambda: pods.ready(2), RESTART_TIMEOUT_S, "two Ready operator pods", pods)
        yield [p["metadata"]["name"] for p in ready]
    finally:
        upgrade(node_bed, replicaCount=1, peeringLifetimeSeconds=60)


def restarts(bed: node.NodeBed, name: str) -> int:
    pod = kubectl_json(bed, "get", "pod", name, "-n", OPERATOR_NAMESPACE)
    return int(pod["status"]["containerStatuses"][0]["restartCount"])


def test_a_frozen_pod_that_wakes_after_a_takeover_never_submits_again(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed, two_replicas: list[str]
) -> None:
    with namespace_of(node_bed, "kb-node-freeze") as namespace:
        key = f"{namespace}/main"
        acquired = f"lease of pool {key} acquired"
        topic = create_topic(pod_kafka, "node-freeze", [[1, 2] if p % 2 else [2, 1] for p in range(16)])
        with traffic(pod_kafka, topic, messages=32_000, size=1_000):
            # Slow enough that moves are still pending when the frozen pod wakes up.
            apply_pool(node_bed, pod_kafka, namespace, topic, throttleBytesPerSecond="128Ki")
            plan = wait_for(
                moves_to_go(node_bed.api, namespace, pending=3),
                BALANCE_TIMEOUT_S,
                "the execution running with at least 3 moves to go",
                pods,
            )
            (active,) = [name for name in two_replicas if acquired in pods.log(name)]
            (standby,) = [name for name in two_replicas if name != active]
            container = kubectl_json(node_bed, "get", "pod", active, "-n", OPERATOR_NAMESPACE)["status"]
            container_id = container["containerStatuses"][0]["containerID"].split("://", 1)[1]
            frozen = container_pids(container_id)
            assert frozen, f"no process of container {container_id} on this machine"
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            try:
                wait_for(
                    lambda: acquired in pods.log(standby),
                    FREEZE_LIMIT_S,
                    "the standby pod to take the execution over",
                    pods,
                )
            finally:
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
            wait_for(
                lambda: f"lease of pool {key} lost by" in pods.log(active),
                60,
                "the thawed pod to stop",
                pods,
            )
            state = finished_then_dry_run(node_bed.api, namespace, plan["id"], pods)
        # The frozen container woke up: kubelet did not restart it (its log is whole).
        assert restarts(node_bed, active) == 0, "kubelet restarted the frozen container: no wake-up"
        logs = [pods.log(active), pods.log(standby)]

        overlap = assert_taken_over_once(
            node_bed.api, pod_kafka, namespace, plan["id"], state, logs, topic, pods
        )
        print(f"\nin-cluster freeze: longest time two pods both owned the execution: {overlap:.3f}s")


def test_deleting_the_active_pod_hands_its_execution_to_the_standby_once(
    node_bed: node.NodeBed,
    pods: OperatorPods,
    pod_kafka: KafkaBed,
    two_replicas: list[str],
    kept_logs: KeptLogs,
) -> None:
    for name in two_replicas:  # a deleted pod's log goes with it: keep it as it is written
        kept_logs.keep(name)
    with namespace_of(node_bed, "kb-node-handover") as namespace:
        key = f"{namespace}/main"
        acquired = f"lease of pool {key} acquired"
        topic = create_topic(pod_kafka, "node-handover", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
        with traffic(pod_kafka, topic, messages=16_000, size=1_000):
            plan = half_done_pool(node_bed, pods, pod_kafka, namespace, topic)
            (active,) = [name for name in two_replicas if acquired in kept_logs.text(name)]
            (standby,) = [name for name in two_replicas if name != active]
            deleted_at = time.monotonic()
            deleted = node_bed.kubectl("delete", "pod", active, "-n", OPERATOR_NAMESPACE, "--wait=false")
            assert deleted.returncode == 0, deleted.stderr
            wait_for(
                lambda: acquired in kept_logs.text(standby),
                BALANCE_TIMEOUT_S,
                "the standby pod to take the execution over",
                pods,
            )
            handed_over_s = time.monotonic() - deleted_at
            state = finished_then_dry_run(node_bed.api, namespace, plan["id"], pods)
            # The pod the Deployment starts in the deleted one's place may take the execution over
            # from the standby in turn (a CI run: the standby released the lease 2.4 s after taking
            # it, and the plan's last move was submitted by neither original pod): its log counts
            # too, read while it lives.
            others = [p["metadata"]["name"] for p in pods.live()]
        replacements = [pods.log(name) for name in others if name not in two_replicas]
        logs = [kept_logs.text(active), kept_logs.text(standby), *replacements]

        overlap = assert_taken_over_once(
            node_bed.api, pod_kafka, namespace, plan["id"], state, logs, topic, pods
        )
        print(
            f"\nactive pod deleted → standby owns the execution: {handed_over_s:.1f}s; overlap {overlap:.3f}s"
        )


def test_an_apiserver_restart_under_the_operator_pod_is_ridden_out(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    (pod,) = wait_for(lambda: pods.ready(1), RESTART_TIMEOUT_S, "one Ready operator pod", pods)
    name = pod["metadata"]["name"]
    with namespace_of(node_bed, "kb-node-outage") as namespace:
        topic = create_topic(pod_kafka, "node-outage", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
        with traffic(pod_kafka, topic, messages=16_000, size=1_000):
            plan = half_done_pool(node_bed, pods, pod_kafka, namespace, topic)
            node_bed.stop_apiserver()
            try:
                time.sleep(OUTAGE_S)  # the outage itself is the scenario
            finally:
                node_bed.start_apiserver()
            back = time.monotonic()
            at_back = len(submissions(pods.log(name), topic))

            def resumed() -> bool:
                later = submissions(pods.log(name), topic)
                return len(later) > at_back or executed(node_bed.api, namespace, plan["id"])

            wait_for(resumed, 120, "moves to resume after the outage", pods)
            resumed_after = time.monotonic() - back
            wait_for(
                lambda: executed(node_bed.api, namespace, plan["id"]),
                BALANCE_TIMEOUT_S,
                "the plan to finish",
                pods,
            )

        outage = reasons_for(node_bed.api, namespace, "KubernetesApiOutage")
        assert outage and "unreachable" in outage[0]["message"], outage
        reasons = {e["reason"] for e in events(node_bed.api, namespace) if plan["id"] in e["message"]}
        assert "ExecutionFailed" not in reasons and "ExecutionFinished" in reasons, reasons
        assert restarts(node_bed, name) == 0, "the operator container restarted during the outage"
        assert_clean(pod_kafka, topic)
        assert resumed_after < 15.0, f"moves resumed {resumed_after:.1f}s after the apiserver was back"
        print(f"\nin-cluster outage: apiserver back → moves resuming {resumed_after:.1f}s")
