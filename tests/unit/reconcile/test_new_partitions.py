"""Partitions created since the previous plan (a new topic, partitions added to one) are noticed at the
next pass and placed by its plan: leadership alone when that is enough, otherwise by moving the new
(small) partitions rather than old ones; the pass says so in a NewPartitions event."""

from __future__ import annotations

from typing import Any

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.model.cluster import Cluster, Partition, PartitionLoad
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.reconcile.approval import Action, Decision
from kafka_balancer.reconcile.new_partitions import Growth, grown, partition_counts
from kafka_balancer.reconcile.plan_decision import goal_set_id
from kafka_balancer.reconcile.pool import PoolOutcome, decide_pool
from kafka_balancer.reconcile.pool_input import PoolInput, StoredPlan
from kafka_balancer.reconcile.replanning import new_partitions_event as event_of
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta

MIB = 2**20
RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}
# Balanced for the default goal set: 4 replicas and 2 leaderships per broker, every partition rack aware.
OLD = tuple(
    PartitionMeta("old", p, replicas, replicas[0])
    for p, replicas in enumerate([(2, 1), (1, 3), (3, 1), (4, 2), (1, 2), (2, 4), (3, 4), (4, 3)])
)
OLD_LOADS = {("old", p): PartitionLoad(50.0 * MIB, 1e4, 1e4, 0.0) for p in range(8)}
# Replicas spread evenly and rack aware, but broker 1 leads every partition it holds (4 of 8).
LEADERS_ON_1 = tuple(
    PartitionMeta("new", p, replicas, replicas[0])
    for p, replicas in enumerate([(1, 2), (1, 3), (1, 2), (1, 3), (4, 2), (4, 3), (2, 4), (3, 4)])
)
# Every replica on brokers 1 and 2: replica counts need replica moves.
ON_1_AND_2 = tuple(PartitionMeta("new", p, (1, 2) if p % 2 else (2, 1), 1 if p % 2 else 2) for p in range(8))


def pool_input(
    metadata: ClusterMetadata,
    known: dict[str, int] | None,
    mode: str = "Auto",
    paused: bool = False,
    **extra: Any,
) -> PoolInput:
    spec = BrokerPoolSpec.model_validate(
        {
            "mode": mode,
            "paused": paused,
            "kafka": {"bootstrapServers": "k:9092"},
            "capacity": {"disk": "100Gi", "networkIn": "100M", "networkOut": "100M", "cpu": 4},
        }
    )
    loads = {**OLD_LOADS, **extra.pop("loads", {})}
    values: dict[str, Any] = {
        "name": "main",
        "spec": spec,
        "generation": 1,
        # The goals were recorded by an earlier pass: Auto does not wait for them to settle.
        "status": {"goalSet": goal_set_id([])},
        "approved": None,
        "goals": [],
        "metadata": metadata,
        "loads": loads,
        "stored": None,
        "now": 1_000_000.0,
        "known_partitions": known,
    }
    return PoolInput(**{**values, **extra})


def after_growth(new: tuple[PartitionMeta, ...], mode: str = "Auto", **extra: Any) -> PoolOutcome:
    """The pass after a balanced pass (``OLD`` only) that finds ``new`` too."""
    first = decide_pool(pool_input(ClusterMetadata(RACKS, OLD), None, mode, **extra))
    assert first.new_plan is not None and not first.new_plan.reassignments  # OLD is balanced
    assert first.partitions == {"old": 8}
    assert first.new_partitions == 0 and "NewPartitions" not in {e.reason for e in first.events}
    return decide_pool(pool_input(ClusterMetadata(RACKS, OLD + new), dict(first.partitions), mode, **extra))


def new_partitions_event(outcome: PoolOutcome) -> str:
    [message] = [e.message for e in outcome.events if e.reason == "NewPartitions"]
    return message


def partitions_of(*specs: tuple[str, int, bool]) -> list[Partition]:
    zero = PartitionLoad(0.0, 0.0, 0.0, 0.0)
    return [Partition(t, p, (1, 2), 1, zero, movable) for t, n, movable in specs for p in range(n)]


def test_new_topics_and_added_partitions_are_told_from_the_previous_counts() -> None:
    now = partitions_of(("orders", 5, True), ("fresh", 3, True), ("same", 2, True), ("skipped", 4, False))

    assert grown({"orders": 3, "same": 2, "skipped": 1}, now) == (
        Growth("fresh", 0, 3),
        Growth("orders", 3, 5),
    )
    # The first pass has nothing to compare with: its plan covers every partition anyway.
    assert grown(None, now) == ()
    # Fewer partitions (a topic deleted and made again smaller) is not growth.
    assert grown({"orders": 9, "fresh": 3, "same": 2}, now) == ()
    assert partition_counts(ClusterMetadata(RACKS, OLD + LEADERS_ON_1)) == {"old": 8, "new": 8}


def test_leaders_skewed_by_a_new_topic_are_fixed_by_leadership_alone() -> None:
    outcome = after_growth(LEADERS_ON_1)

    plan = outcome.new_plan
    assert plan is not None and plan.reassignments
    assert plan.moves == 0 and plan.bytes_to_move == 0
    before = {p.partition: set(p.replicas) for p in LEADERS_ON_1}
    assert all(r.topic == "new" and set(r.replicas) == before[r.partition] for r in plan.reassignments)
    assert outcome.decision.action is Action.EXECUTE
    assert outcome.new_partitions == 8
    assert outcome.partitions == {"old": 8, "new": 8}
    n = len(plan.reassignments)
    assert new_partitions_event(outcome) == (
        f"8 new partition(s) since the previous plan (8 of new topic new); plan {plan.id} places them: "
        f"{n} by leadership alone (replicas reordered, nothing copied), 0 by moving 0 replica(s); "
        f"mode Auto: executing plan {plan.id}."
    )


def test_replica_moves_for_new_partitions_move_them_and_no_old_one() -> None:
    outcome = after_growth(
        ON_1_AND_2, loads={("new", p): PartitionLoad(MIB, 0.0, 0.0, 0.0) for p in range(8)}
    )

    plan = outcome.new_plan
    assert plan is not None and plan.moves > 0
    assert {r.topic for r in plan.reassignments} == {"new"}
    # Each replica move of a new partition copies its 1 MiB; no 50 MiB partition moves.
    assert plan.bytes_to_move == plan.moves * MIB
    assert "by moving" in new_partitions_event(outcome)
    assert "older partitions" not in new_partitions_event(outcome)


def test_older_partitions_a_placing_plan_also_changes_are_told_by_replicas_and_by_leadership() -> None:
    # A plan that fixes a band also evens the leaders over every movable partition: older
    # partitions' leaderships can move alone, which the event must tell apart from replica moves.
    zero = PartitionLoad(0.0, 0.0, 0.0, 0.0)
    cluster = Cluster(
        (),
        tuple(Partition(p.topic, p.partition, p.replicas, p.leader, zero) for p in OLD + ON_1_AND_2),
    )
    plan = ReassignmentPlan(
        (
            Reassignment("new", 0, (3, 4)),  # moved: 2 replica moves
            Reassignment("new", 1, (2, 1)),  # reordered
            Reassignment("old", 1, (3, 1)),  # an older leadership alone
            Reassignment("old", 2, (1, 3)),  # another
            Reassignment("old", 3, (4, 3)),  # an older replica move (2 -> 3)
        )
    )
    stored = StoredPlan("0123456789", plan, 0, 3)
    decision = Decision(Action.EXECUTE, "Auto", "mode Auto: executing plan 0123456789.")

    message = event_of((Growth("new", 0, 8),), cluster, stored, decision, ()).message

    assert message == (
        "8 new partition(s) since the previous plan (8 of new topic new); plan 0123456789 places them: "
        "1 by leadership alone (replicas reordered, nothing copied), 1 by moving 2 replica(s); it also "
        "moves 1 replica(s) of older partitions and the leadership alone of 2 older partition(s); "
        "mode Auto: executing plan 0123456789."
    )
    only_leaders = ReassignmentPlan(plan.reassignments[:4])
    message = event_of(
        (Growth("new", 0, 8),), cluster, StoredPlan("0123456789", only_leaders, 0, 2), decision, ()
    ).message
    assert "replica(s) of older partitions" not in message
    assert "; it also moves the leadership alone of 2 older partition(s);" in message


def test_partitions_added_to_a_topic_are_told_and_the_next_pass_is_quiet() -> None:
    added = tuple(
        PartitionMeta("old", 8 + p, r, r[0]) for p, r in enumerate([(1, 3), (2, 4), (3, 2), (4, 1)])
    )
    outcome = after_growth(added)

    assert outcome.new_partitions == 4
    assert new_partitions_event(outcome).startswith(
        "4 new partition(s) since the previous plan (4 added to topic old (8 → 12)); "
    )
    again = decide_pool(pool_input(ClusterMetadata(RACKS, OLD + added), dict(outcome.partitions or {})))
    assert again.new_partitions == 0 and "NewPartitions" not in {e.reason for e in again.events}


def test_new_partitions_the_plan_leaves_are_not_said_to_meet_goals_that_miss() -> None:
    # The old topic is excluded and one of its partitions fills brokers 2 and 1 with 10 GiB each:
    # DiskDistribution misses, and moving the new, empty partitions cannot help it.
    spec = BrokerPoolSpec.model_validate(
        {
            "mode": "Auto",
            "kafka": {"bootstrapServers": "k:9092"},
            "capacity": {"disk": "100Gi", "networkIn": "100M", "networkOut": "100M", "cpu": 4},
            "excludedTopics": ["old"],
        }
    )
    balanced_new = tuple(PartitionMeta("new", p.partition, p.replicas, p.leader) for p in OLD)
    outcome = after_growth(
        balanced_new,
        spec=spec,
        loads={("old", 0): PartitionLoad(10 * 1024 * MIB, 1e4, 1e4, 0.0)}
        | {("new", p): PartitionLoad(0.0, 0.0, 0.0, 0.0) for p in range(8)},
    )

    plan = outcome.new_plan
    assert plan is not None and not plan.reassignments
    unmet = [r.type for r in outcome.goal_results if not r.satisfied]
    assert "DiskDistribution" in unmet
    assert f"plan {plan.id} moves none of them (not met now, with them: " in new_partitions_event(outcome)
    assert "DiskDistribution" in new_partitions_event(outcome)
    assert "the goals hold" not in new_partitions_event(outcome)


def test_a_plan_placing_new_partitions_waits_for_approval_in_mode_manual() -> None:
    outcome = after_growth(LEADERS_ON_1, "Manual")

    assert outcome.decision.action is Action.AWAIT_APPROVAL
    assert outcome.new_plan is not None
    plan = outcome.new_plan.id
    assert new_partitions_event(outcome).endswith(
        f"waits for the annotation kafkabalancer.io/approve={plan}."
    )


def test_a_pass_that_makes_no_plan_keeps_the_previous_counts() -> None:
    paused = decide_pool(pool_input(ClusterMetadata(RACKS, OLD + LEADERS_ON_1), {"old": 8}, paused=True))

    assert paused.partitions is None and paused.new_partitions == 0
    assert "NewPartitions" not in {e.reason for e in paused.events}
