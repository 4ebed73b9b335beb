"""``kubectl get bp -o wide`` and ``kubectl get bg -o wide`` on the real apiserver and the real kubectl:
the columns a person looks for first (mode, phase, moves done/total, data, ETA, the worst goal), filled
from a status the operator's own typed status writes (reconcile/status.py), patched onto the status
subresource the way the operator patches it: the pool's sync, then a running execution's progress."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.status_subresource import write_status

from kafka_balancer.reconcile.conditions import TRUE, Condition, merge_conditions
from kafka_balancer.reconcile.status import (
    BalancerGoalStatus,
    ExecutionPhase,
    ExecutionProgress,
    ExecutionStatus,
    ExecutionUpdate,
    GoalStatus,
    PlanProgress,
    PlanStatus,
    PoolStatus,
    worst_goal,
)
from kafka_balancer_dev.localbed import kube

CRDS = Path(__file__).resolve().parents[2] / "crds"
NAMESPACE = "kb-test-columns"
NOW = "2026-01-01T00:00:00Z"
POOL_SPEC: dict[str, Any] = {
    "mode": "Auto",
    "kafka": {"bootstrapServers": "kafka-0.kafka:9092"},
    "capacity": {"disk": "2Ti", "networkIn": "125M", "networkOut": "125M", "cpu": 8},
}
GOALS = (
    GoalStatus("rack-aware", "RackAware", True, True, "0 partitions"),
    GoalStatus("disk-spread", "DiskDistribution", False, False, "12.5%"),
)


def _apply(kube_bed: kube.KubeBed, kind: str, name: str, spec: dict[str, Any]) -> None:
    doc = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }
    done = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(doc))
    assert done.returncode == 0, done.stderr


def _table(kube_bed: kube.KubeBed, *args: str) -> list[dict[str, str]]:
    """kubectl's table as rows of column → cell, cut where each header starts (cells hold spaces)."""
    done = kube_bed.kubectl("get", *args, "-n", NAMESPACE)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    columns = [(m.group(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    ends = [start for _, start in columns[1:]] + [None]
    return [
        {name: row[start:end].strip() for (name, start), end in zip(columns, ends, strict=True)}
        for row in rows
    ]


@pytest.fixture(scope="module")
def resources(kube_bed: kube.KubeBed) -> Iterator[None]:
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(CRDS))
    assert applied.returncode == 0, applied.stderr
    for crd in ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io"):
        kube.wait_established(kube_bed, crd)
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    _apply(kube_bed, "BrokerPool", "main", POOL_SPEC)
    _apply(
        kube_bed,
        "BalancerGoal",
        "disk-spread",
        {"type": "DiskDistribution", "rangePercent": 10, "priority": 60, "poolRef": {"name": "main"}},
    )
    # The pool's sync: its plan (12 moves, 3 GiB) and goals, then the execution's latest progress.
    synced = PoolStatus(
        observed_generation=1,
        conditions=merge_conditions(
            [], [Condition("Ready", TRUE, "Ready", "the pool is under control")], generation=1, now=NOW
        ),
        plan=PlanStatus("0a1b2c3d4e", "main-plan", 12, 12, 0, 3 * 2**30),
        goals=GOALS,
        worst_goal=worst_goal(GOALS),
    )
    write_status(kube_bed, "bp", "main", NAMESPACE, synced.to_dict())
    progress = ExecutionProgress(
        moves_done=3,
        moves_in_flight=2,
        moves_pending=7,
        bytes_done=2**30,
        bytes_total=3 * 2**30,
        eta_seconds=130,
        eta="2m10s",
    )
    running = ExecutionUpdate(
        ExecutionStatus("0a1b2c3d4e", ExecutionPhase.RUNNING, "3/12 moves", progress), PlanProgress(3, 9)
    )
    write_status(kube_bed, "bp", "main", NAMESPACE, running.to_dict())
    unmet = Condition("Satisfied", "False", "GoalViolated", "broker 3 holds 12.5% more disk than the band")
    goal = BalancerGoalStatus(1, "12.5%", merge_conditions([], [unmet], generation=1, now=NOW))
    write_status(kube_bed, "bg", "disk-spread", NAMESPACE, goal.to_dict())
    yield
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_get_bp_wide_shows_mode_phase_moves_data_eta_and_the_worst_goal(
    kube_bed: kube.KubeBed, resources: None
) -> None:
    (row,) = _table(kube_bed, "bp", "-o", "wide")
    assert row["NAME"] == "main"
    assert row["MODE"] == "Auto"
    assert row["PHASE"] == "Running"
    assert row["MOVES"] == "3/12"
    assert row["MOVES REMAINING"] == "9"
    assert row["DATA"] == "3Gi"
    assert row["ETA"] == "2m10s"
    assert row["WORST GOAL"] == "disk-spread (12.5%)"
    assert row["PLAN"] == "0a1b2c3d4e"
    assert row["READY"] == "True"


def test_get_bp_without_wide_keeps_the_short_columns(kube_bed: kube.KubeBed, resources: None) -> None:
    (row,) = _table(kube_bed, "bp")
    assert list(row) == ["NAME", "MODE", "BROKERS", "BALANCED", "MOVES REMAINING", "READY", "AGE"]


def test_get_bg_wide_shows_the_pool_the_band_and_why_the_goal_is_not_met(
    kube_bed: kube.KubeBed, resources: None
) -> None:
    (row,) = _table(kube_bed, "bg", "-o", "wide")
    assert row["NAME"] == "disk-spread"
    assert row["SATISFIED"] == "False"
    assert row["WORST DEVIATION"] == "12.5%"
    assert row["POOL"] == "main"
    assert row["RANGE"] == "10"
    assert row["MESSAGE"] == "broker 3 holds 12.5% more disk than the band"
