"""End to end: kubectl applies pools and goals, the operator process plans (and executes) on real Kafka."""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any

from kafka_balancer.k8s.settings import Timings
from kafka_balancer.reconcile.status import parse_rfc3339
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import free_ports
from tests.support.argocd import ArgoHealth
from tests.support.kafka_checks import extra_broker

from .conftest import OperatorProcess, wait_for
from .objects import (
    OWN_TOPIC_SPREAD,
    PLAN_TIMEOUT_S,
    apply,
    condition,
    events,
    get,
    goal,
    pool,
    replicas_of,
    skewed_topic,
)


def test_dry_run_writes_the_plan_to_a_config_map_and_the_status(
    kube_bed: kube.KubeBed,
    kafka_bed: KafkaBed,
    operator: OperatorProcess,
    namespace: str,
    argo_health: ArgoHealth,
) -> None:
    topic = "e2e-dry-run"
    skewed_topic(kafka_bed, topic)
    before = replicas_of(kafka_bed, topic)
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "DryRun", topic),
        goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
        goal("racks", "main", type="RackAware"),
    )

    status = wait_for(
        lambda: get(kube_bed, namespace, "bp", "main").get("status", {}).get("plan"),
        PLAN_TIMEOUT_S,
        "a plan in the pool's status",
        operator,
    )
    pool_obj = get(kube_bed, namespace, "bp", "main")
    plan_map = get(kube_bed, namespace, "configmap", "main-plan")
    plan = json.loads(plan_map["data"]["plan.json"])

    assert plan_map["data"]["plan.id"] == status["id"]
    assert plan_map["metadata"]["ownerReferences"][0]["uid"] == pool_obj["metadata"]["uid"]
    assert plan["version"] == 1 and plan["partitions"]
    assert {p["topic"] for p in plan["partitions"]} == {topic}
    assert status["movesTotal"] >= 4 and status["movesRemaining"] == status["movesTotal"]
    assert condition(pool_obj, "PlanReady")["status"] == "True"
    assert condition(pool_obj, "Balanced")["status"] == "False"
    assert condition(pool_obj, "KafkaReachable")["status"] == "True"
    assert condition(pool_obj, "Ready")["observedGeneration"] == pool_obj["metadata"]["generation"]
    assert [b["rack"] for b in pool_obj["status"]["brokers"]] == ["a", "b", "c", "a"]
    loads = json.loads(get(kube_bed, namespace, "configmap", "main-loads")["data"]["report.json"])
    assert [b["id"] for b in loads["brokers"]] == [1, 2, 3, 4]
    replicas_goal = wait_for(
        lambda: condition(get(kube_bed, namespace, "bg", "replicas"), "Satisfied"), 30, "the goal's status"
    )
    assert replicas_goal["status"] == "False"
    assert get(kube_bed, namespace, "bg", "replicas")["status"]["worstDeviation"].endswith("%")
    assert "PlanReady" in {e["reason"] for e in events(kube_bed, namespace)}
    # Argo CD's health checks on what the operator wrote: a DryRun pool with its plan shown is as it
    # should be; its unmet goal is work nothing will do, not a failure.
    assert argo_health(get(kube_bed, namespace, "bp", "main"))[0] == "Healthy"
    assert argo_health(get(kube_bed, namespace, "bg", "replicas"))[0] == "Progressing"
    # DryRun never moves anything.
    assert replicas_of(kafka_bed, topic) == before


def test_manual_refuses_a_wrong_plan_id_and_executes_exactly_the_approved_plan(
    kube_bed: kube.KubeBed,
    kafka_bed: KafkaBed,
    operator: OperatorProcess,
    namespace: str,
    argo_health: ArgoHealth,
) -> None:
    topic = "e2e-manual"
    skewed_topic(kafka_bed, topic)
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "Manual", topic),
        goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
    )
    plan_id = wait_for(
        lambda: get(kube_bed, namespace, "bp", "main").get("status", {}).get("plan", {}).get("id"),
        PLAN_TIMEOUT_S,
        "a plan",
        operator,
    )
    approval = "kafkabalancer.io/approve"
    # Argo CD shows a plan that waits for a person as Suspended, a refused approval as Degraded.
    status, message = argo_health(get(kube_bed, namespace, "bp", "main"))
    assert status == "Suspended" and message.startswith("AwaitingApproval: plan "), message

    wrong = kube_bed.kubectl("annotate", "bp", "main", "-n", namespace, f"{approval}=0000000000")
    assert wrong.returncode == 0, wrong.stderr
    refused = wait_for(
        lambda: (
            condition(get(kube_bed, namespace, "bp", "main"), "ApprovalValid").get("reason")
            == "StaleApproval"
        ),
        60,
        "the wrong approval to be refused",
        operator,
    )
    assert refused
    assert "ApprovalRefused" in {e["reason"] for e in events(kube_bed, namespace)}
    status, message = argo_health(get(kube_bed, namespace, "bp", "main"))
    assert status == "Degraded" and message.startswith("StaleApproval: "), message
    assert not get(kube_bed, namespace, "bp", "main")["status"]["plan"].get("executedId")

    # The plan shown now is approved, as a person would: each pass plans afresh, and the first one
    # had no rates yet (one sample), so the plan shown before may have been replaced meanwhile (the
    # shared bed's other topics carry traffic). A plan replaced after the approval makes it stale:
    # then the new current plan is approved again. Only an approved id is ever executed.
    approved: dict[str, dict[str, Any]] = {}

    def approve_current() -> None:
        shown = get(kube_bed, namespace, "bp", "main")["status"]["plan"]["id"]
        data = get(kube_bed, namespace, "configmap", "main-plan")["data"]
        if data["plan.id"] != shown or shown in approved:
            return
        approved[shown] = json.loads(data["plan.json"])
        right = kube_bed.kubectl(
            "annotate", "bp", "main", "-n", namespace, f"{approval}={shown}", "--overwrite"
        )
        assert right.returncode == 0, right.stderr

    def executed() -> str | None:
        status = get(kube_bed, namespace, "bp", "main").get("status", {})
        done = status.get("plan", {}).get("executedId")
        if done:
            return str(done)
        approve_current()
        return None

    approve_current()
    executed_id = wait_for(
        executed, 180, f"an approved plan ({', '.join(approved)}) to be executed", operator
    )
    assert executed_id in approved, (executed_id, list(approved))
    plan = approved[executed_id]
    print(f"\nplans approved: {len(approved)} (the first, {plan_id}, shown before the wrong approval)")

    after = replicas_of(kafka_bed, topic)
    for entry in plan["partitions"]:
        assert after[entry["partition"]] == entry["replicas"]
    pool_obj = get(kube_bed, namespace, "bp", "main")
    assert pool_obj["status"]["execution"]["phase"] == "Succeeded"
    reasons = {e["reason"] for e in events(kube_bed, namespace)}
    assert {"ExecutionStarted", "ExecutionFinished"} <= reasons
    state = json.loads(get(kube_bed, namespace, "configmap", "main-execution")["data"]["state.json"])
    assert state["moves"]
    # Executed and verified, the goal met: Argo CD shows both healthy once the next pass reports it.
    wait_for(
        lambda: (
            argo_health(get(kube_bed, namespace, "bp", "main"))[0] == "Healthy"
            and argo_health(get(kube_bed, namespace, "bg", "replicas"))[0] == "Healthy"
        ),
        120,
        "Argo CD's health of the pool and its goal to be Healthy",
        operator,
    )


def test_invalid_resources_are_rejected_by_the_apiserver(
    kube_bed: kube.KubeBed, operator_crds: None, namespace: str
) -> None:
    bad_pool = pool("bad", "127.0.0.1:9092", "Sometimes")
    bad_goal = goal("bad", "main", type="DiskCapacity", rangePercent=10)

    refused_pool = kube_bed.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({**bad_pool, "metadata": {"name": "bad", "namespace": namespace}}),
    )
    refused_goal = kube_bed.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=json.dumps({**bad_goal, "metadata": {"name": "bad", "namespace": namespace}}),
    )

    assert refused_pool.returncode != 0
    assert 'spec.mode: Unsupported value: "Sometimes"' in refused_pool.stderr
    assert refused_goal.returncode != 0
    assert "rangePercent applies only to distribution goals" in refused_goal.stderr


def test_an_unreachable_kafka_is_reported_in_a_condition(
    kube_bed: kube.KubeBed, operator: OperatorProcess, namespace: str
) -> None:
    (port,) = free_ports(1)  # nothing listens there
    apply(kube_bed, namespace, pool("lost", f"127.0.0.1:{port}", "DryRun"))

    reachable = wait_for(
        lambda: condition(get(kube_bed, namespace, "bp", "lost"), "KafkaReachable"),
        120,
        "the KafkaReachable condition",
        operator,
    )

    assert reachable["status"] == "False"
    assert reachable["reason"] == "Unreachable"
    assert f"127.0.0.1:{port}" in reachable["message"]
    assert condition(get(kube_bed, namespace, "bp", "lost"), "Ready")["status"] == "False"


def test_a_goal_added_to_a_pool_is_evaluated_at_once_not_at_its_next_pass(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = "e2e-goal-added"
    skewed_topic(kafka_bed, topic)  # racks a and b only: rack-aware, but not spread
    # Its passes half an hour apart: only a wake from the goals explains a pass within the test.
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "DryRun", topic, detectionIntervalSeconds=1800),
        goal("racks", "main", type="RackAware"),
    )
    wait_for(
        lambda: (
            condition(get(kube_bed, namespace, "bg", "racks"), "Satisfied").get("status") == "True"
            and condition(get(kube_bed, namespace, "bp", "main"), "Balanced").get("status") == "True"
        ),
        PLAN_TIMEOUT_S,
        "the pool Balanced by its one goal",
        operator,
    )

    apply(kube_bed, namespace, goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10))
    satisfied = wait_for(
        lambda: condition(get(kube_bed, namespace, "bg", "replicas"), "Satisfied"),
        PLAN_TIMEOUT_S,
        "the added goal's status",
        operator,
    )
    assert satisfied["status"] == "False"
    pool_obj = get(kube_bed, namespace, "bp", "main")
    assert condition(pool_obj, "Balanced")["status"] == "False"
    assert pool_obj["status"]["plan"]["movesTotal"] >= 4

    # Deleting it is a change too: the pool is Balanced again without waiting for its next pass.
    deleted = kube_bed.kubectl("delete", "bg", "replicas", "-n", namespace)
    assert deleted.returncode == 0, deleted.stderr
    wait_for(
        lambda: condition(get(kube_bed, namespace, "bp", "main"), "Balanced").get("status") == "True",
        PLAN_TIMEOUT_S,
        "the pool Balanced again by its one goal",
        operator,
    )


def test_an_executed_plan_is_confirmed_at_once_not_at_the_pools_next_pass(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = "e2e-confirmed"
    skewed_topic(kafka_bed, topic)
    # Passes half an hour apart: only a pass that follows the execution's end at once explains the
    # pool Balanced within the test.
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "Auto", topic, detectionIntervalSeconds=1800),
        goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
    )
    # New goals' first plan runs once a second pass plans it again: a spec change makes that pass.
    wait_for(
        lambda: get(kube_bed, namespace, "bp", "main").get("status", {}).get("plan", {}).get("id"),
        PLAN_TIMEOUT_S,
        "a plan",
        operator,
    )
    patch = json.dumps({"spec": {"detectionIntervalSeconds": 1799}})
    patched = kube_bed.kubectl("patch", "bp", "main", "-n", namespace, "--type=merge", "-p", patch)
    assert patched.returncode == 0, patched.stderr
    executed = wait_for(
        lambda: get(kube_bed, namespace, "bp", "main").get("status", {}).get("plan", {}).get("executedId"),
        PLAN_TIMEOUT_S,
        "the plan executed",
        operator,
    )
    wait_for(
        lambda: condition(get(kube_bed, namespace, "bp", "main"), "Balanced").get("status") == "True",
        60,
        "the pool Balanced by the pass after the execution",
        operator,
    )
    about_plan = [e for e in events(kube_bed, namespace) if executed in e["message"]]
    started = sum(e.get("count", 1) for e in about_plan if e["reason"] == "ExecutionStarted")
    assert started == 1, "the pass after the execution ran the plan again"
    assert "ExecutionFinished" in {e["reason"] for e in about_plan}


def test_a_broker_that_joins_or_leaves_the_cluster_is_seen_at_once_not_at_the_pools_next_pass(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # Passes half an hour apart and nothing else to wake the pool (no goal, nothing to execute): only
    # its look at the cluster's brokers explains a pass within the bound.
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "DryRun", "e2e-joined", detectionIntervalSeconds=1800),
    )

    def brokers() -> dict[int, str]:
        found = get(kube_bed, namespace, "bp", "main").get("status", {}).get("brokers", [])
        return {int(b["id"]): b["state"] for b in found}

    wait_for(
        lambda: set(kafka_bed.racks) <= set(brokers()), PLAN_TIMEOUT_S, "the pool's first pass", operator
    )
    timings = Timings()
    # The look's period, the daemon's wake-up that starts it and the pass, with room for a loaded host;
    # a look sent to the leaving broker may go unanswered for its whole timeout first.
    bound_s = 2 * timings.broker_check_s + timings.wake_s + 20.0
    with extra_broker(kafka_bed, "a") as added:
        joined = time.monotonic()
        wait_for(lambda: added in brokers(), bound_s, f"broker {added} in the pool's status", operator)
        seen_s = time.monotonic() - joined
        kafka_bed.stop_broker(added)
        left = time.monotonic()
        wait_for(
            lambda: brokers().get(added) == "Missing",
            bound_s,
            f"broker {added} Missing in the pool's status",
            operator,
        )
        missing_s = time.monotonic() - left
    print(
        f"\nbroker {added}: in status {seen_s:.1f}s after it joined, Missing {missing_s:.1f}s after it left"
    )


def test_a_warm_up_step_comes_when_it_is_due_not_at_the_pools_next_pass(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # Passes half an hour apart and nothing else to wake the pool once the new broker is seen (no
    # goal, nothing to execute): only the warm-up's schedule explains a pass within the bounds.
    duration_s, steps = 20, 2
    spec = pool(
        "main",
        kafka_bed.bootstrap_servers,
        "DryRun",
        "e2e-warm-up-due",
        detectionIntervalSeconds=1800,
        warmUp={"duration": f"{duration_s}s", "steps": steps},
    )
    apply(kube_bed, namespace, spec)

    def brokers() -> dict[int, dict[str, Any]]:
        found = get(kube_bed, namespace, "bp", "main").get("status", {}).get("brokers", [])
        return {int(b["id"]): b for b in found}

    def shows(added: int, state: str, step: int | None) -> bool:
        broker = brokers().get(added, {})
        return (broker.get("state"), broker.get("warmUpStep")) == (state, step)

    wait_for(
        lambda: set(kafka_bed.racks) <= set(brokers()), PLAN_TIMEOUT_S, "the pool's first pass", operator
    )
    timings = Timings()
    # Each pass starts within the daemon's wake-up of its time; the room is for the pass itself, the
    # poll and a loaded host.
    late_s = timings.wake_s + 8.0
    with extra_broker(kafka_bed, "a") as added:
        # Seen at once (the pool's look at its brokers), warming from that pass: its step 1.
        wait_for(lambda: shows(added, "Warming", 1), 60, f"broker {added} warming", operator)
        # firstSeen is to the second: the pass that saw the broker came up to a second after it.
        first_seen = parse_rfc3339(brokers()[added]["firstSeen"]) + 1.0
        late = []
        for state, step, due_s in (("Warming", 2, duration_s / steps), ("Active", None, duration_s)):
            wait_for(
                partial(shows, added, state, step),
                first_seen + due_s + late_s - time.time(),
                f"broker {added} {state} {step or ''} within {late_s:.0f}s of its time",
                operator,
            )
            late.append(f"{state} {step or ''} {time.time() - first_seen - due_s:+.1f}s")
    print(f"\nbroker {added}, after the time due: {'; '.join(late)}")
