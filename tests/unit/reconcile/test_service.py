"""The operator's pure service layer: warm-up schedule, broker lifecycle, approval, conditions, one
reconcile of a pool. Expectations are computed by hand in the comments."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec, KafkaConnection
from kafka_balancer.errors import InputError
from kafka_balancer.formats.plan_file import parse_plan, plan_document
from kafka_balancer.goals.spec import GoalType, default_goal_set
from kafka_balancer.kube_quantity import parse_quantity
from kafka_balancer.reconcile.approval import Action, decide, plan_id
from kafka_balancer.reconcile.brokers import ESTABLISHED, Lifecycle, WarmUpPolicy, broker_views
from kafka_balancer.reconcile.conditions import Condition, merge_conditions, ready
from kafka_balancer.reconcile.connection import client_properties
from kafka_balancer.reconcile.pool import decide_pool
from kafka_balancer.reconcile.pool_input import LoadSource, PoolInput, StoredPlan, UsageSource
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta
from kafka_balancer.reconcile.warmup import next_step_at, warm_up_point

# -- warm-up schedule: 4 steps over 30 min, one step every 450 s ----------------------------------


@pytest.mark.parametrize(
    ("elapsed", "step", "share", "done"),
    [
        (0, 1, 0.25, False),
        (449, 1, 0.25, False),
        (450, 2, 0.5, False),
        (1349, 3, 0.75, False),
        (1350, 4, 1.0, False),
        (1799, 4, 1.0, False),
        (1800, 4, 1.0, True),
        (10_000, 4, 1.0, True),
    ],
)
def test_warm_up_share_rises_one_step_every_duration_over_steps(
    elapsed: int, step: int, share: float, done: bool
) -> None:
    point = warm_up_point(first_seen=1000.0, now=1000.0 + elapsed, duration_s=1800, steps=4)

    assert (point.step, point.share, point.done) == (step, share, done)


@pytest.mark.parametrize(
    ("elapsed", "shown", "step", "done"),
    [
        (1400, 1, 2, False),  # the clock says step 4: one past the step shown
        (1400, 3, 4, False),
        (10_000, 2, 3, False),  # the clock says warm: steps 3 and 4 have not shown yet
        (10_000, 3, 4, False),
        (10_000, 4, 4, True),
        (500, 3, 2, False),  # the duration was lengthened since step 3 showed: the clock's step
    ],
)
def test_a_broker_goes_at_most_one_step_past_the_step_status_showed(
    elapsed: int, shown: int, step: int, done: bool
) -> None:
    point = warm_up_point(1000.0, 1000.0 + elapsed, duration_s=1800, steps=4, shown=shown)

    assert (point.step, point.done) == (step, done)


def test_a_single_step_warm_up_is_full_share_until_the_duration_ends() -> None:
    assert warm_up_point(0.0, 10.0, 60, 1).share == 1.0
    assert not warm_up_point(0.0, 10.0, 60, 1).done


@pytest.mark.parametrize("shown", [1, 2, 3, 4])
def test_a_warming_broker_goes_further_exactly_when_its_next_step_is_due(shown: int) -> None:
    due = next_step_at(1000.0, duration_s=1800, steps=4, shown=shown)

    before = warm_up_point(1000.0, due - 0.001, duration_s=1800, steps=4, shown=shown)
    at = warm_up_point(1000.0, due, duration_s=1800, steps=4, shown=shown)
    assert (before.step, before.done) == (shown, False)
    # Past the last step: warm.
    assert (at.step, at.done) == ((shown + 1, False) if shown < 4 else (4, True))


def test_a_broker_behind_its_schedule_is_due_at_once() -> None:
    # Status showed step 1 at minute 20 of 30: step 2 was due at 7.5 min, the next pass moves it on.
    due = next_step_at(1000.0, duration_s=1800, steps=4, shown=1)

    assert due == 1450.0 < 1000.0 + 1200
    assert warm_up_point(1000.0, 1000.0 + 1200, duration_s=1800, steps=4, shown=1).step == 2


# -- broker lifecycle -----------------------------------------------------------------------------

POLICY = WarmUpPolicy(duration_s=1800, steps=4)
RACKS = {1: "a", 2: "b", 3: "c"}


def test_brokers_present_at_the_first_reconcile_are_established_not_warming() -> None:
    views = broker_views(RACKS, {1: 5, 2: 5, 3: 5}, None, [], POLICY, now=5000.0)

    assert [(v.id, v.state, v.share) for v in views] == [
        (1, Lifecycle.ACTIVE, 1.0),
        (2, Lifecycle.ACTIVE, 1.0),
        (3, Lifecycle.ACTIVE, 1.0),
    ]
    assert all(v.first_seen == ESTABLISHED for v in views)


def test_a_broker_seen_for_the_first_time_warms_up_from_now() -> None:
    recorded = {1: ESTABLISHED, 2: ESTABLISHED}

    (one, two, new) = broker_views(RACKS, {1: 5, 2: 5, 3: 0}, recorded, [], POLICY, now=5000.0)
    # 900 s later: 900 * 4 // 1800 + 1 = step 3, share 75 %, as status showed step 2.
    later = broker_views(RACKS, {}, {**recorded, 3: 5000.0}, [], POLICY, now=5900.0, shown={3: 2})[2]

    assert (one.state, two.state) == (Lifecycle.ACTIVE, Lifecycle.ACTIVE)
    assert (new.state, new.step, new.steps, new.share, new.first_seen) == (
        Lifecycle.WARMING,
        1,
        4,
        0.25,
        5000.0,
    )
    assert (later.state, later.step, later.share) == (Lifecycle.WARMING, 3, 0.75)


def test_a_broker_listed_as_new_warms_up_even_if_established() -> None:
    policy = WarmUpPolicy(1800, 4, listed=frozenset({2}))

    views = broker_views(RACKS, {}, {1: ESTABLISHED, 2: ESTABLISHED, 3: ESTABLISHED}, [], policy, now=100.0)

    assert [v.state for v in views] == [Lifecycle.ACTIVE, Lifecycle.WARMING, Lifecycle.ACTIVE]
    assert views[1].first_seen == 100.0


def test_a_drained_broker_is_draining_while_it_holds_replicas_then_drained() -> None:
    busy = broker_views(RACKS, {1: 3, 2: 3, 3: 2}, None, [3], POLICY, now=0.0)
    empty = broker_views(RACKS, {1: 4, 2: 4, 3: 0}, None, [3], POLICY, now=0.0)

    assert busy[2].state is Lifecycle.DRAINING
    assert empty[2].state is Lifecycle.DRAINED


# -- approval -------------------------------------------------------------------------------------


def choose(**overrides: Any) -> Action:
    args: dict[str, Any] = {
        "mode": "Manual",
        "paused": False,
        "stored_id": "abc",
        "empty": False,
        "approved": None,
        "executed": None,
    }
    return decide(**{**args, **overrides}).action


def test_approval_rules() -> None:
    assert choose() is Action.AWAIT_APPROVAL
    assert choose(approved="abc") is Action.EXECUTE
    assert choose(approved="old") is Action.REFUSE
    assert choose(approved="abc", executed="abc") is Action.NOTHING  # never twice
    assert choose(approved="abc", paused=True) is Action.NOTHING
    assert choose(mode="DryRun", approved="abc") is Action.PLAN_ONLY
    assert choose(mode="Auto") is Action.EXECUTE
    assert choose(mode="Auto", empty=True) is Action.NOTHING
    # An approval of the plan executed before is not a refusal of the new one: it just waits.
    assert choose(approved="old", executed="old") is Action.AWAIT_APPROVAL


def test_refusal_names_the_current_plan() -> None:
    decision = decide(
        mode="Manual", paused=False, stored_id="abc", empty=False, approved="xyz", executed=None
    )

    assert decision.reason == "StaleApproval"
    assert "approve=xyz" in decision.message and "current plan is abc" in decision.message


def test_plan_id_is_a_short_stable_hash_of_the_plan() -> None:
    doc = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}
    swapped = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [2, 1]}]}

    assert plan_id(doc) == plan_id({"partitions": doc["partitions"], "version": 1})
    assert plan_id(doc) != plan_id(swapped)
    assert len(plan_id(doc)) == 10


# -- conditions -----------------------------------------------------------------------------------


def test_transition_time_moves_only_when_the_status_changes() -> None:
    def merged(
        previous: list[dict[str, Any]], cond: Condition, generation: int, now: str
    ) -> list[dict[str, Any]]:
        return [c.to_dict() for c in merge_conditions(previous, [cond], generation=generation, now=now)]

    first = merged([], Condition("Balanced", "False", "MovesPlanned", "x"), 1, "T1")
    same = merged(first, Condition("Balanced", "False", "MovesPlanned", "y"), 2, "T2")
    flipped = merged(same, Condition("Balanced", "True", "GoalsSatisfied", "z"), 2, "T3")

    assert first[0]["lastTransitionTime"] == "T1"
    assert (same[0]["lastTransitionTime"], same[0]["message"], same[0]["observedGeneration"]) == (
        "T1",
        "y",
        2,
    )
    assert flipped[0]["lastTransitionTime"] == "T3"


def test_ready_summarises_the_first_problem() -> None:
    unreachable = Condition("KafkaReachable", "False", "Unreachable", "no broker answers")
    assert ready([unreachable]) == Condition("Ready", "False", "Unreachable", "no broker answers")
    assert ready([Condition("Balanced", "False", "MovesPlanned", "m")]).status == "True"
    assert ready([Condition("DrainBlocked", "True", "Infeasible", "d")]).status == "False"


# -- connection properties, quantities ------------------------------------------------------------


def test_sasl_credentials_come_from_the_secret() -> None:
    kafka = KafkaConnection.model_validate(
        {
            "bootstrapServers": "k:9093",
            "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-user"}},
        }
    )

    props = client_properties(kafka, {"username": "balancer", "password": "s3cret"}, None)

    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "balancer",
        "sasl.password": "s3cret",
    }
    assert "s3cret" not in repr(props) and "s3cret" not in str(props) and "s3cret" not in f"{props}"
    assert "balancer" in repr(props)
    with pytest.raises(InputError, match="Secret kafka-user has no key 'password'"):
        client_properties(kafka, {"username": "balancer"}, None)
    with pytest.raises(InputError, match="Secret kafka-user is missing"):
        client_properties(kafka, None, None)


@pytest.mark.parametrize(
    ("text", "value"),
    [("2Ti", 2.0 * 2**40), ("125M", 1.25e8), ("7500m", 7.5), (8, 8.0), ("1e3", 1000.0), ("50Mi", 52428800.0)],
)
def test_quantities(text: int | str, value: float) -> None:
    assert parse_quantity(text) == value


# -- one reconcile of a pool ----------------------------------------------------------------------

# 3 brokers in racks a, b, c; 8 partitions RF 2 all on brokers 1 and 2: 16 replicas, 0 on broker 3.
SKEWED = ClusterMetadata(
    RACKS,
    tuple(PartitionMeta("orders", p, (1, 2) if p % 2 else (2, 1), 1 if p % 2 else 2) for p in range(8)),
)
REPLICAS_GOAL = [
    ("replicas", BalancerGoalSpec.model_validate({"type": "ReplicaDistribution", "rangePercent": 10}))
]


def pool_input(mode: str = "DryRun", **overrides: Any) -> PoolInput:
    spec = BrokerPoolSpec.model_validate(
        {
            "mode": mode,
            "kafka": {"bootstrapServers": "k:9092"},
            "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
            **overrides.pop("spec", {}),
        }
    )
    values: dict[str, Any] = {
        "name": "main",
        "spec": spec,
        "generation": 3,
        "status": {},
        "approved": None,
        "goals": REPLICAS_GOAL,
        "metadata": SKEWED,
        "loads": {},
        "stored": None,
        "now": 1_000_000.0,
    }
    return PoolInput(**{**values, **overrides})


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_dry_run_plans_stores_and_reports_but_never_executes() -> None:
    outcome = decide_pool(pool_input("DryRun"))

    assert outcome.decision.action is Action.PLAN_ONLY
    assert outcome.new_plan is not None
    # Expected replicas per broker 16/3 = 5.33, band floor(5.33*0.9)=4..ceil(5.33*1.1)=6: broker 3 needs >= 4.
    assert outcome.new_plan.moves >= 4
    assert outcome.new_plan.id == plan_id(plan_document(outcome.new_plan.reassignments))
    assert outcome.report is not None and len(outcome.report["brokers"]) == 3
    assert conditions(outcome.status.to_dict())["Ready"] == ("True", "Reconciled")
    assert conditions(outcome.status.to_dict())["PlanReady"] == ("True", "Planned")
    assert conditions(outcome.status.to_dict())["Balanced"] == ("False", "MovesPlanned")
    assert outcome.status.to_dict()["plan"]["movesRemaining"] == outcome.new_plan.moves
    assert outcome.status.to_dict()["plan"]["configMap"] == "main-plan"
    assert all(c["observedGeneration"] == 3 for c in outcome.status.to_dict()["conditions"])
    assert [(r.name, r.satisfied) for r in outcome.goal_results] == [("replicas", False)]
    assert [e.reason for e in outcome.events] == ["PlanReady"]


def stored_from(outcome_plan: StoredPlan) -> StoredPlan:
    return StoredPlan(
        outcome_plan.id, outcome_plan.reassignments, outcome_plan.bytes_to_move, outcome_plan.moves
    )


def test_manual_refuses_a_stale_approval_and_executes_exactly_the_stored_plan() -> None:
    first = decide_pool(pool_input("Manual"))
    assert first.decision.action is Action.AWAIT_APPROVAL
    assert first.new_plan is not None
    stored = stored_from(first.new_plan)

    wrong = decide_pool(
        pool_input("Manual", stored=stored, status=first.status.to_dict(), approved="0123456789")
    )
    right = decide_pool(
        pool_input("Manual", stored=stored, status=first.status.to_dict(), approved=stored.id)
    )

    assert wrong.decision.action is Action.REFUSE
    assert conditions(wrong.status.to_dict())["ApprovalValid"] == ("False", "StaleApproval")
    assert conditions(wrong.status.to_dict())["Ready"][0] == "False"
    (refused,) = [e.message for e in wrong.events if e.reason == "ApprovalRefused"]
    assert refused == (
        f"Approval refused: kafkabalancer.io/approve=0123456789 names no current plan; "
        f"the current plan is {stored.id}."
    )
    assert right.decision.action is Action.EXECUTE
    assert right.new_plan is None  # nothing recomputed: the stored plan is what runs
    assert right.status.to_dict()["plan"]["id"] == stored.id


def test_auto_executes_only_once_a_second_reconcile_confirms_the_goals() -> None:
    first = decide_pool(pool_input("Auto"))
    second = decide_pool(pool_input("Auto", status=first.status.to_dict()))
    other_goals = [("racks", BalancerGoalSpec.model_validate({"type": "RackAware"})), *REPLICAS_GOAL]
    changed = decide_pool(pool_input("Auto", status=first.status.to_dict(), goals=other_goals))

    assert first.decision.action is Action.PLAN_ONLY and first.decision.reason == "GoalsChanged"
    assert second.decision.action is Action.EXECUTE
    assert changed.decision.reason == "GoalsChanged"


def test_auto_replans_a_stale_stored_plan_but_resumes_an_interrupted_one() -> None:
    settled = decide_pool(pool_input("Auto")).status.to_dict()
    # A stored plan that a different cluster view produced (it moves partition 0 only).
    stale_document = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 1]}]}
    stale = StoredPlan(plan_id(stale_document), parse_plan(stale_document), 10, 1)
    running = {**settled, "execution": {"planId": stale.id, "phase": "Running", "movesDone": 0}}

    replanned = decide_pool(pool_input("Auto", status=settled, stored=stale))
    resumed = decide_pool(pool_input("Auto", status=running, stored=stale))

    assert replanned.decision.action is Action.EXECUTE
    assert replanned.new_plan is not None and replanned.new_plan.id != stale.id
    assert resumed.decision.action is Action.EXECUTE
    assert resumed.new_plan is None and resumed.status.to_dict()["plan"]["id"] == stale.id


def test_where_the_loads_came_from_is_a_condition_that_never_makes_the_pool_unready() -> None:
    failed = decide_pool(pool_input(load_source=LoadSource(False, "score: no samples")))
    scored = decide_pool(pool_input(load_source=LoadSource(True)))
    unset = decide_pool(pool_input())

    assert conditions(failed.status.to_dict())["LoadsScored"] == ("False", "ScoringFailed")
    message = next(c["message"] for c in failed.status.to_dict()["conditions"] if c["type"] == "LoadsScored")
    assert message.endswith("the latest scoring run failed: score: no samples")
    assert conditions(failed.status.to_dict())["Ready"][0] == "True"
    assert conditions(scored.status.to_dict())["LoadsScored"] == ("True", "Scored")
    assert "LoadsScored" not in conditions(unset.status.to_dict())


def test_an_impossible_drain_moves_nothing_and_says_why() -> None:
    # Every partition has RF 3 on the 3 brokers: without broker 3 there are only 2 brokers left.
    full = ClusterMetadata(RACKS, tuple(PartitionMeta("t", p, (1, 2, 3), 1) for p in range(3)))

    outcome = decide_pool(pool_input("Auto", metadata=full, spec={"drain": [3]}))

    assert outcome.new_plan is None
    assert conditions(outcome.status.to_dict())["DrainBlocked"] == ("True", "Infeasible")
    assert conditions(outcome.status.to_dict())["PlanReady"] == ("False", "Infeasible")
    message = next(
        c["message"] for c in outcome.status.to_dict()["conditions"] if c["type"] == "DrainBlocked"
    )
    assert message.startswith("drain blocked: ")
    assert outcome.status.to_dict()["brokers"][2]["state"] == "Draining"
    assert [e.reason for e in outcome.events] == ["DrainBlocked"]
    assert outcome.events[0].message.startswith("Drain of brokers [3] is blocked: ")
    assert outcome.events[0].message.endswith(".")


def test_a_finished_drain_reports_the_broker_drained() -> None:
    emptied = ClusterMetadata(RACKS, tuple(PartitionMeta("t", p, (1, 2), 1) for p in range(4)))
    status = {"brokers": [{"id": 3, "rack": "c", "state": "Draining"}]}

    outcome = decide_pool(pool_input("Auto", metadata=emptied, spec={"drain": [3]}, status=status))

    assert outcome.status.to_dict()["brokers"][2]["state"] == "Drained"
    assert [e.message for e in outcome.events if e.reason == "DrainDone"] == [
        "Broker 3 is drained: it holds no replica and can be removed from the cluster."
    ]


def test_a_drained_broker_that_left_the_cluster_is_removed_but_an_unknown_one_blocks() -> None:
    two = {1: "a", 2: "b"}
    left = ClusterMetadata(two, tuple(PartitionMeta("t", p, (1, 2), 1) for p in range(4)))
    drained = {"brokers": [{"id": 3, "rack": "c", "state": "Drained"}]}

    removed = decide_pool(pool_input("Auto", metadata=left, spec={"drain": [3]}, status=drained))
    typo = decide_pool(pool_input("Auto", metadata=left, spec={"drain": [3]}))

    assert {"id": 3, "state": "Removed"} in removed.status.to_dict()["brokers"]
    assert conditions(removed.status.to_dict())["DrainBlocked"] == ("False", "Drained")
    assert conditions(removed.status.to_dict())["Ready"][0] == "True"
    assert conditions(typo.status.to_dict())["DrainBlocked"] == ("True", "UnknownBroker")
    assert all(b["id"] != 3 for b in typo.status.to_dict()["brokers"])


def test_a_pool_without_goals_is_planned_with_the_default_set() -> None:
    outcome = decide_pool(pool_input(goals=[]))

    assert [g["name"] for g in outcome.status.to_dict()["goals"]] == [
        t.value for t in priority_sorted_catalog()
    ]
    assert all(r.name == "" for r in outcome.goal_results)  # no BalancerGoal to write status to


def priority_sorted_catalog() -> list[GoalType]:
    return [g.type for g in sorted(default_goal_set(), key=lambda g: -g.priority)]


def test_an_invalid_excluded_topic_regex_is_a_condition_not_a_crash() -> None:
    outcome = decide_pool(pool_input(spec={"excludedTopics": ["orders-("]}))

    assert conditions(outcome.status.to_dict())["SpecValid"] == ("False", "InvalidExcludedTopics")
    assert conditions(outcome.status.to_dict())["Ready"][0] == "False"
    assert outcome.new_plan is None


def test_a_new_broker_warms_up_and_its_step_is_an_event() -> None:
    status = {
        "brokers": [{"id": 1, "rack": "a", "state": "Active"}, {"id": 2, "rack": "b", "state": "Active"}]
    }

    outcome = decide_pool(pool_input(status=status))

    assert outcome.status.to_dict()["brokers"][2]["state"] == "Warming"
    assert outcome.status.to_dict()["brokers"][2]["warmUpShare"] == "25%"
    assert [e.message for e in outcome.events if e.reason == "WarmUpStep"] == [
        "Broker 3 warms up: step 1 of 4, it now takes 25% of a full broker's share of the load."
    ]


def test_every_warm_up_step_shows_even_when_no_reconcile_ran_in_its_window() -> None:
    # Each pass comes an hour after the last, past the whole 30 min warm-up: no step's window had a
    # reconcile, yet each step shows (and is planned for) before the broker is Active.
    status: dict[str, Any] = {
        "brokers": [{"id": 1, "rack": "a", "state": "Active"}, {"id": 2, "rack": "b", "state": "Active"}]
    }
    shown = []
    for n in range(6):
        outcome = decide_pool(pool_input(status=status, now=1_000_000.0 + 3600 * n))
        status = outcome.status.to_dict()
        new = status["brokers"][2]
        shown.append(
            (new["state"], new.get("warmUpStep"), [e.reason for e in outcome.events].count("WarmUpStep"))
        )

    assert shown == [
        ("Warming", 1, 1),
        ("Warming", 2, 1),
        ("Warming", 3, 1),
        ("Warming", 4, 1),
        ("Active", None, 0),
        ("Active", None, 0),
    ]


def test_a_pass_says_when_a_warming_brokers_next_step_is_due_and_nothing_once_it_is_warm() -> None:
    # Each pass comes when the previous one said: every step shows then, and the warm-up ends on time.
    status: dict[str, Any] = {
        "brokers": [{"id": 1, "rack": "a", "state": "Active"}, {"id": 2, "rack": "b", "state": "Active"}]
    }
    now, seen = 1_000_000.0, []
    while True:
        outcome = decide_pool(pool_input(status=status, now=now))
        status = outcome.status.to_dict()
        seen.append(
            (now - 1_000_000.0, status["brokers"][2]["state"], status["brokers"][2].get("warmUpStep"))
        )
        if outcome.next_step_at is None:
            break
        now = outcome.next_step_at

    # The default warm-up: 30 min in 4 steps.
    assert seen == [
        (0.0, "Warming", 1),
        (450.0, "Warming", 2),
        (900.0, "Warming", 3),
        (1350.0, "Warming", 4),
        (1800.0, "Active", None),
    ]


def test_a_pool_with_no_warming_broker_has_no_step_due() -> None:
    status = {"brokers": [{"id": b, "rack": r, "state": "Active"} for b, r in ((1, "a"), (2, "b"), (3, "c"))]}

    assert decide_pool(pool_input(status=status)).next_step_at is None


def test_whether_broker_cpu_is_measured_is_a_condition_that_never_makes_the_pool_unready() -> None:
    url = "http://prometheus:9090"
    cases = {
        UsageSource(None): ("False", "NoSource"),
        UsageSource(url): ("False", "Waiting"),
        UsageSource(url, error="Prometheus at http://prometheus:9090: unreachable"): (
            "False",
            "PrometheusFailed",
        ),
        UsageSource(url, brokers=0): ("False", "NoBrokerSeries"),
        UsageSource(url, brokers=3): ("True", "Prometheus"),
    }
    for source, expected in cases.items():
        status = decide_pool(pool_input(usage_source=source)).status.to_dict()
        assert conditions(status)["CpuMeasured"] == expected, source
        assert conditions(status)["Ready"][0] == "True", source
    without = decide_pool(pool_input(usage_source=UsageSource(None))).status.to_dict()
    message = next(c["message"] for c in without["conditions"] if c["type"] == "CpuMeasured")
    assert "cpu goals (CpuCapacity, CpuDistribution) hold trivially" in message
    assert "CpuMeasured" not in conditions(decide_pool(pool_input()).status.to_dict())


def message_of(status: dict[str, Any], type_: str) -> str:
    return str(next(c["message"] for c in status["conditions"] if c["type"] == type_))


def test_a_demoted_broker_is_planned_off_leadership_and_the_condition_counts_what_it_still_leads() -> None:
    led_by_3 = ClusterMetadata(RACKS, tuple(PartitionMeta("t", p, (3, 1, 2), 3) for p in range(4)))

    outcome = decide_pool(pool_input("DryRun", metadata=led_by_3, spec={"demote": [3]}))

    assert outcome.new_plan is not None and outcome.new_plan.bytes_to_move == 0
    assert all(r.replicas[0] != 3 for r in outcome.new_plan.reassignments)
    assert len(outcome.new_plan.reassignments) == 4
    status = outcome.status.to_dict()
    assert conditions(status)["Demoted"] == ("False", "MovingLeadership")
    assert message_of(status, "Demoted") == (
        "brokers [3] still lead 4 partition(s) (broker 3 leads 4); leadership is being moved"
    )
    assert conditions(status)["Ready"] == ("True", "Reconciled")
    assert "DemotionDone" not in [e.reason for e in outcome.events]


def test_a_finished_demotion_is_an_event_once_and_unlisting_removes_the_condition() -> None:
    led_by_1 = ClusterMetadata(RACKS, tuple(PartitionMeta("t", p, (1, 2, 3), 1) for p in range(4)))

    done = decide_pool(pool_input("DryRun", metadata=led_by_1, spec={"demote": [3]}))
    status = done.status.to_dict()
    again = decide_pool(pool_input("DryRun", metadata=led_by_1, spec={"demote": [3]}, status=status))
    unlisted = decide_pool(pool_input("DryRun", metadata=led_by_1, status=again.status.to_dict()))

    assert conditions(status)["Demoted"] == ("True", "LeadershipMoved")
    assert message_of(status, "Demoted") == "brokers [3] lead no partition"
    assert [e.message for e in done.events if e.reason == "DemotionDone"] == ["brokers [3] lead no partition"]
    assert "DemotionDone" not in [e.reason for e in again.events]
    assert "Demoted" not in conditions(unlisted.status.to_dict())


def test_partitions_whose_replicas_are_all_demoted_keep_their_leader_and_are_named() -> None:
    both = ClusterMetadata(RACKS, (PartitionMeta("t", 0, (2, 3), 2), PartitionMeta("t", 1, (2, 1), 2)))

    outcome = decide_pool(pool_input("DryRun", metadata=both, spec={"demote": [2, 3]}))

    assert outcome.new_plan is not None and outcome.new_plan.bytes_to_move == 0
    assert [(r.topic, r.partition, r.replicas) for r in outcome.new_plan.reassignments] == [("t", 1, (1, 2))]
    before = outcome.status.to_dict()
    assert conditions(before)["Demoted"] == ("False", "MovingLeadership")
    moved = ClusterMetadata(RACKS, (PartitionMeta("t", 0, (2, 3), 2), PartitionMeta("t", 1, (1, 2), 1)))
    after = decide_pool(pool_input("DryRun", metadata=moved, spec={"demote": [2, 3]})).status.to_dict()
    assert conditions(after)["Demoted"] == ("False", "AllReplicasDemoted")
    assert message_of(after, "Demoted") == (
        "brokers [2, 3] still lead 1 partition(s) (broker 2 leads 1) whose replicas are all demoted: t-0"
    )
