"""The status fields written as text for ``kubectl get -o wide`` and the Events' sentences."""

from __future__ import annotations

import pytest

from kafka_balancer.kube_quantity import binary_quantity, parse_quantity
from kafka_balancer.reconcile.events import sentence
from kafka_balancer.reconcile.status import ALL_GOALS_HOLD, GoalStatus, PlanProgress, PlanStatus, worst_goal

RACK = GoalStatus("rack-aware", "RackAware", True, True, "0 partitions")
DISK = GoalStatus("disk", "DiskDistribution", False, False, "12.5%")
LEADERS = GoalStatus("leaders", "LeaderDistribution", False, False, "30.0%")


def test_the_worst_goal_is_a_hard_one_not_met_then_the_first_in_priority_order() -> None:
    assert worst_goal((RACK, DISK, LEADERS)) == "disk (12.5%)"
    broken_rack = GoalStatus("rack-aware", "RackAware", True, False, "2 partitions")
    assert worst_goal((DISK, LEADERS, broken_rack)) == "rack-aware (2 partitions)"
    assert worst_goal((RACK,)) == ALL_GOALS_HOLD


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0"), (512, "512"), (1536, "1.5Ki"), (3 * 2**30, "3Gi"), (int(12.3 * 2**20), "12Mi")],
)
def test_bytes_read_as_a_binary_quantity(count: int, text: str) -> None:
    assert binary_quantity(count) == text
    # A quantity the CRDs and kubectl read back, within the rounding of one decimal.
    assert parse_quantity(text) == pytest.approx(count, rel=0.05)


def test_moves_read_done_of_total_in_the_plan_and_while_it_runs() -> None:
    assert PlanStatus("p", "m", 10, 12, 3, 2**30).to_dict()["moves"] == "3/12"
    assert PlanStatus("p", "m", 10, 12, 3, 2**30).to_dict()["dataToMove"] == "1Gi"
    assert PlanProgress(5, 7).to_dict()["moves"] == "5/12"


def test_an_event_message_is_a_sentence() -> None:
    assert sentence("plan abc failed: no answer within 30s") == "Plan abc failed: no answer within 30s."
    assert sentence("Broker 3 is drained.") == "Broker 3 is drained."
