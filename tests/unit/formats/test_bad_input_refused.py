"""Bad input: exit 2, one line naming the field, no traceback, no output file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.clusters import assert_refused, broker, goals_yaml, partition, run_plan, snapshot

GOOD_GOALS = goals_yaml({"type": "RackAware"}, {"type": "DiskDistribution"})


def good() -> dict[str, Any]:
    return snapshot([broker(0, "a"), broker(1, "b")], [partition("t", 0, [0, 1])])


def mutated(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(good())
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


SNAPSHOT_CASES = [
    ("not json", "{not json", "invalid JSON"),
    ("wrong version", mutated(["version"], 2), "version"),
    ("negative disk", mutated(["partitions", 0, "load", "disk"], -5), "partitions[0].load.disk"),
    ("unknown broker", mutated(["partitions", 0, "replicas"], [0, 9]), "broker 9"),
    ("leader not a replica", mutated(["partitions", 0, "leader"], 7), "partitions[0].leader"),
    ("duplicate replica", mutated(["partitions", 0, "replicas"], [0, 0]), "partitions[0].replicas"),
    ("bad state", mutated(["brokers", 1, "state"], "gone"), "brokers[1].state"),
    ("zero capacity", mutated(["brokers", 0, "capacity", "disk"], 0), "brokers[0].capacity.disk"),
    ("share above one", mutated(["brokers", 0, "warmUpShare"], 1.5), "brokers[0].warmUpShare"),
    ("string number", mutated(["partitions", 0, "load", "cpu"], "0.1"), "partitions[0].load.cpu"),
    ("missing brokers", {"version": 1, "partitions": []}, "brokers"),
    ("duplicate broker id", mutated(["brokers", 1, "id"], 0), "brokers[1].id"),
]


@pytest.mark.parametrize(("case", "snap", "needle"), SNAPSHOT_CASES, ids=[c[0] for c in SNAPSHOT_CASES])
def test_bad_snapshot_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, snap: Any, needle: str
) -> None:
    run = run_plan(tmp_path, capsys, snap, GOOD_GOALS)
    assert_refused(run, needle)
    assert run.report is None


GOAL_CASES = [
    ("unknown type", goals_yaml({"type": "Happiness"}), "spec.type"),
    ("float percent", goals_yaml({"type": "DiskDistribution", "rangePercent": 10.5}), "spec.rangePercent"),
    ("threshold over 100", goals_yaml({"type": "DiskCapacity", "thresholdPercent": 140}), "thresholdPercent"),
    ("unknown field", goals_yaml({"type": "DiskCapacity", "treshold": 10}), "spec.treshold"),
    ("bad yaml", "kind: [unclosed\n", "invalid YAML"),
    (
        "wrong kind",
        "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancerGaol\nspec: {type: RackAware}\n",
        "kind",
    ),
    ("duplicate type", goals_yaml({"type": "RackAware"}, {"type": "RackAware"}), "RackAware"),
]


@pytest.mark.parametrize(("case", "goals", "needle"), GOAL_CASES, ids=[c[0] for c in GOAL_CASES])
def test_bad_goals_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, goals: str, needle: str
) -> None:
    run = run_plan(tmp_path, capsys, good(), goals)
    assert run.code == 2, run.stderr
    assert run.plan is None
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]


def test_goals_as_a_json_v1_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "kafkabalancer.io/v1alpha1",
                "kind": "BalancerGoal",
                "metadata": {"name": "rack"},
                "spec": {"type": "RackAware", "hard": True},
            },
        ],
    }
    run = run_plan(tmp_path, capsys, good(), json.dumps(doc))
    assert run.code == 0 and run.report is not None
    assert [g["type"] for g in run.report["goals"]] == ["RackAware"]


def test_a_stale_output_file_is_removed_on_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "plan.json").write_text('{"version": 1, "partitions": []}')
    run = run_plan(tmp_path, capsys, "{broken", GOOD_GOALS)
    assert run.code == 2 and not (tmp_path / "plan.json").exists()


def test_an_unwritable_output_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafka_balancer.cli import main

    snap = tmp_path / "s.json"
    snap.write_text(json.dumps(good()))
    goals = tmp_path / "g.yaml"
    goals.write_text(GOOD_GOALS)
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(
        ["plan", "--snapshot", str(snap), "--goals", str(goals), "--output", str(blocker / "plan.json")]
    )
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write" in err
