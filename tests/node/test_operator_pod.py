"""The chart's operator pod under what a cluster does to it: Prometheus scrapes it through the chart's
Service, kubelet's liveness probe restarts it when it hangs, a deleted pod's successor resumes the
plan it was executing, and with two replicas only one acts."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import suppress
from pathlib import Path

from kafka_balancer import __version__
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import free_ports
from kafka_balancer_dev.localbed.prometheus import PrometheusBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import PLAN_TIMEOUT_S, apply, condition, events, get, pool, skewed_topic
from tests.e2e.test_lifecycle import (
    BALANCE_TIMEOUT_S,
    assert_clean,
    pool_status,
    traffic,
)
from tests.support.kafka_checks import create_topic, partitions

from .conftest import (
    OPERATOR_NAMESPACE,
    RELEASE,
    RESTART_TIMEOUT_S,
    OperatorPods,
    container_pids,
    half_done_pool,
    kubectl_json,
    namespace_of,
    upgrade,
)


def test_prometheus_scrapes_the_operator_through_the_charts_service(
    node_bed: node.NodeBed, pods: OperatorPods, metrics_tools: Path, tmp_path: Path
) -> None:
    service = kubectl_json(
        node_bed, "get", "service", f"{RELEASE}-kafka-balancer-metrics", "-n", OPERATOR_NAMESPACE
    )
    (port,) = service["spec"]["ports"]
    target = f"{service['spec']['clusterIP']}:{port['port']}"
    # The Service's address, not a pod's: kube-proxy routes the scrape to the operator pod.
    prometheus = PrometheusBed(metrics_tools, tmp_path / "prometheus", {}, jobs={"kafka-balancer": [target]})
    prometheus.start()  # returns once the target has been scraped
    try:
        (built,) = prometheus.query("kafka_balancer_build_info")
        labels = built["metric"]
        assert isinstance(labels, dict) and labels["version"] == __version__, built
        assert labels["instance"] == target, built
        value = built["value"]
        assert isinstance(value, list) and value[1] == "1", built
        # The operator alerts' series as a real scrape labels them: the process's start time joins its
        # build_info on the target (KafkaBalancerOperatorRestarting), and build_info is not absent.
        (started,) = prometheus.query(
            "process_start_time_seconds and on (job, instance) kafka_balancer_build_info == 1"
        )
        joined = started["metric"]
        assert isinstance(joined, dict) and joined["instance"] == target, started
        assert prometheus.query("absent(kafka_balancer_build_info == 1)") == []
    finally:
        prometheus.stop()


def test_a_kafka_the_pod_cannot_reach_is_reported_in_the_pools_status(
    node_bed: node.NodeBed, pods: OperatorPods
) -> None:
    # The node's address, where nothing listens on this port: the pod's connection is refused.
    unreachable = f"{node.NODE_IP}:{free_ports(1)[0]}"
    with namespace_of(node_bed, "kb-node-lost") as namespace:
        apply(node_bed.api, namespace, pool("lost", unreachable, "DryRun"))
        reachable = wait_for(
            lambda: condition(get(node_bed.api, namespace, "bp", "lost"), "KafkaReachable"),
            PLAN_TIMEOUT_S,
            "the KafkaReachable condition",
            pods,
        )
        assert (reachable["status"], reachable["reason"]) == ("False", "Unreachable"), reachable
        assert unreachable in reachable["message"], reachable
        assert condition(get(node_bed.api, namespace, "bp", "lost"), "Ready")["status"] == "False"


def test_the_liveness_probe_restarts_a_hung_operator(node_bed: node.NodeBed, pods: OperatorPods) -> None:
    (pod,) = wait_for(lambda: pods.ready(1), RESTART_TIMEOUT_S, "one Ready operator pod", pods)
    (status,) = pod["status"]["containerStatuses"]
    container_id = status["containerID"].split("://", 1)[1]
    hung = container_pids(container_id)
    assert hung, f"no process of container {container_id} on this machine"
    for pid in hung:
        os.kill(pid, signal.SIGSTOP)  # the operator hangs: its liveness endpoint stops answering
    try:

        def restarted() -> bool:
            (now,) = kubectl_json(node_bed, "get", "pod", pod["metadata"]["name"], "-n", OPERATOR_NAMESPACE)[
                "status"
            ]["containerStatuses"]
            return bool(now["restartCount"] > status["restartCount"] and now["ready"])

        wait_for(restarted, RESTART_TIMEOUT_S, "kubelet to restart the hung operator container", pods)
    finally:
        for pid in hung:  # the container is gone by now; this only matters if the wait failed
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    unhealthy = [
        e
        for e in events(node_bed.api, OPERATOR_NAMESPACE)
        if e["reason"] == "Unhealthy"
        and e["involvedObject"]["name"] == pod["metadata"]["name"]
        and "Liveness probe failed" in e["message"]
    ]
    assert unhealthy, "kubelet restarted the container, but not for its liveness probe"


def test_deleting_the_operator_pod_mid_execution_resumes_the_same_plan(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    with namespace_of(node_bed, "kb-node-resume") as namespace:
        topic = create_topic(pod_kafka, "node-resume", [[1, 2] if p % 2 else [2, 1] for p in range(8)])
        # ≈ 2 MB a partition at 512 KiB/s: the execution runs long enough to lose its pod half-way.
        with traffic(pod_kafka, topic, messages=16_000, size=1_000):
            (running,) = wait_for(lambda: pods.ready(1), RESTART_TIMEOUT_S, "one Ready operator pod", pods)
            plan = half_done_pool(node_bed, pods, pod_kafka, namespace, topic)
            # Read while it runs: the pass that follows its end comes at once and stores the next plan.
            planned = get(node_bed.api, namespace, "configmap", "main-plan")["data"]
            deleted_at = time.monotonic()
            deleted = node_bed.kubectl(
                "delete", "pod", running["metadata"]["name"], "-n", OPERATOR_NAMESPACE, "--wait=false"
            )
            assert deleted.returncode == 0, deleted.stderr

            def resumed_by_the_next_pod() -> bool:
                others = [p for p in pods.live() if p["metadata"]["name"] != running["metadata"]["name"]]
                return any(f"resuming plan {plan['id']}" in pods.log(p["metadata"]["name"]) for p in others)

            wait_for(resumed_by_the_next_pod, BALANCE_TIMEOUT_S, "the Deployment's next pod to resume", pods)
            resumed_after_s = time.monotonic() - deleted_at
            wait_for(
                lambda: pool_status(node_bed.api, namespace).get("plan", {}).get("executedId") == plan["id"],
                BALANCE_TIMEOUT_S,
                f"plan {plan['id']} to finish in the next pod",
                pods,
            )
        print(f"operator pod deleted → its plan resumed by the next pod: {resumed_after_s:.1f}s")

        assert planned["plan.id"] == plan["id"]
        document = json.loads(planned["plan.json"])
        now = partitions(pod_kafka, topic)
        for entry in document["partitions"]:  # nothing reverted: every partition ends where planned
            assert now[entry["partition"]][0] == entry["replicas"], entry
        state = json.loads(get(node_bed.api, namespace, "configmap", "main-execution")["data"]["state.json"])
        moved = sorted((m["topic"], m["partition"]) for m in state["moves"])
        # Nothing lost or repeated: each planned move once in the record, every one done.
        assert moved == sorted((e["topic"], e["partition"]) for e in document["partitions"])
        assert {m["status"] for m in state["moves"]} == {"done"}
        about_plan = [e for e in events(node_bed.api, namespace) if plan["id"] in e["message"]]
        started = sum(e.get("count", 1) for e in about_plan if e["reason"] == "ExecutionStarted")
        reasons = {e["reason"] for e in about_plan}
        assert started == 1, "the next pod started the plan again instead of resuming it"
        assert "ExecutionFailed" not in reasons and "ExecutionFinished" in reasons, reasons
        assert_clean(pod_kafka, topic)


def test_with_two_replicas_only_one_acts(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    upgrade(node_bed, replicaCount=2)
    try:
        first, second = wait_for(lambda: pods.ready(2), RESTART_TIMEOUT_S, "two Ready operator pods", pods)
        names = [first["metadata"]["name"], second["metadata"]["name"]]
        with namespace_of(node_bed, "kb-node-replicas") as namespace:
            skewed_topic(pod_kafka, f"{namespace}-one")
            apply(
                node_bed.api,
                namespace,
                pool("one", pod_kafka.pod_bootstrap_servers, "DryRun", f"{namespace}-one"),
            )
            said = f"pool {namespace}/one reconciled"

            def reconciled_three_times() -> list[str] | None:
                acting = [name for name in names if pods.log(name).count(said) >= 3]
                return acting or None

            # Three passes, 10 s apart: long enough for a second active replica to show itself.
            (acting,) = wait_for(
                reconciled_three_times, BALANCE_TIMEOUT_S, "three reconciles of pool one", pods
            )
            (standby,) = [name for name in names if name != acting]
            standby_log = pods.log(standby)
            assert f"pool {namespace}/one" not in standby_log, "the standby replica acted"
            # kopf's peering: the newer replica outranks the older, which pauses.
            assert acting == names[1] and "Pausing operations" in standby_log, standby_log[-3000:]
    finally:
        upgrade(node_bed, replicaCount=1)
