"""End to end with spec.selfHealing.enabled in mode Manual: a broker of the Kafka bed is stopped under
traffic, the pool marks it failed after brokerFailureSeconds and re-homes its replicas onto the live
broker of its rack with no approval; every message is read back, nothing is left under-replicated or
throttled, and the broker, started again, is a new one that warms up. Prints the time from the
failure timeout to full replication. A broker back before the timeout cancels the healing."""

from __future__ import annotations

import calendar
import time
from typing import Any

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import create_topic, delete_topic, extra_broker, partitions, under_replicated

from .conftest import OperatorProcess, wait_for
from .objects import PLAN_TIMEOUT_S, apply, condition, events, get, goal, pool
from .test_lifecycle import BALANCE_TIMEOUT_S, assert_clean, pool_status, rack_aware, traffic
from .test_repair import GOALS

FAILURE_S = 20
HEALING = {"selfHealing": {"enabled": True, "brokerFailureSeconds": FAILURE_S}}


def recorded(kube_bed: kube.KubeBed, namespace: str, broker_id: int) -> dict[str, Any]:
    brokers = pool_status(kube_bed, namespace).get("brokers", [])
    found: dict[str, Any] = next((b for b in brokers if b["id"] == broker_id), {})
    return found


def recorded_as(kube_bed: kube.KubeBed, namespace: str, broker_id: int, state: str) -> Any:
    """A check for ``wait_for``: the broker's status entry once the pool records it in ``state``."""

    def check() -> dict[str, Any] | None:
        found = recorded(kube_bed, namespace, broker_id)
        return found if found.get("state") == state else None

    return check


def test_a_stopped_broker_is_failed_and_its_replicas_re_homed_in_its_rack_under_traffic(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    racks = kafka_bed.racks
    with extra_broker(kafka_bed, "a") as dead:
        live_a = sorted(b for b, rack in racks.items() if rack == "a")
        b, c = (next(x for x, rack in racks.items() if rack == r) for r in ("b", "c"))
        # RF 3, one replica per rack: partitions 0..3 have their rack-a replica on the broker that dies.
        assignment = [
            [dead, b, c],
            [b, dead, c],
            [c, b, dead],
            [dead, c, b],
            [live_a[0], b, c],
            [live_a[-1], c, b],
        ]
        topic = create_topic(kafka_bed, "e2e-heal", assignment)

        with traffic(kafka_bed, topic):
            apply(
                kube_bed,
                namespace,
                pool("main", kafka_bed.bootstrap_servers, "Manual", topic, **HEALING),
                *(goal(name, "main", **g) for name, g in GOALS),
            )
            wait_for(
                lambda: recorded(kube_bed, namespace, dead).get("state") == "Active",
                PLAN_TIMEOUT_S,
                f"the pool to record broker {dead}",
                operator,
            )
            kafka_bed.stop_broker(dead)
            stopped = time.time()
            failed = wait_for(
                recorded_as(kube_bed, namespace, dead, "Failed"),
                PLAN_TIMEOUT_S,
                f"broker {dead} to be Failed",
                operator,
            )
            missing_since = calendar.timegm(time.strptime(failed["missingSince"], "%Y-%m-%dT%H:%M:%SZ"))
            timed_out = missing_since + FAILURE_S

            def fully_replicated() -> bool:
                now = partitions(kafka_bed, topic)
                return all(dead not in replicas and isr == set(replicas) for replicas, _, isr in now.values())

            wait_for(
                fully_replicated, BALANCE_TIMEOUT_S, f"broker {dead}'s partitions replicated again", operator
            )
            replicated = time.time()
            wait_for(
                lambda: (
                    not recorded(kube_bed, namespace, dead)
                    and pool_status(kube_bed, namespace).get("execution", {}).get("phase") == "Succeeded"
                ),
                BALANCE_TIMEOUT_S,
                f"broker {dead} healed and forgotten, the healing plan finished",
                operator,
            )
            after = {p: replicas for p, (replicas, _, _) in partitions(kafka_bed, topic).items()}
        # (Every message was read back while the broker was down: the consumer group's offsets topic,
        # if this created it, has no partition on the broker stopped again at the end.)

        # Back after it was healed and forgotten: a new broker, which warms up from its return (mode
        # Manual moves nothing onto it unapproved).
        kafka_bed.restart_broker(dead)
        warming = wait_for(
            recorded_as(kube_bed, namespace, dead, "Warming"),
            PLAN_TIMEOUT_S,
            f"broker {dead}, back, to warm up as a new broker",
            operator,
        )
        said = {e["reason"]: e["message"] for e in events(kube_bed, namespace)}

    assert calendar.timegm(time.strptime(warming["firstSeen"], "%Y-%m-%dT%H:%M:%SZ")) > replicated - 1
    for p, before in enumerate(assignment):
        if dead in before:
            # Its replica went to a live broker of rack a; the two others stayed.
            (arrived,) = set(after[p]) - set(before)
            assert arrived in live_a and set(after[p]) - {arrived} == set(before) - {dead}, (before, after[p])
        else:
            assert after[p] == before  # only the healing moved: the soft goal's plan waits for approval
    assert rack_aware(kafka_bed, topic)
    assert {"BrokerMissing", "BrokerFailed", "PlanAutoApproved", "BrokerHealed"} <= set(said), said
    assert "kafkabalancer.io/approve" not in get(kube_bed, namespace, "bp", "main")["metadata"].get(
        "annotations", {}
    )
    assert condition(get(kube_bed, namespace, "bp", "main"), "BrokerFailure")["reason"] == "AllBrokersPresent"
    assert_clean(kafka_bed, topic)
    print(
        f"\nself-healing: broker {dead} stopped → missing since +{missing_since - stopped:.1f}s, failure "
        f"timeout ({FAILURE_S}s) → fully replicated {replicated - timed_out:.1f}s "
        f"(stop → fully replicated {replicated - stopped:.1f}s)"
    )


def test_a_broker_back_before_the_failure_timeout_is_not_healed(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # No producer or consumer here: a consumer group's offsets topic created now could land on the
    # broker that is stopped at the end (the test above reads every message back).
    racks = kafka_bed.racks
    with extra_broker(kafka_bed, "a") as restarted:
        b, c = (next(x for x, rack in racks.items() if rack == r) for r in ("b", "c"))
        assignment = [[restarted, b, c], [b, restarted, c], [c, b, restarted]]
        topic = create_topic(kafka_bed, "e2e-back", assignment)
        apply(
            kube_bed,
            namespace,
            pool("main", kafka_bed.bootstrap_servers, "Manual", topic, selfHealing={"enabled": True}),
            *(goal(name, "main", **g) for name, g in GOALS),
        )
        wait_for(
            lambda: recorded(kube_bed, namespace, restarted).get("state") == "Active",
            PLAN_TIMEOUT_S,
            f"the pool to record broker {restarted}",
            operator,
        )
        kafka_bed.stop_broker(restarted)
        wait_for(
            lambda: recorded(kube_bed, namespace, restarted).get("state") == "Missing",
            PLAN_TIMEOUT_S,
            f"broker {restarted} to be Missing",
            operator,
        )
        kafka_bed.restart_broker(restarted)
        wait_for(
            lambda: (
                recorded(kube_bed, namespace, restarted) == {"id": restarted, "rack": "a", "state": "Active"}
            ),
            PLAN_TIMEOUT_S,
            f"broker {restarted} to be Active again, as it was",
            operator,
        )
        wait_for(
            lambda: not under_replicated(kafka_bed), PLAN_TIMEOUT_S, "its replicas in sync again", operator
        )
        now = {p: replicas for p, (replicas, _, _) in partitions(kafka_bed, topic).items()}
        said = {e["reason"]: e["message"] for e in events(kube_bed, namespace)}
        delete_topic(kafka_bed, topic)  # the bed's rule: nothing may stay on a broker stopped at the end

    assert now == dict(enumerate(assignment))
    assert said["BrokerReturned"] == f"Broker {restarted} is back before it was failed: nothing is healed."
    assert "BrokerFailed" not in said and "PlanAutoApproved" not in said
