"""Argo CD's health checks of integrations/argocd/ in the Lua VM Argo CD runs them in (gopher-lua,
hack/argocd/), on the pool and goal shapes the e2e tests do not reach at a known moment: no status
yet, a generation not yet observed, a pause, an Auto pool with work left. The e2e tier checks the
shapes the real operator writes (tests/e2e/test_operator.py)."""

from __future__ import annotations

from typing import Any

from tests.support.argocd import ArgoHealth


def _condition(kind: str, status: str, reason: str, message: str = "", generation: int = 2) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-12-06T03:00:00Z",
    }


def _pool(mode: str = "Auto", *conditions: dict[str, Any], paused: bool = False) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "metadata": {"name": "main", "namespace": "kafka", "generation": 2},
        "spec": {"mode": mode, "paused": paused},
    }
    if conditions:
        pool["status"] = {"conditions": list(conditions)}
    return pool


READY = _condition("Ready", "True", "Reconciled", "the pool is observed, planned and under control")


def test_a_pool_the_operator_has_not_reported_on_is_progressing(argo_health: ArgoHealth) -> None:
    assert argo_health(_pool())[0] == "Progressing"
    stale = _condition("Ready", "True", "Reconciled", generation=1)
    status, message = argo_health(_pool("Auto", stale))
    assert (status, message) == ("Progressing", "Waiting for the operator to observe generation 2")


def test_a_pool_that_is_not_ready_is_degraded_with_the_reason(argo_health: ArgoHealth) -> None:
    failed = _condition("Ready", "False", "Unreachable", "cannot reach k:9092")
    assert argo_health(_pool("Auto", failed)) == ("Degraded", "Unreachable: cannot reach k:9092")


def test_a_pool_executing_a_plan_is_progressing_with_its_progress(argo_health: ArgoHealth) -> None:
    running = _condition("Executing", "True", "Running", "executing plan 2eccef548d: 3 of 8 moves done")
    status, message = argo_health(_pool("Manual", READY, running))
    assert (status, message) == ("Progressing", "Running: executing plan 2eccef548d: 3 of 8 moves done")


def test_a_paused_pool_or_a_plan_awaiting_approval_is_suspended(argo_health: ArgoHealth) -> None:
    assert argo_health(_pool("Auto", READY, paused=True))[0] == "Suspended"
    waiting = _condition(
        "ApprovalValid", "True", "AwaitingApproval", "plan 2eccef548d waits for the annotation"
    )
    assert argo_health(_pool("Manual", READY, waiting))[0] == "Suspended"


def test_an_auto_pool_with_work_left_is_progressing_and_a_balanced_one_healthy(
    argo_health: ArgoHealth,
) -> None:
    unbalanced = _condition("Balanced", "False", "GoalsViolated", "ReplicaDistribution: 30 % off")
    assert argo_health(_pool("Auto", READY, unbalanced))[0] == "Progressing"
    # A DryRun pool never moves anything: its plan waiting is its steady state.
    assert argo_health(_pool("DryRun", READY, unbalanced))[0] == "Healthy"
    balanced = _condition("Balanced", "True", "GoalsSatisfied", "every goal holds and nothing needs to move")
    assert argo_health(_pool("Auto", READY, balanced)) == (
        "Healthy",
        "GoalsSatisfied: every goal holds and nothing needs to move",
    )


def test_a_goal_is_healthy_while_it_holds_and_progressing_until_then(argo_health: ArgoHealth) -> None:
    goal: dict[str, Any] = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancerGoal",
        "metadata": {"name": "replicas", "namespace": "kafka", "generation": 2},
        "spec": {"pool": "main", "type": "ReplicaDistribution"},
    }
    assert argo_health(goal)[0] == "Progressing"
    holds = _condition("Satisfied", "True", "GoalHolds", "worst broker 4 % off, within 10 %")
    assert argo_health({**goal, "status": {"conditions": [holds]}}) == (
        "Healthy",
        "worst broker 4 % off, within 10 %",
    )
    # A goal the cluster does not meet yet is the pool's work, not a failure: the pool's health tells.
    violated = _condition("Satisfied", "False", "GoalViolated", "worst broker 31 % off, over 10 %")
    assert argo_health({**goal, "status": {"conditions": [violated]}}) == (
        "Progressing",
        "worst broker 31 % off, over 10 %",
    )
    older = _condition("Satisfied", "True", "GoalHolds", generation=1)
    assert argo_health({**goal, "status": {"conditions": [older]}})[0] == "Progressing"
