"""Named fixture clusters (snapshot documents), a helper that runs ``kafka-balancer plan`` and one that
checks how it refuses bad input."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from kafka_balancer.cli import main

CAPACITY = {"disk": 1.0e12, "networkIn": 1.0e8, "networkOut": 1.0e8, "cpu": 8}


def broker(bid: int, rack: str, state: str = "active", scale: float = 1.0, **extra: Any) -> dict[str, Any]:
    capacity = {k: v * scale for k, v in CAPACITY.items()}
    return {"id": bid, "rack": rack, "state": state, "capacity": capacity, **extra}


def partition(
    topic: str,
    number: int,
    replicas: list[int],
    disk: float = 1.0e9,
    rate: float = 1.0e5,
    leader: int | None = None,
) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": number,
        "replicas": replicas,
        "leader": replicas[0] if leader is None else leader,
        "load": {"disk": disk, "networkIn": rate, "networkOut": 2 * rate, "cpu": 0.01, "followerCpu": 0.002},
    }


def drawn_partitions(
    draw: st.DrawFn, count: int, n_brokers: int, min_rf: int, max_rf: int
) -> list[dict[str, Any]]:
    """``count`` partitions of two topics (hypothesis): random brokers, sizes, rates and leaders."""
    parts = []
    for i in range(count):
        brokers = st.integers(0, n_brokers - 1)
        replicas = draw(st.lists(brokers, min_size=min_rf, max_size=max_rf, unique=True))
        parts.append(
            partition(
                draw(st.sampled_from(["orders", "clicks"])),
                i,
                replicas,
                disk=float(draw(st.integers(1, 1000))) * 1e6,
                rate=float(draw(st.integers(0, 100))) * 1e3,
                leader=draw(st.sampled_from(replicas)),
            )
        )
    return parts


def snapshot(brokers: list[dict[str, Any]], partitions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "brokers": brokers, "partitions": partitions}


def goals_yaml(*goals: dict[str, Any]) -> str:
    docs = []
    for i, spec in enumerate(goals):
        lines = [
            "apiVersion: kafkabalancer.io/v1alpha1",
            "kind: BalancerGoal",
            f"metadata: {{name: goal-{i}}}",
            f"spec: {json.dumps(spec)}",
        ]
        docs.append("\n".join(lines))
    return "\n---\n".join(docs) + "\n"


@dataclass
class PlanRun:
    code: int
    plan: dict[str, Any] | None
    report: dict[str, Any] | None
    stderr: str


def run_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snap: dict[str, Any] | str, goals: str
) -> PlanRun:
    snap_file = tmp_path / "snapshot.json"
    snap_file.write_text(snap if isinstance(snap, str) else json.dumps(snap))
    goals_file = tmp_path / "goals.yaml"
    goals_file.write_text(goals)
    out = tmp_path / "plan.json"
    report = tmp_path / "report.json"
    code = main(
        [
            "plan",
            "--snapshot",
            str(snap_file),
            "--goals",
            str(goals_file),
            "--output",
            str(out),
            "--report",
            str(report),
        ]
    )
    captured = capsys.readouterr()
    return PlanRun(
        code,
        json.loads(out.read_text()) if out.exists() else None,
        json.loads(report.read_text()) if report.exists() else None,
        captured.err,
    )


def assert_refused(run: PlanRun, needle: str) -> None:
    """Bad input as the CLI must answer it: exit 2, no plan, one line naming ``needle``, no traceback."""
    assert run.code == 2, run.stderr
    assert run.plan is None
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]
    assert "Traceback" not in run.stderr
