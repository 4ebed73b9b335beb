"""End to end in mode Manual with spec.selfHealing.repairHardGoals: a rack violation is repaired with no
approval while a producer writes, and a plan that only improves a soft goal keeps waiting for one."""

from __future__ import annotations

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import create_topic, partitions

from .conftest import OperatorProcess, wait_for
from .objects import PLAN_TIMEOUT_S, apply, condition, events, get, goal, pool
from .test_lifecycle import BALANCE_TIMEOUT_S, assert_clean, metric_samples, pool_status, rack_aware, traffic

REPAIR = {"selfHealing": {"repairHardGoals": True}}
GOALS = (("racks", {"type": "RackAware"}), ("replicas", {"type": "ReplicaDistribution", "rangePercent": 10}))


def manual_pool(bed: KafkaBed, kube_bed: kube.KubeBed, namespace: str, topic: str) -> None:
    apply(
        kube_bed,
        namespace,
        pool("main", bed.bootstrap_servers, "Manual", topic, **REPAIR),
        *(goal(name, "main", **g) for name, g in GOALS),
    )


def approval_reason(kube_bed: kube.KubeBed, namespace: str) -> str:
    reason: str = condition(get(kube_bed, namespace, "bp", "main"), "ApprovalValid").get("reason", "")
    return reason


def test_a_rack_violation_is_repaired_without_approval_under_traffic(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # Brokers 1 and 4 are both in rack a: partitions 0..2 keep both replicas there (RackAware allows
    # one per rack with RF 2 over 3 racks). Partitions 3..5 are rack aware and must not move.
    assignment = [[1, 4], [4, 1], [1, 4], [2, 3], [3, 2], [2, 3]]
    topic = create_topic(kafka_bed, "e2e-repair", assignment)

    with traffic(kafka_bed, topic):
        manual_pool(kafka_bed, kube_bed, namespace, topic)
        wait_for(
            lambda: approval_reason(kube_bed, namespace) == "RepairsHardGoals",
            PLAN_TIMEOUT_S,
            "the status to say a plan runs unapproved because it repairs RackAware",
            operator,
        )
        message = condition(get(kube_bed, namespace, "bp", "main"), "ApprovalValid")["message"]
        plan_id = message.split()[1]
        wait_for(
            lambda: pool_status(kube_bed, namespace).get("plan", {}).get("executedId") == plan_id,
            BALANCE_TIMEOUT_S,
            f"repair plan {plan_id} to be executed",
            operator,
        )

    assert message.startswith(f"plan {plan_id} auto-approved: it repairs RackAware (racks) (3 partition(s)")
    assert "kafkabalancer.io/approve" not in get(kube_bed, namespace, "bp", "main")["metadata"].get(
        "annotations", {}
    )
    auto = [e["message"] for e in events(kube_bed, namespace) if e["reason"] == "PlanAutoApproved"]
    assert auto == [f"P{message[1:]}."]  # the condition's message, as a sentence
    assert pool_status(kube_bed, namespace)["execution"]["phase"] == "Succeeded"
    assert rack_aware(kafka_bed, topic)
    after = partitions(kafka_bed, topic)
    # Only the repair moved: the rack-aware partitions kept their replicas.
    assert [after[p][0] for p in (3, 4, 5)] == assignment[3:]
    assert all(len(set(after[p][0]) - set(assignment[p])) == 1 for p in (0, 1, 2))
    assert_clean(kafka_bed, topic)


def test_a_soft_imbalance_waits_for_approval_with_the_repair_opt_in(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # 8 partitions, RF 2, all on brokers 1 and 2 (racks a and b): rack aware, but 3 and 4 are empty.
    assignment = [[1, 2] if p % 2 else [2, 1] for p in range(8)]
    topic = create_topic(kafka_bed, "e2e-soft", assignment)
    manual_pool(kafka_bed, kube_bed, namespace, topic)
    key = f"{namespace}/main"

    def passes() -> float:
        return metric_samples(operator).get(
            ("kafka_balancer_reconciles_total", (("pool", key), ("result", "ok"))), 0.0
        )

    def waiting() -> bool:
        # The third pass: the second is where a plan that runs unapproved would have started.
        pool_obj = get(kube_bed, namespace, "bp", "main")
        plan = pool_obj.get("status", {}).get("plan", {})
        approval = condition(pool_obj, "ApprovalValid")
        return (
            passes() >= 3
            and approval.get("reason") == "AwaitingApproval"
            and f"plan {plan.get('id')} waits" in approval.get("message", "")
        )

    wait_for(waiting, PLAN_TIMEOUT_S, "a plan that waits for approval after the goals settled", operator)

    status = pool_status(kube_bed, namespace)
    assert status["plan"]["movesTotal"] >= 4 and "executedId" not in status["plan"]
    assert "execution" not in status
    assert "PlanAutoApproved" not in {e["reason"] for e in events(kube_bed, namespace)}
    after = partitions(kafka_bed, topic)
    assert [after[p][0] for p in sorted(after)] == assignment
