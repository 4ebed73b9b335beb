"""A partition with no readable replica (each on a failed broker or an offline log dir) is left as
it is and named, never moved: Kafka copies a new replica from a readable one, so its reassignment
would never finish and would hold up the executor's batch until its timeout.

Judged on the plan and report documents by the independent checker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit import checker
from tests.unit.clusters import broker, goals_yaml, partition, run_plan, snapshot

GOALS = goals_yaml(
    {"type": "RackAware"},
    {"type": "DiskCapacity", "thresholdPercent": 90},
    {"type": "ReplicaDistribution", "rangePercent": 10},
    {"type": "DiskDistribution", "rangePercent": 10},
)


def six_brokers(state_of_0: str) -> dict[str, Any]:
    """Brokers 0–5 on racks a, b, c, a, b, c; 18 partitions of RF 3, one replica per rack, and two
    of RF 1 on broker 0."""
    brokers = [broker(i, "abc"[i % 3]) for i in range(6)]
    brokers[0]["state"] = state_of_0
    parts = [partition("orders", i, [i % 6, (i + 1) % 6, (i + 2) % 6]) for i in range(18)]
    parts += [partition("single", i, [0], disk=2.0e9) for i in range(2)]
    return snapshot(brokers, parts)


def keys(plan: dict[str, Any]) -> set[tuple[str, int]]:
    return {(e["topic"], e["partition"]) for e in plan["partitions"]}


def test_a_failed_brokers_only_replica_stays_and_is_named_while_the_rest_is_re_homed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = six_brokers("failed")
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert run.code == 0 and run.plan is not None and run.report is not None, run.stderr
    assert not keys(run.plan) & {("single", 0), ("single", 1)}
    after = checker.apply_plan(snap, run.plan)
    replicated = [p for p in after["partitions"] if p["topic"] == "orders"]
    assert all(0 not in p["replicas"] for p in replicated)
    assert checker.rack_violations(after) == []
    assert run.report["summary"]["stranded"] == ["single-0", "single-1"]
    assert "2 partition(s) have no readable replica" in run.stderr and "single-0, single-1" in run.stderr
    # The figures describe the moves that can finish: 9 RF-3 replicas of 1 GB left broker 0.
    assert checker.bytes_moved(snap, run.plan) == run.report["summary"]["bytesMoved"] == 9.0e9
    assert run.report["summary"]["bytesMovedLowerBound"] <= 9.0e9


def test_a_draining_brokers_only_replica_is_readable_and_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_plan(tmp_path, capsys, six_brokers("draining"), GOALS)
    assert run.code == 0 and run.plan is not None and run.report is not None, run.stderr
    assert {("single", 0), ("single", 1)} <= keys(run.plan)
    assert "stranded" not in run.report["summary"] and "readable" not in run.stderr


def test_a_failed_broker_and_an_offline_log_dir_leave_nothing_to_copy_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = [{"path": f"/data/{k}", "capacity": 5.0e11, "online": True} for k in range(2)]
    brokers = [broker(i, "abc"[i % 3], logDirs=[dict(d) for d in dirs]) for i in range(6)]
    brokers[0]["state"] = "failed"
    brokers[1]["logDirs"][1]["online"] = False
    parts = []
    for i in range(12):
        p = partition("t", i, [0, 1] if i < 2 else [i % 6, (i + 1) % 6])
        p["logDirs"] = ["/data/1" if b == 1 and i == 0 else "/data/0" for b in p["replicas"]]
        parts.append(p)
    snap = snapshot(brokers, parts)
    run = run_plan(tmp_path, capsys, snap, goals_yaml({"type": "RackAware"}))
    assert run.code == 0 and run.plan is not None and run.report is not None, run.stderr
    # t-0: on failed broker 0 and on broker 1's offline dir; t-1 still has broker 1's online copy.
    assert run.report["summary"]["stranded"] == ["t-0"]
    assert ("t", 0) not in keys(run.plan)
    [t1] = [e for e in run.plan["partitions"] if (e["topic"], e["partition"]) == ("t", 1)]
    assert 0 not in t1["replicas"] and 1 in t1["replicas"]
