"""``kafka-balancer pool`` against the real apiserver, as a person runs it: the pools the operator
reports on, approving the plan a pool shows, pausing and resuming. The status is written as the
operator writes it (the status subresource); no operator runs here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.chart import apply_crds
from tests.support.status_subresource import write_status

from kafka_balancer_dev.localbed import kube

NAMESPACE = "kb-test-pool-command"
OTHER = "kb-test-pool-command-b"
PLAN = "3f9c1e07aa"
CONDITIONS = [
    ("Ready", "True", "PlanReady", "plan 3f9c1e07aa awaits approval"),
    ("Balanced", "False", "GoalsMissed", "ReplicaDistribution 21 % off"),
]
STATUS = {
    "plan": {"id": PLAN, "movesTotal": 12, "moves": "0/12", "dataToMove": "3Gi"},
    "conditions": [
        {"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": "2026-12-06T07:00:00Z"}
        for t, s, r, m in CONDITIONS
    ],
    "brokers": [{"id": 2, "state": "Active"}, {"id": 1, "state": "Draining"}],
}


def pool(name: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "metadata": {"name": name},
        "spec": {
            "mode": mode,
            "kafka": {"bootstrapServers": "kafka-0:9092"},
            "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
        },
    }


@pytest.fixture(scope="module")
def pools(kube_bed: kube.KubeBed) -> Iterator[kube.KubeBed]:
    apply_crds(kube_bed)
    kube.wait_established(kube_bed, "brokerpools.kafkabalancer.io")
    for namespace in (NAMESPACE, OTHER):
        assert kube_bed.kubectl("create", "namespace", namespace).returncode == 0
    for namespace, name, mode in (
        (NAMESPACE, "main", "Manual"),
        (NAMESPACE, "auto", "Auto"),
        (OTHER, "fresh", "Manual"),
    ):
        created = kube_bed.kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(pool(name, mode)))
        assert created.returncode == 0, created.stderr
    write_status(kube_bed, "bp", "main", NAMESPACE, STATUS)
    yield kube_bed
    for namespace in (NAMESPACE, OTHER):
        kube_bed.kubectl("delete", "brokerpools", "--all", "-n", namespace)
        kube_bed.kubectl("delete", "namespace", namespace, "--wait=false")


def cli(bed: kube.KubeBed, *args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("kafka-balancer")), "pool", *args]
    command += ["--kubeconfig", str(kubeconfig or bed.kubeconfig)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def annotations_of(bed: kube.KubeBed, name: str) -> dict[str, str]:
    got = bed.kubectl("get", "bp", name, "-n", NAMESPACE, "-o", "json")
    found: dict[str, str] = json.loads(got.stdout)["metadata"].get("annotations", {})
    return found


def test_get_lists_the_namespaces_pools_with_what_the_operator_reports(pools: kube.KubeBed) -> None:
    listed = cli(pools, "get", "-n", NAMESPACE)

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "MODE", "PAUSED", "PHASE", "MOVES", "DATA", "ETA", "PLAN", "READY"]
    assert lines[1].split() == ["auto", "Auto", "no"]
    assert lines[2].split() == ["main", "Manual", "no", "0/12", "3Gi", PLAN, "True"]

    everywhere = cli(pools, "get", "-A")
    assert everywhere.returncode == 0, everywhere.stderr
    rows = [line.split()[:2] for line in everywhere.stdout.splitlines()]
    assert rows[0] == ["NAMESPACE", "NAME"]
    assert [OTHER, "fresh"] in rows and [NAMESPACE, "main"] in rows

    one = cli(pools, "get", "main", "-n", NAMESPACE, "-o", "json")
    assert one.returncode == 0, one.stderr
    document = json.loads(one.stdout)
    assert (document["metadata"]["name"], document["status"]["plan"]["id"]) == ("main", PLAN)


def test_describe_shows_the_plan_brokers_and_conditions(pools: kube.KubeBed) -> None:
    described = cli(pools, "describe", "main", "-n", NAMESPACE)

    assert described.returncode == 0, described.stderr
    text = described.stdout
    assert f"Plan:        {PLAN} 12 moves, 3Gi to copy" in text
    assert "Brokers:\n  1      Draining\n  2      Active" in text
    assert "  Balanced=False (GoalsMissed): ReplicaDistribution 21 % off" in text


def test_approve_names_the_plan_the_pool_shows_and_nothing_else(pools: kube.KubeBed) -> None:
    stale = cli(pools, "approve", "main", "-n", NAMESPACE, "--plan", "0000000000")
    assert stale.returncode == 2
    assert stale.stderr.strip() == (
        f"kafka-balancer pool: bad input: --plan 0000000000: BrokerPool {NAMESPACE}/main shows plan "
        f"{PLAN} now; review that one and approve it"
    )
    assert "kafkabalancer.io/approve" not in annotations_of(pools, "main")

    approved = cli(pools, "approve", "main", "-n", NAMESPACE, "--plan", PLAN)
    assert approved.returncode == 0, approved.stderr
    assert (
        approved.stdout.strip()
        == f"BrokerPool {NAMESPACE}/main: plan {PLAN} approved (12 moves, 3Gi to copy)"
    )
    assert annotations_of(pools, "main")["kafkabalancer.io/approve"] == PLAN


def test_what_cannot_be_approved_says_why(pools: kube.KubeBed) -> None:
    auto = cli(pools, "approve", "auto", "-n", NAMESPACE)
    assert auto.returncode == 2
    assert "is in mode Auto: only a Manual pool's plans wait for approval" in auto.stderr

    fresh = cli(pools, "approve", "fresh", "-n", OTHER)
    assert fresh.returncode == 1
    assert f"BrokerPool {OTHER}/fresh shows no plan to approve yet" in fresh.stderr

    missing = cli(pools, "approve", "nope", "-n", NAMESPACE)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"kafka-balancer pool: bad input: BrokerPool {NAMESPACE}/nope: not found"


def test_pause_and_resume_set_the_pools_spec(pools: kube.KubeBed) -> None:
    def paused() -> str:
        return pools.kubectl("get", "bp", "auto", "-n", NAMESPACE, "-o", "jsonpath={.spec.paused}").stdout

    assert cli(pools, "pause", "auto", "-n", NAMESPACE).returncode == 0
    assert paused() == "true"
    listed = cli(pools, "get", "auto", "-n", NAMESPACE)
    assert listed.stdout.splitlines()[1].split()[:3] == ["auto", "Auto", "yes"]
    resumed = cli(pools, "resume", "auto", "-n", NAMESPACE)
    assert resumed.returncode == 0 and resumed.stdout.strip() == f"BrokerPool {NAMESPACE}/auto: resumed"
    assert paused() == "false"


def test_the_namespace_defaults_to_the_kubeconfig_contexts(pools: kube.KubeBed, tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    shutil.copy(pools.kubeconfig, config)
    set_namespace = subprocess.run(
        [str(pools.binaries.kubectl), "--kubeconfig", str(config), "config", "set-context", "--current",
         f"--namespace={OTHER}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert set_namespace.returncode == 0, set_namespace.stderr

    listed = cli(pools, "get", kubeconfig=config)

    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["NAME", "fresh"]


CANCELS = "kb-test-pool-command-c"


@pytest.fixture(scope="module")
def cancellable(pools: kube.KubeBed) -> Iterator[kube.KubeBed]:
    """Pools as the operator reports them: ``running`` executes the plan, ``approved`` has it approved
    but not started, ``done`` executed it, ``fresh`` shows no plan yet."""
    assert pools.kubectl("create", "namespace", CANCELS).returncode == 0
    shown = {"plan": {"id": PLAN, "movesTotal": 12, "moves": "3/12"}}
    for name, status, marks in (
        ("running", {**shown, "execution": {"planId": PLAN, "phase": "Running"}}, {}),
        ("approved", shown, {"kafkabalancer.io/approve": PLAN}),
        ("done", {**shown, "execution": {"planId": PLAN, "phase": "Succeeded"}}, {}),
        ("fresh", None, {}),
    ):
        manifest = pool(name, "Manual")
        manifest["metadata"]["annotations"] = marks
        created = pools.kubectl("apply", "-n", CANCELS, "-f", "-", stdin=json.dumps(manifest))
        assert created.returncode == 0, created.stderr
        if status is not None:
            write_status(pools, "bp", name, CANCELS, status)
    yield pools
    pools.kubectl("delete", "brokerpools", "--all", "-n", CANCELS)
    pools.kubectl("delete", "namespace", CANCELS, "--wait=false")


def cancel_request(bed: kube.KubeBed, name: str) -> str | None:
    got = bed.kubectl("get", "bp", name, "-n", CANCELS, "-o", "json")
    annotations: dict[str, str] = json.loads(got.stdout)["metadata"].get("annotations", {})
    return annotations.get("kafkabalancer.io/cancel-plan")


def test_cancel_names_the_plan_the_pool_executes(cancellable: kube.KubeBed) -> None:
    cancelled = cli(cancellable, "cancel", "running", "-n", CANCELS, "--plan", PLAN)

    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.strip() == f"BrokerPool {CANCELS}/running: cancel of plan {PLAN} requested"
    assert cancel_request(cancellable, "running") == PLAN

    approved = cli(cancellable, "cancel", "approved", "-n", CANCELS)
    assert approved.returncode == 0, approved.stderr
    assert cancel_request(cancellable, "approved") == PLAN, "an approved plan not started yet too"


def test_what_cannot_be_cancelled_says_why_and_writes_nothing(cancellable: kube.KubeBed) -> None:
    prefix = "kafka-balancer pool: bad input: "
    refusals = {
        ("running", "--plan", "0000000000"): (
            f"--plan 0000000000: BrokerPool {CANCELS}/running shows plan {PLAN}, not 0000000000; "
            "nothing was cancelled"
        ),
        ("done",): (
            f"BrokerPool {CANCELS}/done: plan {PLAN} is neither executing nor approved "
            "(its execution: Succeeded): nothing to cancel"
        ),
        ("fresh",): f"BrokerPool {CANCELS}/fresh shows no plan (status.plan.id is empty): nothing to cancel",
    }
    for args, said in refusals.items():
        before = cancel_request(cancellable, args[0])
        refused = cli(cancellable, "cancel", *args, "-n", CANCELS)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
        assert refused.stderr.strip() == prefix + said
        assert "Traceback" not in refused.stderr
        assert cancel_request(cancellable, args[0]) == before, "a refusal writes nothing"
