"""``kafka-balancer pool`` as a person runs it through their kubeconfig, beside the chart's operator pod:
a Manual pool's plan listed, described and approved by the CLI, then executed by the operator in its
pod. The session is printed as a transcript (``pytest -s``)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import (
    OWN_TOPIC_SPREAD,
    PLAN_TIMEOUT_S,
    apply,
    condition,
    get,
    goal,
    pool,
    skewed_topic,
)
from tests.e2e.test_lifecycle import BALANCE_TIMEOUT_S, assert_clean

from .conftest import OperatorPods, namespace_of

CLI = [sys.executable, "-m", "kafka_balancer.cli"]


def test_the_cli_approves_the_plan_a_manual_pool_shows_and_the_operator_pod_runs_it(
    node_bed: node.NodeBed, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    transcript: list[str] = []

    def cli(*args: str) -> str:
        argv = ["pool", *args, "-n", namespace, "--kubeconfig", str(node_bed.api.kubeconfig)]
        done = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, check=False)
        transcript.append(
            f"$ kafka-balancer pool {' '.join(args)} -n {namespace}\n{done.stdout}{done.stderr}"
        )
        assert done.returncode == 0, "\n".join(transcript)
        return done.stdout

    def shown() -> dict[str, Any]:
        found: dict[str, Any] = get(node_bed.api, namespace, "bp", "main").get("status", {})
        return found

    with namespace_of(node_bed, "kb-node-cli") as namespace:
        topic = "node-cli"
        skewed_topic(pod_kafka, topic)
        apply(
            node_bed.api,
            namespace,
            pool("main", pod_kafka.pod_bootstrap_servers, "Manual", topic),
            goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
        )
        wait_for(lambda: shown().get("plan", {}).get("id"), PLAN_TIMEOUT_S, "a plan", pods)
        listed = cli("get")
        assert listed.splitlines()[1].split()[:2] == ["main", "Manual"], listed
        described = cli("describe", "main")
        assert "Mode:        Manual" in described, described

        # Each pass plans afresh, and its first had no rates yet: a plan replaced after its approval
        # is not run, and the one shown then is approved in turn, as a person would.
        approved: set[str] = set()

        def executed() -> str | None:
            plan = shown().get("plan", {})
            if plan.get("executedId"):
                return str(plan["executedId"])
            if plan.get("id") and plan["id"] not in approved:
                said = cli("approve", "main")
                assert f"plan {plan['id']} approved" in said, said
                approved.add(plan["id"])
            return None

        executed_id = wait_for(executed, BALANCE_TIMEOUT_S, "an approved plan to run", pods)
        assert executed_id in approved, (executed_id, approved)
        wait_for(
            lambda: condition(get(node_bed.api, namespace, "bp", "main"), "Balanced").get("status") == "True",
            BALANCE_TIMEOUT_S,
            "the pool Balanced",
            pods,
        )
        cli("get", "main")
        after = cli("describe", "main")
        assert f"{executed_id}, " in after and "Balanced=True" in after, after
        print("\n" + "\n".join(transcript))
        assert_clean(pod_kafka, topic)
