"""spec.selfHealing's broker failure, pass by pass: a pool broker missing from the cluster is Missing,
then Failed after brokerFailureSeconds, and its replicas are re-homed (same rack first) by a plan that
runs without approval in mode Manual too; one back in time cancels it, one back later warms up as
new; beyond the guard nothing is planned and the status says why. The operator's only memory of
since when a broker is missing is the pool's status, so every pass here starts from the status the
previous one wrote, as a restarted operator does."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.reconcile.approval import Action, halt_reason, repair_opted_in
from kafka_balancer.reconcile.pool import PoolOutcome, decide_pool
from kafka_balancer.reconcile.pool_input import PoolInput
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta

# Racks a: 1, 4; b: 2, 5; c: 3, 6. "orders" 0..7: one replica per rack, every combination, so each
# broker holds 4 replicas and the cluster is balanced: nothing moves while every broker is there.
RACKS = {b: "abc"[(b - 1) % 3] for b in range(1, 7)}
ORDERS = tuple(
    PartitionMeta("orders", p, reps, reps[0])
    for p, reps in enumerate(((1, 4)[p % 2], (2, 5)[p // 2 % 2], (3, 6)[p // 4 % 2]) for p in range(8))
)
GOALS = [
    ("racks", BalancerGoalSpec.model_validate({"type": "RackAware"})),
    ("replicas", BalancerGoalSpec.model_validate({"type": "ReplicaDistribution", "rangePercent": 10})),
]
T0 = 1_000_000.0
TIMEOUT = 60


def metadata(*down: int, partitions: tuple[PartitionMeta, ...] = ORDERS) -> ClusterMetadata:
    """The cluster with ``down`` stopped: Kafka lists it no more, replicas still name it."""
    named = {b for p in partitions for b in p.replicas}
    brokers = {b: ("" if b in down else rack) for b, rack in RACKS.items() if b not in down or b in named}
    return ClusterMetadata(brokers, partitions, frozenset(down) & named)


def healed(broker: int, to: int) -> tuple[PartitionMeta, ...]:
    """ORDERS once the healing plan ran: ``broker``'s replicas on ``to``."""
    return tuple(
        PartitionMeta(p.topic, p.partition, tuple(to if b == broker else b for b in p.replicas), p.leader)
        for p in ORDERS
    )


def pool_input(status: dict[str, Any], meta: ClusterMetadata, now: float, **spec: Any) -> PoolInput:
    healing = {"enabled": True, "brokerFailureSeconds": TIMEOUT, **spec.pop("selfHealing", {})}
    stored = spec.pop("stored", None)
    return PoolInput(
        name="main",
        spec=BrokerPoolSpec.model_validate(
            {
                "mode": spec.pop("mode", "Manual"),
                "kafka": {"bootstrapServers": "k:9092"},
                "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
                "selfHealing": healing,
                **spec,
            }
        ),
        generation=1,
        status=status,
        approved=None,
        goals=GOALS,
        metadata=meta,
        loads={},
        stored=stored,
        now=now,
    )


def passes(*steps: tuple[ClusterMetadata, float], **spec: Any) -> list[PoolOutcome]:
    """Reconciles in a row, each on the status the previous one wrote; the first sees every broker."""
    outcomes = [decide_pool(pool_input({}, metadata(), T0, **dict(spec)))]
    for meta, now in steps:
        outcomes.append(decide_pool(pool_input(outcomes[-1].status.to_dict(), meta, now, **dict(spec))))
    return outcomes


def broker(outcome: PoolOutcome, broker_id: int) -> dict[str, Any] | None:
    return next((b for b in outcome.status.to_dict()["brokers"] if b["id"] == broker_id), None)


def condition(outcome: PoolOutcome, type_: str) -> tuple[str, str, str]:
    found = next(c for c in outcome.status.to_dict()["conditions"] if c["type"] == type_)
    return found["status"], found["reason"], found["message"]


def events(outcome: PoolOutcome) -> dict[str, str]:
    return {e.reason: e.message for e in outcome.events}


def test_a_missing_broker_is_missing_until_the_timeout_and_nothing_is_healed_yet() -> None:
    _, missing = passes((metadata(4), T0 + 10))

    assert broker(missing, 4) == {
        "id": 4,
        "rack": "a",
        "state": "Missing",
        "missingSince": "1970-01-12T13:46:50Z",
    }
    status, reason, message = condition(missing, "BrokerFailure")
    assert (status, reason) == ("True", "BrokersMissing")
    assert (
        "broker 4 missing since 1970-01-12T13:46:50Z, failed at 1970-01-12T13:47:50Z unless it returns"
        in message
    )
    assert "Broker 4 (rack a) is missing from the cluster" in events(missing)["BrokerMissing"]
    assert missing.decision.action is not Action.EXECUTE
    # Its replicas stay where they are: nothing moves off (or onto) a broker that may come back.
    assert missing.new_plan is None or missing.new_plan.moves == 0
    assert condition(missing, "Ready")[0] == "True"


def test_after_the_timeout_the_broker_is_failed_and_its_replicas_re_homed_in_its_rack_without_approval() -> (
    None
):
    *_, failed = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT))

    assert broker(failed, 4) == {
        "id": 4,
        "rack": "a",
        "state": "Failed",
        "missingSince": "1970-01-12T13:46:50Z",
    }
    assert condition(failed, "BrokerFailure")[:2] == ("True", "BrokersFailed")
    assert "BrokerFailed" in events(failed)
    plan = failed.new_plan
    assert plan is not None and plan.repairs == "failed brokers [4]"
    # Each of broker 4's 4 replicas goes to broker 1, the other broker of rack a; nothing else moves.
    before = {p.partition: p.replicas for p in ORDERS}
    assert plan.moves == 4
    for r in plan.reassignments:
        assert 4 in before[r.partition] and set(r.replicas) == set(before[r.partition]) - {4} | {1}
    assert failed.decision.action is Action.EXECUTE and failed.decision.reason == "RepairsHardGoals"
    assert condition(failed, "ApprovalValid")[2].endswith("it repairs failed brokers [4]")
    assert "PlanAutoApproved" in events(failed)


def test_a_broker_back_before_the_timeout_cancels_it_and_is_as_it_was() -> None:
    *_, back = passes((metadata(4), T0 + 10), (metadata(), T0 + TIMEOUT))

    assert broker(back, 4) == {"id": 4, "rack": "a", "state": "Active"}
    assert condition(back, "BrokerFailure")[:2] == ("False", "AllBrokersPresent")
    assert "back before it was failed" in events(back)["BrokerReturned"]
    assert back.new_plan is None or back.new_plan.moves == 0


def test_a_broker_back_after_it_failed_is_a_new_broker_that_warms_up() -> None:
    *_, late = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT), (metadata(), T0 + 100))

    assert broker(late, 4) == {
        "id": 4,
        "rack": "a",
        "state": "Warming",
        "firstSeen": "1970-01-12T13:48:20Z",
        "warmUpStep": 1,
        "warmUpSteps": 4,
        "warmUpShare": "25%",
    }
    assert "new broker and warms up" in events(late)["BrokerReturned"]


def test_a_partition_whose_only_replica_was_on_the_failed_broker_is_left_as_it_is_and_named() -> None:
    # Replication factor 1 on broker 4: Kafka lists it leaderless, and nothing is left to copy from.
    lone = (*ORDERS, PartitionMeta("logs", 0, (4,), -1))
    *_, failed = passes(
        (metadata(4, partitions=lone), T0 + 10), (metadata(4, partitions=lone), T0 + 10 + TIMEOUT)
    )

    plan = failed.new_plan
    assert plan is not None and plan.moves == 4
    assert {r.topic for r in plan.reassignments} == {"orders"}
    assert failed.decision.action is Action.EXECUTE
    assert "no readable replica" in events(failed)["PartitionsStranded"]
    assert events(failed)["PartitionsStranded"].endswith("unless a broker or disk returns: logs-0.")
    # The condition does not claim every replica is re-homed.
    status, reason, message = condition(failed, "BrokerFailure")
    assert (status, reason) == ("True", "BrokersFailed")
    assert message.endswith("but for 1 partition(s) with no replica elsewhere, which no move can copy")


def test_once_its_replicas_are_re_homed_a_failed_broker_is_healed_and_forgotten() -> None:
    *_, done = passes(
        (metadata(4), T0 + 10),
        (metadata(4), T0 + 10 + TIMEOUT),
        (metadata(4, partitions=healed(4, 1)), T0 + 200),
    )

    assert broker(done, 4) is None
    assert "Broker 4 is healed" in events(done)["BrokerHealed"]
    assert condition(done, "BrokerFailure")[:2] == ("False", "AllBrokersPresent")


@pytest.mark.parametrize(
    ("guard", "why"),
    [
        (
            {"maxFailedBrokers": 1},
            "2 brokers [4, 5] failed at once, more than spec.selfHealing.maxFailedBrokers (1)",
        ),
        (
            {"maxFailedPercent": 30},
            "2 brokers [4, 5] failed at once, 33% of the pool's 6 brokers, more than "
            "spec.selfHealing.maxFailedPercent (30%)",
        ),
    ],
)
def test_beyond_the_guard_nothing_is_planned_and_the_status_says_why(guard: dict[str, int], why: str) -> None:
    *_, blocked = passes((metadata(4, 5), T0 + 10), (metadata(4, 5), T0 + 10 + TIMEOUT), selfHealing=guard)

    assert [broker(blocked, b)["state"] for b in (4, 5)] == ["Failed", "Failed"]  # type: ignore[index]
    assert blocked.new_plan is None
    assert blocked.decision.action is Action.NOTHING
    status, reason, message = condition(blocked, "PlanReady")
    assert (status, reason) == ("False", "TooManyFailedBrokers") and message.startswith(why)
    assert condition(blocked, "Ready")[:2] == ("False", "TooManyFailedBrokers")
    assert condition(blocked, "BrokerFailure")[1] == "TooManyFailedBrokers"
    assert events(blocked)["SelfHealingBlocked"].startswith(why[0].upper() + why[1:])


def test_within_the_guard_two_failed_brokers_are_healed() -> None:
    *_, both = passes(
        (metadata(4, 5), T0 + 10), (metadata(4, 5), T0 + 10 + TIMEOUT), selfHealing={"maxFailedBrokers": 2}
    )

    assert both.new_plan is not None and both.new_plan.repairs == "failed brokers [4, 5]"
    assert both.decision.action is Action.EXECUTE


def test_without_self_healing_a_missing_broker_stays_missing_and_nothing_is_healed() -> None:
    *_, later = passes(
        (metadata(4), T0 + 10), (metadata(4), T0 + 10 + 10 * TIMEOUT), selfHealing={"enabled": False}
    )

    assert broker(later, 4)["state"] == "Missing"  # type: ignore[index]
    status, reason, message = condition(later, "BrokerFailure")
    assert (status, reason) == ("True", "BrokersMissing") and "spec.selfHealing.enabled is false" in message
    assert later.decision.action is not Action.EXECUTE
    assert later.new_plan is None or later.new_plan.repairs is None


def test_auto_heals_with_every_goal_and_dry_run_only_plans() -> None:
    *_, auto = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT), mode="Auto")
    *_, dry = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT), mode="DryRun")

    assert auto.decision.action is Action.EXECUTE and auto.decision.reason == "AutoApproved"
    assert auto.new_plan is not None and auto.new_plan.repairs is None and auto.new_plan.moves >= 4
    assert dry.decision.action is Action.PLAN_ONLY


def test_an_interrupted_healing_resumes_without_approval_unless_self_healing_was_turned_off() -> None:
    *_, failed = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT))
    plan = failed.new_plan
    assert plan is not None
    running = {**failed.status.to_dict(), "execution": {"planId": plan.id, "phase": "Running"}}

    resumed = decide_pool(pool_input(running, metadata(4), T0 + 100, stored=plan))
    off = decide_pool(pool_input(running, metadata(4), T0 + 100, stored=plan, selfHealing={"enabled": False}))

    assert resumed.decision.action is Action.EXECUTE and resumed.decision.reason == "RepairsHardGoals"
    # Turned off, broker 4 is only missing again: its healing is not resumed, nothing is planned.
    assert off.decision.action is not Action.EXECUTE
    assert broker(off, 4)["state"] == "Missing"  # type: ignore[index]


@pytest.mark.parametrize(
    ("repairs", "hard_goals", "heal", "opted_in"),
    [
        ("failed brokers [4]", False, True, True),
        ("failed brokers [4]", True, False, False),
        ("RackAware (racks) (1 partition(s) break rack awareness)", True, False, True),
        ("RackAware (racks) (1 partition(s) break rack awareness)", False, True, False),
    ],
)
def test_a_running_healing_halts_once_its_own_opt_in_is_off(
    repairs: str, hard_goals: bool, heal: bool, opted_in: bool
) -> None:
    assert repair_opted_in(repairs, repair_hard_goals=hard_goals, heal_brokers=heal) is opted_in
    halts = halt_reason(mode="Manual", paused=False, approved=None, plan="p1", repair=opted_in)
    assert (halts is None) is opted_in


def test_a_failure_timeout_shorter_than_the_detection_interval_is_refused() -> None:
    with pytest.raises(
        ValueError, match="brokerFailureSeconds must not be shorter than detectionIntervalSeconds"
    ):
        pool_input({}, metadata(), T0, selfHealing={"brokerFailureSeconds": 30})


def test_a_draining_broker_that_is_down_stays_draining_and_is_planned_empty() -> None:
    *_, down = passes((metadata(4), T0 + 10), (metadata(4), T0 + 10 + TIMEOUT), drain=[4])

    assert broker(down, 4)["state"] == "Draining"  # type: ignore[index]
    assert condition(down, "BrokerFailure")[:2] == ("False", "AllBrokersPresent")
    assert down.new_plan is not None and down.new_plan.repairs is None
    assert all(4 not in r.replicas for r in down.new_plan.reassignments) and down.new_plan.moves == 4
