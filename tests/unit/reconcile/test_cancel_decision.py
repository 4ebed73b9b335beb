"""The rules of a cancel request (reconcile/approval.py, plan_decision.py, executing.py): it names the
plan it cancels, so one left behind never cancels a later plan, and a cancelled plan is never
executed again, whatever the mode or the approval."""

from __future__ import annotations

import pytest

from kafka_balancer.reconcile.approval import Action, cancel_requested, cancelled_plans, decide
from kafka_balancer.reconcile.executing import cancels_stopped, executing_condition
from kafka_balancer.reconcile.plan_decision import cancelled_ids
from kafka_balancer.reconcile.status import ExecutionPhase, ExecutionStatus
from tests.unit.reconcile.test_repair_approval import pool_input


def test_only_a_request_naming_the_running_plan_cancels_it() -> None:
    assert cancel_requested(requested="aaaa", plan="aaaa")
    assert not cancel_requested(requested="bbbb", plan="aaaa"), "a request for an earlier plan is stale"
    assert not cancel_requested(requested=None, plan="aaaa")


@pytest.mark.parametrize("mode", ["Manual", "Auto"])
def test_a_cancelled_plan_is_not_executed_though_approved(mode: str) -> None:
    decision = decide(
        mode=mode,
        paused=False,
        stored_id="aaaa",
        empty=False,
        approved="aaaa",
        executed=None,
        cancelled=frozenset({"aaaa"}),
    )

    assert (decision.action, decision.reason) == (Action.NOTHING, "Cancelled")
    assert "plan aaaa was cancelled" in decision.message and "not executed again" in decision.message


def test_a_plan_other_than_the_cancelled_one_is_decided_as_usual() -> None:
    decision = decide(
        mode="Manual",
        paused=False,
        stored_id="bbbb",
        empty=False,
        approved="bbbb",
        executed=None,
        cancelled=frozenset({"aaaa"}),
    )

    assert decision.action is Action.EXECUTE


def test_the_plans_never_run_again_are_the_requested_one_and_the_recorded_one() -> None:
    assert cancelled_plans(requested="aaaa", recorded="bbbb") == {"aaaa", "bbbb"}
    assert cancelled_plans(requested=None, recorded=None) == frozenset()
    cancelled = {"execution": {"planId": "bbbb", "phase": "Cancelled"}}
    assert cancelled_ids(pool_input(status=cancelled, cancel="aaaa")) == {"aaaa", "bbbb"}
    # An execution that failed or was paused is not cancelled: a request alone counts then.
    for phase in ("Failed", "Paused", "Succeeded", "Running"):
        status = {"execution": {"planId": "bbbb", "phase": phase}}
        assert cancelled_ids(pool_input(status=status)) == frozenset()


def test_a_cancelled_execution_is_its_own_reason_and_keeps_the_pool_ready() -> None:
    message = "on request (kafkabalancer.io/cancel-plan): 2 move(s) in flight cancelled"
    condition = executing_condition(ExecutionStatus("aaaa", ExecutionPhase.CANCELLED, message))

    assert (condition.status, condition.reason) == ("False", "Cancelled")
    assert condition.message == f"plan aaaa cancelled {message}"
    assert not ExecutionPhase.CANCELLED.resumable, "a cancelled plan is not resumed"


def test_a_pass_cancels_a_stopped_execution_only_when_the_request_names_its_plan() -> None:
    paused = ExecutionStatus("aaaa", ExecutionPhase.PAUSED)
    assert cancels_stopped(paused, "aaaa")
    assert cancels_stopped(ExecutionStatus("aaaa", ExecutionPhase.RUNNING), "aaaa"), "left by a process gone"
    assert not cancels_stopped(paused, "bbbb") and not cancels_stopped(paused, None)
    for ended in (ExecutionPhase.SUCCEEDED, ExecutionPhase.FAILED, ExecutionPhase.CANCELLED):
        assert not cancels_stopped(ExecutionStatus("aaaa", ended), "aaaa"), f"{ended.value}: nothing to stop"
    assert not cancels_stopped(None, "aaaa")
