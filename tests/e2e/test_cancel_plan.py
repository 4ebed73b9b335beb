"""End to end: a Manual pool's approved plan, throttled and mid-execution, cancelled with
``kafka-balancer pool cancel`` as a person runs it: the moves in flight are cancelled in Kafka, the
throttles removed, the pool says so, and the plan is not started again."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import (
    Writer,
    assert_no_throttle_left,
    create_topic,
    ongoing_reassignments,
    under_replicated,
)

from .conftest import OperatorProcess, wait_for
from .objects import OWN_TOPIC_SPREAD, PLAN_TIMEOUT_S, apply, condition, events, get, goal, pool

# 4 partitions, RF 2, every replica on brokers 1 and 2 (racks a, b): a plan moves half of them.
SKEWED = [[1, 2] if p % 2 else [2, 1] for p in range(4)]
# 16,000 messages of 1 kB over 31 keys: 2-6 MB a partition. A follower's first fetch takes up to
# 1 MB (replica.fetch.max.bytes) before the throttle counts it; at 20 KiB/s the rest of a move takes
# minutes: it is still copying when it is cancelled.
MESSAGES, SIZE = 16_000, 1_000
THROTTLE = "20Ki"


def pool_cli(kube_bed: kube.KubeBed, *args: str) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("kafka-balancer")), "pool", *args]
    command += ["--kubeconfig", str(kube_bed.kubeconfig)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_plan_cancelled_mid_execution_leaves_no_reassignment_no_throttle_and_is_not_run_again(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-cancel", SKEWED)
    Writer(kafka_bed, topic).write(MESSAGES, SIZE)
    throttled = {"throttleBytesPerSecond": THROTTLE, "maxMovesPerBroker": 2, "maxMoves": 4}
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "Manual", topic, execution=throttled),
        goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
    )

    def status() -> dict[str, Any]:
        found: dict[str, Any] = get(kube_bed, namespace, "bp", "main").get("status", {})
        return found

    def running() -> str | None:
        """The plan executing with data moves in flight (Kafka lists them; a reordering of leaders is
        done at once); until then the plan shown is approved (a pass may replace the plan shown before
        the approval reaches it, or before the CLI reads it: the newer one is approved then)."""
        now = status()
        execution = now.get("execution", {})
        if execution.get("phase") == "Running" and ongoing_reassignments(kafka_bed, topic):
            return str(execution["planId"])
        shown = now.get("plan", {}).get("id")
        if shown and "execution" not in now:
            approved = pool_cli(kube_bed, "approve", "main", "-n", namespace, "--plan", shown)
            # A pass that replaced the plan between the read above and the approval makes the CLI
            # refuse the id read (as it would a person's): the next poll approves the newer plan.
            replaced = approved.returncode == 2 and f"--plan {shown}: " in approved.stderr
            assert approved.returncode == 0 or (replaced and "now; review that one" in approved.stderr), (
                approved.stderr
            )
        return None

    plan_id = wait_for(running, PLAN_TIMEOUT_S, "an approved plan with moves in flight", operator)

    asked = time.monotonic()
    cancel = pool_cli(kube_bed, "cancel", "main", "-n", namespace)

    assert cancel.returncode == 0, cancel.stderr
    assert cancel.stdout.strip() == f"BrokerPool {namespace}/main: cancel of plan {plan_id} requested"
    cancelled = wait_for(
        lambda: status().get("execution", {}).get("phase") == "Cancelled",
        30,
        f"plan {plan_id} to be cancelled",
        operator,
    )
    took = time.monotonic() - asked
    assert cancelled and status()["execution"]["planId"] == plan_id
    print(f"\nplan {plan_id} cancelled {took:.1f} s after `pool cancel`")
    executing = condition(get(kube_bed, namespace, "bp", "main"), "Executing")
    assert executing["reason"] == "Cancelled", executing
    assert executing["message"].startswith(f"plan {plan_id} cancelled on request"), executing
    in_flight = int(executing["message"].split("): ", 1)[1].split(" move(s) in flight cancelled")[0])
    assert in_flight > 0, executing["message"]
    said = [e["message"] for e in events(kube_bed, namespace) if e["reason"] == "ExecutionCancelled"]
    assert said and said[0].startswith(f"Plan {plan_id} cancelled on request"), said
    assert ongoing_reassignments(kafka_bed, topic) == [], "no reassignment left in progress"
    assert_no_throttle_left(kafka_bed, topic)
    wait_for(
        lambda: not [p for p in under_replicated(kafka_bed) if p.startswith(f"{topic}-")],
        30,
        f"every partition of {topic} fully replicated",
        operator,
    )

    # The next pass (a spec change wakes the pool at once) does not start the plan again, though its
    # approval still names it.
    interval = '{"spec": {"detectionIntervalSeconds": 11}}'
    bumped = kube_bed.kubectl("patch", "bp", "main", "-n", namespace, "--type=merge", "-p", interval)
    assert bumped.returncode == 0, bumped.stderr
    generation = get(kube_bed, namespace, "bp", "main")["metadata"]["generation"]
    wait_for(
        lambda: status().get("observedGeneration") == generation, 30, "the next pass over the pool", operator
    )
    after = status()
    assert (after["execution"]["planId"], after["execution"]["phase"]) == (plan_id, "Cancelled")
    started = [e for e in events(kube_bed, namespace) if e["reason"] == "ExecutionStarted"]
    assert len(started) == 1 and plan_id in started[0]["message"], started
    assert ongoing_reassignments(kafka_bed, topic) == []
