"""One plan type from the planner to the executor: the file (and the ConfigMap) carry exactly it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_balancer.errors import InputError
from kafka_balancer.formats.plan_file import parse_plan, plan_document, read_plan, write_json_atomically
from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.planner.optimizer import plan
from tests.unit.clusters import broker, partition, snapshot


def _skewed_plan() -> ReassignmentPlan:
    brokers = [broker(0, "a"), broker(1, "b"), broker(2, "a"), broker(3, "b")]
    parts = [partition("t", i, [0, 1], disk=1.0e9 * (i + 1)) for i in range(8)]
    made = plan(parse_snapshot(snapshot(brokers, parts)), default_goal_set())
    assert len(made.reassignments) > 0, "the skewed cluster must need moves"
    return made.reassignments


def test_the_planned_plan_comes_back_unchanged_from_the_file(tmp_path: Path) -> None:
    planned = _skewed_plan()
    path = tmp_path / "plan.json"
    write_json_atomically(path, plan_document(planned))
    assert read_plan(path) == planned
    # The operator's plan ConfigMap holds the same document as text.
    assert parse_plan(json.loads(json.dumps(plan_document(planned)))) == planned


def test_the_file_is_kafkas_reassignment_json() -> None:
    planned = ReassignmentPlan((Reassignment("orders", 0, (3, 1, 2)), Reassignment("orders", 5, (2, 1, 3))))
    assert plan_document(planned) == {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [3, 1, 2]},
            {"topic": "orders", "partition": 5, "replicas": [2, 1, 3]},
        ],
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "plan: 'partitions' must be a list"),
        ({"partitions": ["x"]}, "plan partitions[0]: must be an object"),
        ({"partitions": [{"topic": "", "partition": 0, "replicas": [1]}]}, "plan partitions[0].topic"),
        (
            {"partitions": [{"topic": "t", "partition": True, "replicas": [1]}]},
            "plan partitions[0].partition",
        ),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "plan partitions[0].replicas"),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}] * 2},
            "plan partitions[1]: t-0 is listed twice",
        ),
    ],
)
def test_a_bad_plan_document_names_the_entry_and_field(document: object, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_plan(document)
    assert str(err.value).startswith(message)
