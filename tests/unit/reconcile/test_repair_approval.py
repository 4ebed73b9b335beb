"""Mode Manual with spec.selfHealing.repairHardGoals: a plan that repairs a violated hard goal runs
without approval, planned with the hard goals alone; every other plan still waits for approval."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.reconcile.approval import Action, decide, halt_reason
from kafka_balancer.reconcile.pool import PoolOutcome, decide_pool
from kafka_balancer.reconcile.pool_input import PoolInput, StoredPlan
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta

# Brokers 1 and 4 share rack a. "orders" 0..2 sit on 1 and 4 only: RF 2 over 3 racks allows 1 replica
# per rack, so 3 partitions break RackAware. "logs" 0..7 sit on 1 and 2 only (racks a, b: rack aware)
# and leave 3 and 4 nearly empty, so ReplicaDistribution (soft) wants moves of its own.
RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}
ORDERS = tuple(PartitionMeta("orders", p, (1, 4) if p % 2 else (4, 1), 1 if p % 2 else 4) for p in range(3))
LOGS = tuple(PartitionMeta("logs", p, (1, 2) if p % 2 else (2, 1), 1 if p % 2 else 2) for p in range(8))
BROKEN_RACKS = ClusterMetadata(RACKS, ORDERS + LOGS)
SOFT_ONLY = ClusterMetadata(RACKS, LOGS)
GOALS = [
    ("racks", BalancerGoalSpec.model_validate({"type": "RackAware"})),
    ("replicas", BalancerGoalSpec.model_validate({"type": "ReplicaDistribution", "rangePercent": 10})),
]


def pool_input(mode: str = "Manual", repair: bool = True, **overrides: Any) -> PoolInput:
    spec = BrokerPoolSpec.model_validate(
        {
            "mode": mode,
            "kafka": {"bootstrapServers": "k:9092"},
            "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
            "selfHealing": {"repairHardGoals": repair},
            **overrides.pop("spec", {}),
        }
    )
    values: dict[str, Any] = {
        "name": "main",
        "spec": spec,
        "generation": 1,
        "status": {},
        "approved": None,
        "goals": GOALS,
        "metadata": BROKEN_RACKS,
        "loads": {},
        "stored": None,
        "now": 1_000_000.0,
    }
    return PoolInput(**{**values, **overrides})


def settled_pass(mode: str = "Manual", repair: bool = True, **overrides: Any) -> PoolOutcome:
    """The second pass: the first records the goals, which a plan running unapproved waits for."""
    first = decide_pool(pool_input(mode, repair, **overrides))
    return decide_pool(pool_input(mode, repair, status=first.status.to_dict(), **overrides))


def conditions(outcome: PoolOutcome) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in outcome.status.to_dict()["conditions"]
    }


def moved_topics(plan: StoredPlan) -> set[str]:
    return {r.topic for r in plan.reassignments}


def test_a_violated_hard_goal_is_repaired_without_approval_and_says_why() -> None:
    outcome = settled_pass()

    assert outcome.decision.action is Action.EXECUTE
    assert outcome.decision.reason == "RepairsHardGoals"
    assert outcome.new_plan is not None
    assert outcome.new_plan.repairs is not None and outcome.new_plan.repairs.startswith(
        "RackAware (racks) (3 partition(s) break rack awareness"
    )
    status, reason, message = conditions(outcome)["ApprovalValid"]
    assert (status, reason) == ("True", "RepairsHardGoals")
    assert message.startswith(f"plan {outcome.new_plan.id} auto-approved: it repairs RackAware (racks) (3 ")
    (event,) = [e for e in outcome.events if e.reason == "PlanAutoApproved"]
    assert event.message == f"P{message[1:]}."  # the same, as a sentence
    # Every goal is still reported, soft ones included.
    assert [(r.name, r.satisfied) for r in outcome.goal_results] == [("racks", False), ("replicas", False)]


def test_the_repair_moves_only_what_the_hard_goals_need_the_rest_waits_for_approval() -> None:
    repair = settled_pass().new_plan
    full = settled_pass(repair=False).new_plan

    assert repair is not None and full is not None
    # One replica of each of the 3 partitions leaves rack a; the soft goal's "logs" moves are not in it.
    assert moved_topics(repair) == {"orders"} and repair.moves == 3
    assert "logs" in moved_topics(full)


def test_a_plan_that_only_improves_soft_goals_waits_for_approval() -> None:
    outcome = settled_pass(metadata=SOFT_ONLY)

    assert outcome.decision.action is Action.AWAIT_APPROVAL
    assert outcome.new_plan is not None and outcome.new_plan.repairs is None
    assert conditions(outcome)["ApprovalValid"][1] == "AwaitingApproval"
    assert "PlanAutoApproved" not in [e.reason for e in outcome.events]


def test_without_the_opt_in_a_repair_waits_for_approval() -> None:
    outcome = settled_pass(repair=False)

    assert outcome.decision.action is Action.AWAIT_APPROVAL
    assert outcome.new_plan is not None and outcome.new_plan.repairs is None


def test_dry_run_never_executes_a_repair_and_paused_still_pauses() -> None:
    dry = settled_pass("DryRun")
    paused = settled_pass(spec={"paused": True})

    assert dry.decision.action is Action.PLAN_ONLY and dry.new_plan is not None
    assert dry.new_plan.repairs is None
    assert paused.decision.action is Action.NOTHING and paused.decision.reason == "Paused"


def test_a_repair_waits_one_reconcile_for_the_goals_to_settle() -> None:
    first = decide_pool(pool_input())

    assert first.decision.action is Action.PLAN_ONLY and first.decision.reason == "GoalsChanged"


def test_a_pending_drain_is_the_users_to_approve_even_with_a_hard_goal_violated() -> None:
    # A plan made while broker 4 drains also empties it: that is not a repair only.
    outcome = settled_pass(spec={"drain": [4]})

    assert outcome.decision.action is Action.AWAIT_APPROVAL
    assert outcome.new_plan is not None and outcome.new_plan.repairs is None


def test_a_pending_demotion_is_the_users_to_approve_even_with_a_hard_goal_violated() -> None:
    # Broker 2 leads "logs" partitions: a plan would also move their leadership away.
    pending = settled_pass(spec={"demote": [2]})
    # Broker 3 leads nothing: the demotion is done, and the repair runs.
    done = settled_pass(spec={"demote": [3]})

    assert pending.decision.action is Action.AWAIT_APPROVAL
    assert done.decision.action is Action.EXECUTE and done.decision.reason == "RepairsHardGoals"


def test_an_interrupted_repair_resumes_without_approval_unless_the_opt_in_was_turned_off() -> None:
    made = settled_pass()
    assert made.new_plan is not None
    running = {**made.status.to_dict(), "execution": {"planId": made.new_plan.id, "phase": "Running"}}

    resumed = decide_pool(pool_input(status=running, stored=made.new_plan))
    turned_off = decide_pool(pool_input(repair=False, status=running, stored=made.new_plan))

    assert resumed.decision.action is Action.EXECUTE and resumed.decision.reason == "RepairsHardGoals"
    assert resumed.new_plan is None  # the stored repair runs on; nothing is replanned under it
    assert turned_off.decision.action is Action.AWAIT_APPROVAL


def test_an_approval_of_a_repair_is_honoured_and_a_stale_one_does_not_block_it() -> None:
    def decided(**overrides: Any) -> tuple[Action, str]:
        args: dict[str, Any] = {
            "mode": "Manual",
            "paused": False,
            "stored_id": "abc",
            "empty": False,
            "approved": None,
            "executed": None,
            "repairs": "RackAware (1 partition(s) break rack awareness)",
        }
        decision = decide(**{**args, **overrides})
        return decision.action, decision.reason

    assert decided() == (Action.EXECUTE, "RepairsHardGoals")
    assert decided(approved="abc") == (Action.EXECUTE, "Approved")
    assert decided(approved="old") == (Action.EXECUTE, "RepairsHardGoals")
    assert decided(executed="abc") == (Action.NOTHING, "AlreadyExecuted")  # never twice
    assert decided(mode="DryRun") == (Action.PLAN_ONLY, "DryRun")
    assert decided(paused=True) == (Action.NOTHING, "Paused")
    assert decided(repairs=None) == (Action.AWAIT_APPROVAL, "AwaitingApproval")


@pytest.mark.parametrize(
    ("mode", "paused", "repair", "halts"),
    [
        ("Manual", False, True, False),
        ("Manual", False, False, True),  # the opt-in was turned off: as a withdrawn approval
        ("Manual", True, True, True),
        ("DryRun", False, True, True),
    ],
)
def test_a_running_repair_halts_when_paused_in_dry_run_or_once_the_opt_in_is_off(
    mode: str, paused: bool, repair: bool, halts: bool
) -> None:
    found = halt_reason(mode=mode, paused=paused, approved=None, plan="p1", repair=repair)

    assert (found is not None) is halts
