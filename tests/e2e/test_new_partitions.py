"""End to end in mode Auto: partitions created on a balanced pool (a topic Kafka places itself, a topic
whose leaders all sit on one broker, partitions added to a topic with every replica on two brokers)
are noticed at the next pass and placed by its plan, leadership alone where that is enough and by
moving only the new partitions otherwise, while a producer writes; nothing is lost or left behind."""

from __future__ import annotations

import re
import statistics
import time
import uuid
from typing import Any

from confluent_kafka.cimpl import NewPartitions, NewTopic

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import Writer, admin_of, create_topic, delete_topic, partitions

from .conftest import OperatorProcess, wait_for
from .objects import apply, condition, events, get, goal, pool
from .test_lifecycle import BALANCE_TIMEOUT_S, assert_clean, metric_samples, pool_status, rack_aware, traffic

INTERVAL_S = 10
# A pass reads Kafka and plans before it writes its event; on the shared 2-core machine that and the
# test's own polling take a few seconds.
PASS_SLACK_S = 8.0
# Placing them (a leadership election, or small replica moves at the pool's 10 MiB/s throttle).
EXECUTION_S = 60.0
GOALS = (
    ("racks", {"type": "RackAware"}),
    ("spread", {"type": "TopicReplicaDistribution", "rangePercent": 10}),
    ("leaders", {"type": "LeaderDistribution", "rangePercent": 20}),
)
# The goals that measure this test's topics alone. The tier's Kafka bed is shared: other tests'
# topics, which the pool may not move, can keep counts over every topic (leaders here; replicas
# sent the base topic's replicas all onto brokers 3 and 4 in CI and stayed out of band) unmet.
OWN_TOPIC_GOALS = ("racks", "spread")
# Balanced: 4 replicas and 2 leaderships per broker, rack aware (brokers 1 and 4 share rack a).
BASE = [[2, 1], [1, 3], [3, 1], [4, 2], [1, 2], [2, 4], [3, 4], [4, 3]]
# Rack aware and 128 replicas per broker, but broker 1 leads all 128 partitions it holds (brokers 2
# and 3 lead 32 each, broker 4 64). LeaderDistribution counts every topic of the shared bed: with 16
# such partitions (a CI run, after the lifecycle tests) the bed's other leaders kept broker 1 within
# its band, so the pool planned nothing for them and the test failed. 128 more leaders on broker 1
# against 64 more on average break the ±20 % band from anywhere inside it for a bed under about 500
# other partitions (the tier's bed holds about 230 at its end).
LEADERS_ON_1 = [[1, 2], [1, 3]] * 64 + [[2, 4], [4, 2], [3, 4], [4, 3]] * 32
# Added to BASE: every replica on brokers 1 and 2 (16 more each), which breaks the topic's spread.
ADDED = [[1, 2], [2, 1]] * 8
# A record's bytes on disk beyond its 300-byte value (key, headers, batch overhead): generous.
RECORD_BYTES = 400


def new_partitions_events(kube_bed: kube.KubeBed, namespace: str) -> list[str]:
    return [e["message"] for e in events(kube_bed, namespace) if e["reason"] == "NewPartitions"]


def plan_named(message: str) -> str:
    """The plan id a NewPartitions event names ("... plan <id> places them", "plan <id> moves none")."""
    found = re.search(r"plan ([0-9a-f]{10}) (?:places|moves)", message)
    assert found is not None, message
    return found.group(1)


def placed(kube_bed: kube.KubeBed, namespace: str, plan: str, message: str) -> bool:
    """The plan that places them has been executed (or moves none of them and nothing else)."""
    if "moves none of them" in message and "older partitions" not in message:
        return True
    return bool(pool_status(kube_bed, namespace).get("plan", {}).get("executedId") == plan)


def place(
    kube_bed: kube.KubeBed,
    namespace: str,
    operator: OperatorProcess,
    create: Any,
    what: str,
) -> tuple[str, float, float]:
    """Run ``create`` and wait for the NewPartitions event naming ``what`` and for its plan to be
    executed: (the event's message, seconds to the event, seconds to placed). ``what`` names the
    partitions of this step only (kubectl lists events in no particular order)."""
    created = time.monotonic()
    create()

    def told() -> str | None:
        found = [m for m in new_partitions_events(kube_bed, namespace) if what in m]
        return found[0] if found else None

    message: str = wait_for(told, INTERVAL_S + PASS_SLACK_S, f"a NewPartitions event naming {what}", operator)
    planned_s = time.monotonic() - created
    plan = plan_named(message)
    wait_for(
        lambda: placed(kube_bed, namespace, plan, message),
        EXECUTION_S,
        f"plan {plan} placing {what} to be executed",
        operator,
    )
    placed_s = time.monotonic() - created
    print(f"{what}: planned {planned_s:.1f} s, placed {placed_s:.1f} s after creation: {message}")
    return message, planned_s, placed_s


def replicas_of(kafka_bed: KafkaBed, topics: list[str]) -> dict[tuple[str, int], list[int]]:
    return {(t, p): replicas for t in topics for p, (replicas, _, _) in partitions(kafka_bed, t).items()}


def older_changed(kafka_bed: KafkaBed, before: dict[tuple[str, int], list[int]]) -> tuple[int, int]:
    """Of the partitions in ``before``: how many now have other replicas, and how many the same
    replicas in another order (a leadership moved alone)."""
    now = replicas_of(kafka_bed, sorted({t for t, _ in before}))
    moved = sum(set(now[tp]) != set(replicas) for tp, replicas in before.items())
    reordered = sum(set(now[tp]) == set(replicas) and now[tp] != replicas for tp, replicas in before.items())
    return moved, reordered


def older_told(message: str) -> tuple[int, int]:
    """What a NewPartitions event says its plan also does to older partitions: replicas moved, and
    partitions whose leadership alone moves (a plan that fixes a band evens the leaders over every
    movable partition)."""
    moves = re.search(r"(\d+) replica\(s\) of older partitions", message)
    alone = re.search(r"the leadership alone of (\d+) older partition\(s\)", message)
    return (int(moves.group(1)) if moves else 0, int(alone.group(1)) if alone else 0)


def settled(kube_bed: kube.KubeBed, namespace: str) -> bool:
    """The own-topic goals hold and the pool's newest plan changes no partition, not even a leader:
    LeaderDistribution, which counts other tests' leaders too, is as close as the pool can bring it."""
    if not all(
        condition(get(kube_bed, namespace, "bg", name), "Satisfied").get("status") == "True"
        for name in OWN_TOPIC_GOALS
    ):
        return False
    plan = pool_status(kube_bed, namespace).get("plan", {})
    return bool(plan.get("partitions") == 0)


def test_new_partitions_are_placed_at_the_next_pass_leadership_first_moving_only_them(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    prefix = f"e2e-newp-{uuid.uuid4().hex[:6]}"
    base = create_topic(kafka_bed, prefix, BASE)
    admin = admin_of(kafka_bed)
    timings: list[float] = []
    with traffic(kafka_bed, base) as writer:
        # The pool plans only this test's topics (the bed is shared): every topic named prefix-*.
        apply(
            kube_bed,
            namespace,
            pool("main", kafka_bed.bootstrap_servers, "Auto", excludedTopics=[f"(?!{prefix}-).*"]),
            *(goal(name, "main", **g) for name, g in GOALS),
        )
        wait_for(lambda: settled(kube_bed, namespace), BALANCE_TIMEOUT_S, "a balanced pool", operator)

        # Kafka's own placement (rack aware, round robin): the goals may already hold with it.
        own = f"{prefix}-own"
        message, _, seconds = place(
            kube_bed,
            namespace,
            operator,
            lambda: admin.create_topics([NewTopic(own, 8, 2)])[own].result(timeout=60),
            f"of new topic {own}",
        )
        timings.append(seconds)
        Writer(kafka_bed, own).write(1_000, 500)  # data: moving these later would cost bytes

        # Leaders skewed onto broker 1: leadership alone fixes it, nothing is copied.
        older = replicas_of(kafka_bed, [base, own])
        skewed: list[str] = []
        message, _, seconds = place(
            kube_bed,
            namespace,
            operator,
            lambda: skewed.append(create_topic(kafka_bed, f"{prefix}-lead", LEADERS_ON_1)),
            f"of new topic {prefix}-lead-",
        )
        timings.append(seconds)
        Writer(kafka_bed, skewed[0]).write(1_000, 500)
        assert ", 0 by moving 0 replica(s)" in message, message
        # No older replica moves; an older leadership moved alone is told, and only then.
        assert older_told(message)[0] == 0, message
        assert older_changed(kafka_bed, older) == older_told(message), message
        status = pool_status(kube_bed, namespace)
        assert status["plan"]["movesTotal"] == 0 and status["plan"]["bytesToMove"] == 0, status["plan"]
        leaders = [leader for _, leader, _ in partitions(kafka_bed, skewed[0]).values()]
        assert leaders.count(1) < 128, leaders

        # Partitions added to the base topic, every replica on brokers 1 and 2: replica moves, of
        # the new partitions only.
        sent_before = writer.sent
        older = replicas_of(kafka_bed, [base, own, skewed[0]])
        message, _, seconds = place(
            kube_bed,
            namespace,
            operator,
            lambda: admin.create_partitions([NewPartitions(base, 24, ADDED)])[base].result(timeout=60),
            f"16 added to topic {base} (8 → 24)",
        )
        timings.append(seconds)
        assert "by moving" in message, message
        status = pool_status(kube_bed, namespace)
        moved = status["execution"].get("bytesDone", 0)
        written = (writer.sent - sent_before) * RECORD_BYTES
        print(f"added partitions: {status['plan']['movesTotal']} replica move(s), {moved} bytes copied")
        # Each moved replica copies at most its partition, and the new partitions hold at most what
        # was written since they were added (RF 2: at most twice).
        assert moved <= 2 * written, (moved, written)
        # No older replica moves: an older leadership moved alone (the plan fixes the topic's band,
        # so it evens the leaders too: CI once saw base partition 1 go from [1, 3] to [3, 1]) is
        # told, and only then.
        assert older_told(message)[0] == 0, message
        assert older_changed(kafka_bed, older) == older_told(message), message

        wait_for(lambda: settled(kube_bed, namespace), BALANCE_TIMEOUT_S, "the pool settled", operator)

    print(f"creation → placed: {[round(t, 1) for t in timings]} s, median {statistics.median(timings):.1f} s")
    assert all(t <= INTERVAL_S + PASS_SLACK_S + EXECUTION_S for t in timings), timings
    for topic in (base, own, skewed[0]):
        assert rack_aware(kafka_bed, topic), topic
        assert_clean(kafka_bed, topic)
    key = f"{namespace}/main"
    assert metric_samples(operator)[("kafka_balancer_new_partitions_total", (("pool", key),))] == 280.0
    # 288 partitions spread over the brokers would widen every later test's count bands.
    for topic in (base, own, skewed[0]):
        delete_topic(kafka_bed, topic)
