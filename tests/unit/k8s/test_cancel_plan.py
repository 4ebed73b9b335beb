"""Cancelling the plan a pool executes (the ``kafkabalancer.io/cancel-plan`` annotation), against
in-memory Kubernetes and Kafka: the moves in flight are cancelled and the throttles removed at once,
the pool says so, and the plan is never executed again. The real apiserver and Kafka:
tests/e2e/test_cancel_plan.py."""

from __future__ import annotations

from pathlib import Path

from kafka_balancer.k8s.plan_run import Liveness
from kafka_balancer.kafka.execution_state import MoveStatus
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION, CANCEL_ANNOTATION
from tests.unit.k8s.test_orchestration import POOL, REPLICAS, SPEC, Bed, bed, submissions


def _executing(b: Bed) -> str:
    """A Manual pool's plan, approved, whose moves never finish by themselves."""
    b.sync("Manual")
    plan_id = str(b.status()["plan"]["id"])
    b.cluster.stuck = set(REPLICAS)
    return plan_id


def test_a_cancel_naming_the_running_plan_cancels_its_moves_in_flight_and_removes_its_throttles(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    throttled: list[bool] = []

    def cancel() -> str | None:
        # Asked once the first batch is in Kafka and throttled: the moves are in flight.
        throttled.append(any(b.cluster.configs.values()))
        return plan_id if b.cluster.ongoing and any(b.cluster.configs.values()) else None

    b.sync(
        "Manual",
        live=Liveness(stopping=lambda: False, paused=lambda: False, cancel=cancel),
        annotations={APPROVE_ANNOTATION: plan_id},
    )

    assert any(throttled), "the moves were throttled in flight before the cancel"
    assert b.cluster.ongoing == {}, "no reassignment of the plan is left in Kafka"
    assert b.cluster.replicas == REPLICAS, "the cancelled moves are back on their sources"
    assert not any(b.cluster.configs.values()), "no throttle is left"
    execution = b.status()["execution"]
    assert (execution["planId"], execution["phase"]) == (plan_id, "Cancelled")
    _, state = b.mirrored_state()
    in_flight = sum(1 for m in state.moves if m.status is MoveStatus.CANCELLED and m.reason == "cancelled")
    assert state.finished_at is not None and in_flight > 0
    assert b.conditions()["Executing"] == ("False", "Cancelled")
    assert b.condition_message("Executing").startswith(
        f"plan {plan_id} cancelled on request ({CANCEL_ANNOTATION}): "
    )
    assert "move(s) in flight cancelled" in b.condition_message("Executing")
    assert b.conditions()["Ready"][0] == "True", "a cancel is no failure"
    assert "ExecutionCancelled" in b.kube.reasons() and "ExecutionFailed" not in b.kube.reasons()
    assert b.kube.message("ExecutionCancelled").startswith(f"Plan {plan_id} cancelled on request")
    assert "every throttle it set removed; it is not executed again" in b.kube.message("ExecutionCancelled")
    assert b.metric("kafka_balancer_executions_total", result="cancelled") == 1


def test_a_cancelled_plan_is_not_executed_again_though_its_approval_and_the_request_are_gone(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    cancel = Liveness(stopping=lambda: False, paused=lambda: False, cancel=lambda: plan_id)
    b.sync("Manual", live=cancel, annotations={APPROVE_ANNOTATION: plan_id})
    assert b.status()["execution"]["phase"] == "Cancelled"
    asked = dict(submissions(b.cluster))
    b.cluster.stuck = set()

    # The approval still names it; the request is withdrawn: the status keeps it cancelled.
    outcome = b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id}).outcome

    assert outcome.decision.reason == "Cancelled"
    assert plan_id in outcome.decision.message and "not executed again" in outcome.decision.message
    assert submissions(b.cluster) == asked, "nothing of the plan is submitted again"
    assert b.status()["execution"]["phase"] == "Cancelled"


def test_an_auto_pool_plans_anew_after_a_cancel_and_never_runs_the_cancelled_plan(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Auto")  # the first pass records the goals; an Auto plan runs once they are confirmed
    plan_id = str(b.status()["plan"]["id"])
    b.cluster.stuck = set(REPLICAS)
    b.sync("Auto", live=Liveness(stopping=lambda: False, paused=lambda: False, cancel=lambda: plan_id))
    assert b.status()["execution"]["phase"] == "Cancelled"
    b.cluster.stuck = set()

    # Nothing changed in the cluster: the new plan is the same plan, which stays cancelled.
    outcome = b.sync("Auto").outcome

    assert outcome.decision.reason == "Cancelled"
    assert b.status()["execution"]["phase"] == "Cancelled"
    assert b.cluster.replicas == REPLICAS


def test_a_cancel_naming_another_plan_is_ignored(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    b.cluster.stuck = set()
    stale = {APPROVE_ANNOTATION: plan_id, CANCEL_ANNOTATION: "0000000000"}

    b.sync(
        "Manual",
        live=Liveness(stopping=lambda: False, paused=lambda: False, cancel=lambda: "0000000000"),
        annotations=stale,
    )

    assert b.status()["execution"]["phase"] == "Succeeded"
    assert "ExecutionCancelled" not in b.kube.reasons()
    # And at the next pass: no error, no event, nothing run twice.
    reasons = len(b.kube.reasons())
    b.sync("Manual", annotations=stale)
    assert b.status()["execution"]["phase"] == "Succeeded"
    assert [r for r in b.kube.reasons()[reasons:] if r not in ("PlanReady",)] == []
    assert set(submissions(b.cluster).values()) == {1}


def test_an_approved_plan_whose_cancel_came_before_it_started_is_not_started(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = str(b.status()["plan"]["id"])

    outcome = b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id, CANCEL_ANNOTATION: plan_id}).outcome

    assert outcome.decision.reason == "Cancelled"
    assert b.cluster.submitted == []
    assert b.conditions()["ApprovalValid"][1] == "Cancelled"


def test_a_cancel_while_halting_cancels_what_the_pause_would_have_followed(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    halted: list[bool] = []

    def paused() -> bool:
        halted.append(bool(b.cluster.submitted))
        return halted[-1]

    # Paused once the first batch is in; the moves never finish, so the halt would follow them
    # forever; the cancel that comes meanwhile ends it.
    cancelling = Liveness(
        stopping=lambda: False,
        paused=paused,
        cancel=lambda: plan_id if halted.count(True) > 3 else None,
    )
    b.sync("Manual", live=cancelling, annotations={APPROVE_ANNOTATION: plan_id})

    assert b.status()["execution"]["phase"] == "Cancelled"
    assert b.cluster.ongoing == {} and not any(b.cluster.configs.values())
    assert b.cluster.replicas == REPLICAS


def test_the_pool_deletion_after_a_cancel_has_nothing_left_to_cancel(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    b.sync(
        "Manual",
        live=Liveness(stopping=lambda: False, paused=lambda: False, cancel=lambda: plan_id),
        annotations={APPROVE_ANNOTATION: plan_id},
    )

    assert b.service.clean_up_blocking(POOL, {**SPEC, "mode": "Manual"}, b.status()) is None


def test_a_cancel_naming_a_paused_plan_is_carried_out_by_the_next_pass(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = _executing(b)
    approved = {APPROVE_ANNOTATION: plan_id}
    # Paused once the first batch is in; the operator stops following the moves (its daemon stops)
    # while they are still in flight, as a process that is gone would leave them.
    b.sync(
        "Manual",
        live=Liveness(stopping=lambda: bool(b.cluster.submitted), paused=lambda: bool(b.cluster.submitted)),
        annotations=approved,
    )
    b.kube.patch_status("brokerpools", "kafka", "main", {"execution": {"planId": plan_id, "phase": "Paused"}})
    assert b.cluster.ongoing and any(b.cluster.configs.values())

    b.sync("Manual", spec={"paused": True}, annotations={**approved, CANCEL_ANNOTATION: plan_id})

    assert b.cluster.ongoing == {} and not any(b.cluster.configs.values())
    assert b.cluster.replicas == REPLICAS
    execution = b.status()["execution"]
    assert (execution["planId"], execution["phase"]) == (plan_id, "Cancelled")
    assert b.conditions()["Executing"] == ("False", "Cancelled")
    assert "move(s) in flight cancelled" in b.condition_message("Executing")
    assert " 0 move(s) in flight" not in b.condition_message("Executing")
    assert b.kube.message("ExecutionCancelled").startswith(f"Plan {plan_id} cancelled on request")

    # Unpaused, the plan is not resumed.
    asked = dict(submissions(b.cluster))
    b.cluster.stuck = set()
    b.sync("Manual", annotations={**approved, CANCEL_ANNOTATION: plan_id})
    assert submissions(b.cluster) == asked and b.status()["execution"]["phase"] == "Cancelled"
    assert b.kube.reasons().count("ExecutionCancelled") == 1, "reported once"
