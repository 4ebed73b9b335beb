"""End to end in Auto mode: balancing under traffic, scale-up warm-up, same-rack drain, a crashed operator.

Each scenario keeps a producer writing keyed messages throughout and reads them all back at the end
(per-key counts and sha256 equal): a plan that loses a message fails here, whatever else it did.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import (
    Cluster,
    Writer,
    assert_no_throttle_left,
    create_topic,
    ongoing_reassignments,
    partitions,
    throttles_left,
    under_replicated,
)
from tests.support.messages import consume_digest

from .conftest import Logged, OperatorProcess, operator_process, wait_for
from .objects import OWN_TOPIC_SPREAD, PLAN_TIMEOUT_S, apply, condition, events, get, goal, pool, skewed_topic

BALANCE_TIMEOUT_S = 300.0
# 12 partitions, RF 2, on brokers 1-4 (racks a, b, c, a): broker 4 holds 5 replicas, none beside
# broker 1, so all of them can move to broker 1, in its rack.
DRAIN_PAIRS = ((1, 2), (2, 3), (3, 4), (4, 2), (1, 3), (2, 4), (3, 1), (4, 3), (2, 1), (3, 2), (1, 3), (4, 2))
GOALS = (("replicas", {"type": "ReplicaDistribution", "rangePercent": 10}), ("racks", {"type": "RackAware"}))
# The same goals measured on the pool's own topic only, for pools on the shared bed: there a replica
# count over all topics also counts the other tests' topics and __consumer_offsets (RF 3 in racks a,
# b, c, a: brokers 2 and 3 hold twice what 1 and 4 do), which the pool may not move, and whether a
# plan can satisfy it depends on which tests ran before.
OWN_TOPIC_GOALS = (("replicas", {"type": OWN_TOPIC_SPREAD, "rangePercent": 10}), GOALS[1])


@contextmanager
def traffic(bed: KafkaBed, topic: str, messages: int = 3_000, size: int = 500) -> Iterator[Writer]:
    """Data before the run, then a producer writing until the block ends; every message is then read back."""
    writer = Writer(bed, topic)
    writer.write(messages, size)
    thread = threading.Thread(target=writer.write_until_stopped, daemon=True)
    thread.start()
    try:
        yield writer
    finally:
        writer.stop.set()
        thread.join(timeout=120)
    expected = writer.result()
    assert consume_digest(bed.bootstrap_servers, topic, writer.sent) == expected, "messages lost or altered"


def auto_pool(
    bed: KafkaBed,
    kube_bed: kube.KubeBed,
    namespace: str,
    topic: str,
    *,
    in_cluster: bool = False,
    goals: tuple[tuple[str, dict[str, Any]], ...] = GOALS,
    **spec: Any,
) -> None:
    """An Auto pool ``main`` of ``topic`` with ``goals``; ``in_cluster``: the operator runs in a pod
    and connects on the bed's listener for pods."""
    bootstrap = bed.pod_bootstrap_servers if in_cluster else bed.bootstrap_servers
    apply(
        kube_bed,
        namespace,
        pool("main", bootstrap, "Auto", topic, **spec),
        *(goal(name, "main", **g) for name, g in goals),
    )


def pool_status(kube_bed: kube.KubeBed, namespace: str) -> dict[str, Any]:
    status: dict[str, Any] = get(kube_bed, namespace, "bp", "main").get("status", {})
    return status


def balanced(kube_bed: kube.KubeBed, namespace: str) -> Callable[[], bool]:
    return lambda: condition(get(kube_bed, namespace, "bp", "main"), "Balanced").get("status") == "True"


def holds(kube_bed: kube.KubeBed, namespace: str, goal_name: str) -> bool:
    """The operator evaluated the BalancerGoal and it holds for the cluster as it is."""
    return condition(get(kube_bed, namespace, "bg", goal_name), "Satisfied").get("status") == "True"


def replica_counts(bed: KafkaBed, topic: str) -> dict[int, int]:
    counts = dict.fromkeys(bed.racks, 0)
    for replicas, _leader, _isr in partitions(bed, topic).values():
        for broker in replicas:
            counts[broker] = counts.get(broker, 0) + 1
    return counts


def metric_samples(operator: OperatorProcess) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The operator's Prometheus endpoint: (name, sorted labels) → value."""
    with urllib.request.urlopen(operator.metrics, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def assert_clean(bed: Cluster, topic: str) -> None:
    """What every run must leave: no throttle, no reassignment in flight, every ISR complete."""
    assert_no_throttle_left(bed, topic)
    assert ongoing_reassignments(bed, topic) == []
    assert under_replicated(bed) == []


def rack_aware(bed: KafkaBed, topic: str) -> bool:
    racks = bed.racks
    return all(
        len({racks[b] for b in replicas}) == len(replicas)
        for replicas, _, _ in partitions(bed, topic).values()
    )


def test_auto_mode_balances_a_skewed_topic_under_traffic_without_losing_a_message(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    # 8 partitions, RF 2, all on brokers 1 and 2: brokers 3 and 4 are empty.
    topic = create_topic(kafka_bed, "e2e-auto", [[1, 2] if p % 2 else [2, 1] for p in range(8)])

    with traffic(kafka_bed, topic):
        auto_pool(kafka_bed, kube_bed, namespace, topic, goals=OWN_TOPIC_GOALS)
        wait_for(balanced(kube_bed, namespace), BALANCE_TIMEOUT_S, "the pool to report Balanced", operator)

    # 16 replicas over 4 brokers, 4 each ±10 % in whole replicas: 3..5 each (brokers 3, 4 were empty).
    counts = replica_counts(kafka_bed, topic)
    assert sorted(counts) == [1, 2, 3, 4] and all(3 <= n <= 5 for n in counts.values()), counts
    assert rack_aware(kafka_bed, topic)
    status = pool_status(kube_bed, namespace)
    assert status["execution"]["phase"] == "Succeeded"
    for name, _ in OWN_TOPIC_GOALS:

        def goal_satisfied(name: str = name) -> bool:
            return condition(get(kube_bed, namespace, "bg", name), "Satisfied").get("status") == "True"

        satisfied = wait_for(
            goal_satisfied,
            60,
            f"goal {name} to report Satisfied",
            operator,
        )
        assert satisfied
    assert {"PlanReady", "ExecutionStarted", "ExecutionFinished"} <= {
        e["reason"] for e in events(kube_bed, namespace)
    }
    samples = metric_samples(operator)
    key = f"{namespace}/main"
    assert samples[("kafka_balancer_pool_balanced", (("pool", key),))] == 1.0
    assert samples[("kafka_balancer_goal_satisfied", (("goal", "replicas"), ("pool", key)))] == 1.0
    assert samples[("kafka_balancer_execution_bytes_moved", (("pool", key),))] > 0
    assert_clean(kafka_bed, topic)


@dataclass
class WarmUpSeen:
    """What a new broker's warm-up looked like, polled from the pool's status and from Kafka."""

    most: dict[int, int] = field(default_factory=dict)  # step → most replicas the broker held in it
    first_step: set[int] = field(default_factory=set)  # partitions it held during its first step
    first_move_s: float | None = None  # from the start of the watch to its first replica


def watch_warm_up(
    kube_bed: kube.KubeBed, namespace: str, kafka: Cluster, topic: str, broker: int, log: Logged
) -> WarmUpSeen:
    """Poll until ``broker`` is Active and pool ``main`` Balanced again (at most BALANCE_TIMEOUT_S),
    noting what the broker held of ``topic`` at each warm-up step its status showed."""
    started = time.monotonic()
    seen = WarmUpSeen()
    while True:
        brokers: list[dict[str, Any]] = pool_status(kube_bed, namespace).get("brokers", [])
        state = next((b for b in brokers if b["id"] == broker), {})
        held = {p for p, (replicas, _, _) in partitions(kafka, topic).items() if broker in replicas}
        if held and seen.first_move_s is None:
            seen.first_move_s = time.monotonic() - started
        if state.get("state") == "Warming":
            step = int(state["warmUpStep"])
            seen.most[step] = max(seen.most.get(step, 0), len(held))
            if step == 1:
                seen.first_step |= held
        elif state.get("state") == "Active" and balanced(kube_bed, namespace)():
            return seen
        elapsed = time.monotonic() - started
        assert elapsed < BALANCE_TIMEOUT_S, f"warm-up not finished: steps seen {seen.most}\n{log.tail()}"
        time.sleep(1.0)


def warm_up_scenario(
    kube_bed: kube.KubeBed, bed: KafkaBed, namespace: str, log: Logged, in_cluster: bool
) -> None:
    """A 3-broker pool, Balanced, gets a 4th broker in rack a: it warms up step by step (each step
    at most its share of a full broker), its first replicas from its own rack, under traffic."""
    # 12 partitions, RF 2, 8 replicas on each of brokers 1 (a), 2 (b), 3 (c).
    before = [[p % 3 + 1, (p + 1) % 3 + 1] for p in range(12)]
    topic = create_topic(bed, "e2e-scale-up", before)
    steps = 3

    with traffic(bed, topic):
        auto_pool(
            bed, kube_bed, namespace, topic, in_cluster=in_cluster, warmUp={"duration": "90s", "steps": steps}
        )
        wait_for(balanced(kube_bed, namespace), BALANCE_TIMEOUT_S, "the 3-broker pool to be Balanced", log)

        plan = get(kube_bed, namespace, "configmap", "main-plan")["data"]["plan.json"]
        now = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        assert now == dict(enumerate(before)), (
            f"a balanced cluster was moved: {plan}\n{pool_status(kube_bed, namespace)}"
        )

        new = bed.add_broker("a")
        registered = time.monotonic()
        warm_up = watch_warm_up(kube_bed, namespace, bed, topic, new, log)
        finished = time.monotonic() - registered
        seen, first_step_replicas = warm_up.most, warm_up.first_step

    full = 24 / 4  # replicas per broker once the new one is fully warm
    assert sorted(seen) == list(range(1, steps + 1)), f"every warm-up step shows in status: {seen}"
    for step, most in seen.items():
        # Never more than its share of a full broker (one replica of rounding), so never full at once.
        assert most <= math.ceil(full * step / steps) + 1, f"step {step}: {most} replicas ({seen})"
    assert seen[1] < full
    # Fully warm: inside the ReplicaDistribution band of a full broker (±10 %, whole replicas).
    assert math.floor(full * 0.9) <= replica_counts(bed, topic)[new] <= math.ceil(full * 1.1)
    # Its first replicas came from broker 1, the other broker of rack a.
    assert first_step_replicas and all(1 in before[p] for p in first_step_replicas)
    assert rack_aware(bed, topic)
    assert "WarmUpStep" in {e["reason"] for e in events(kube_bed, namespace)}
    assert_clean(bed, topic)
    first_move = warm_up.first_move_s
    print(f"\nscale-up: registration → first move {first_move:.1f}s, → balanced {finished:.1f}s; {seen}")


def test_a_new_broker_is_warmed_up_step_by_step_from_its_own_rack(
    kube_bed: kube.KubeBed,
    kafka_bed_factory: Callable[..., KafkaBed],
    operator: OperatorProcess,
    namespace: str,
) -> None:
    bed = kafka_bed_factory(brokers=3, racks=3)
    bed.start()
    warm_up_scenario(kube_bed, bed, namespace, operator, in_cluster=False)


def drain_scenario(
    kube_bed: kube.KubeBed, bed: KafkaBed, namespace: str, log: Logged, in_cluster: bool
) -> None:
    """Broker 4 (rack a) of a Balanced 4-broker pool is drained under traffic: every replica it held
    lands on broker 1, the other broker of rack a (an excluded topic's too), and it can be stopped."""
    before = [list(p) for p in DRAIN_PAIRS]
    topic = create_topic(bed, "e2e-drain", before)
    # Outside the pool's topic, so excluded (objects.pool): never balanced, but a drain moves it too.
    excluded = create_topic(bed, "e2e-drain-excluded", [[4, 2], [3, 4]])

    with traffic(bed, topic):
        auto_pool(bed, kube_bed, namespace, topic, in_cluster=in_cluster)
        wait_for(balanced(kube_bed, namespace), BALANCE_TIMEOUT_S, "the pool to be Balanced", log)
        start = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        patched = kube_bed.kubectl(
            "patch", "bp", "main", "-n", namespace, "--type", "merge", "-p", '{"spec": {"drain": [4]}}'
        )
        assert patched.returncode == 0, patched.stderr
        requested = time.monotonic()

        def drained() -> bool:
            brokers = pool_status(kube_bed, namespace).get("brokers", [])
            return any(b["id"] == 4 and b["state"] == "Drained" for b in brokers)

        wait_for(drained, BALANCE_TIMEOUT_S, "broker 4 to be Drained", log)
        took = time.monotonic() - requested
        after = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        bed.stop_broker(4)

    assert all(4 not in replicas for replicas in after.values())
    assert [set(replicas) for replicas, _, _ in partitions(bed, excluded).values()] == [{1, 2}, {1, 3}]
    # Every replica broker 4 held landed on broker 1, the other broker of rack a.
    for p, replicas in start.items():
        if 4 in replicas:
            assert 1 in after[p], f"partition {p}: {replicas} -> {after[p]}"
    assert rack_aware(bed, topic)
    assert under_replicated(bed) == []
    assert "DrainDone" in {e["reason"] for e in events(kube_bed, namespace)}
    assert_clean(bed, topic)

    def removed() -> bool:
        brokers = pool_status(kube_bed, namespace).get("brokers", [])
        return any(b["id"] == 4 and b["state"] == "Removed" for b in brokers)

    wait_for(removed, 60, "the stopped broker to be reported Removed", log)
    assert condition(get(kube_bed, namespace, "bp", "main"), "DrainBlocked")["status"] == "False"
    print(f"\ndrain: request → Drained {took:.1f}s")


def test_a_drained_broker_empties_into_its_own_rack_and_can_be_stopped(
    kube_bed: kube.KubeBed,
    kafka_bed_factory: Callable[..., KafkaBed],
    operator: OperatorProcess,
    namespace: str,
) -> None:
    bed = kafka_bed_factory(brokers=4, racks=3)  # racks a, b, c, a
    bed.start()
    drain_scenario(kube_bed, bed, namespace, operator, in_cluster=False)


def test_a_demoted_broker_hands_its_leadership_over_without_moving_a_replica(
    kube_bed: kube.KubeBed,
    kafka_bed_factory: Callable[..., KafkaBed],
    operator: OperatorProcess,
    namespace: str,
) -> None:
    bed = kafka_bed_factory(brokers=4, racks=3)  # racks a, b, c, a
    bed.start()
    pairs = [(3, 1), (3, 2), (3, 4), (1, 3), (2, 3), (4, 3), (1, 2), (2, 4), (4, 1), (3, 2), (1, 4), (2, 1)]
    topic = create_topic(bed, "e2e-demote", [list(p) for p in pairs])

    with traffic(bed, topic):
        auto_pool(bed, kube_bed, namespace, topic)
        # Balanced by both goals, each evaluated and holding: a pass that ran before the operator's
        # index had the racks goal (applied with the pool) said Balanced by the replicas goal alone,
        # and the next pass moved replicas into their racks while the demote ran (seen in CI).
        wait_for(
            lambda: balanced(kube_bed, namespace)() and all(holds(kube_bed, namespace, g) for g, _ in GOALS),
            BALANCE_TIMEOUT_S,
            "the pool to be Balanced with every goal holding",
            operator,
        )
        start = {p: replicas for p, (replicas, _, _) in partitions(bed, topic).items()}
        led_before = sum(leader == 3 for _, leader, _ in partitions(bed, topic).values())
        assert led_before > 0
        patched = kube_bed.kubectl(
            "patch", "bp", "main", "-n", namespace, "--type", "merge", "-p", '{"spec": {"demote": [3]}}'
        )
        assert patched.returncode == 0, patched.stderr
        requested = time.monotonic()

        def demoted() -> bool:
            return condition(get(kube_bed, namespace, "bp", "main"), "Demoted").get("status") == "True"

        wait_for(demoted, BALANCE_TIMEOUT_S, "broker 3 to lead no partition", operator)
        took = time.monotonic() - requested
        after = partitions(bed, topic)

    assert [leader for _, leader, _ in after.values()].count(3) == 0
    # A reordering only: every partition keeps its replica set, so no byte was copied.
    assert {p: set(replicas) for p, (replicas, _, _) in after.items()} == {
        p: set(replicas) for p, replicas in start.items()
    }
    # Kafka's preferred leader is no longer broker 3 either: a restart does not hand leadership back.
    assert all(replicas[0] != 3 for replicas, _, _ in after.values())
    assert "DemotionDone" in {e["reason"] for e in events(kube_bed, namespace)}
    assert_clean(bed, topic)
    print(f"\ndemote: {led_before} leaderships off broker 3, request → Demoted {took:.1f}s")


SLOW = {"throttleBytesPerSecond": "512Ki", "maxMovesPerBroker": 1, "maxMoves": 2}


def half_done(
    kube_bed: kube.KubeBed, bed: KafkaBed, namespace: str, topic: str
) -> Callable[[], dict[str, Any] | None]:
    """The pool's plan status once some of its moves and bytes are done and others are copying."""

    def check() -> dict[str, Any] | None:
        status = pool_status(kube_bed, namespace)
        plan: dict[str, Any] = status.get("plan", {})
        moved = status.get("execution", {}).get("bytesDone", 0) > 0
        copying = ongoing_reassignments(bed, topic)
        return plan if copying and moved and 0 < plan.get("movesDone", 0) < plan["movesTotal"] else None

    return check


def test_deleting_a_pool_mid_execution_cancels_its_moves_and_removes_its_throttles(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    before = [[1, 2] if p % 2 else [2, 1] for p in range(8)]
    topic = create_topic(kafka_bed, "e2e-delete", before)

    with traffic(kafka_bed, topic, messages=16_000, size=1_000):
        auto_pool(kafka_bed, kube_bed, namespace, topic, execution=SLOW)
        wait_for(
            half_done(kube_bed, kafka_bed, namespace, topic), BALANCE_TIMEOUT_S, "moves in flight", operator
        )
        plan = json.loads(get(kube_bed, namespace, "configmap", "main-plan")["data"]["plan.json"])
        assert throttles_left(kafka_bed, topic), "throttled while copying"
        deleted = kube_bed.kubectl("delete", "bp", "main", "-n", namespace, "--timeout=180s")
        assert deleted.returncode == 0, f"{deleted.stderr}\n{operator.tail()}"

    planned = {e["partition"]: e["replicas"] for e in plan["partitions"]}
    for p, (replicas, _, _) in partitions(kafka_bed, topic).items():
        assert replicas in (before[p], planned.get(p, before[p])), f"partition {p}: {replicas}"
    assert_clean(kafka_bed, topic)
    assert "cancelled unfinished plan" in operator.log.read_text(errors="replace")


def test_an_operator_killed_mid_execution_resumes_the_same_plan(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-crash", [[1, 2] if p % 2 else [2, 1] for p in range(8)])

    # ≈ 2 MB a partition: each move takes seconds at the throttle.
    with traffic(kafka_bed, topic, messages=16_000, size=1_000):
        auto_pool(kafka_bed, kube_bed, namespace, topic, execution=SLOW)

        plan = wait_for(
            half_done(kube_bed, kafka_bed, namespace, topic),
            BALANCE_TIMEOUT_S,
            "a half-done execution",
            operator,
        )
        assert throttles_left(kafka_bed, topic), "throttled while copying"
        running = pool_status(kube_bed, namespace)["execution"]
        operator.kill()
        planned = get(kube_bed, namespace, "configmap", "main-plan")["data"]
        operator.start()
        wait_for(
            lambda: pool_status(kube_bed, namespace).get("plan", {}).get("executedId") == plan["id"],
            BALANCE_TIMEOUT_S,
            f"plan {plan['id']} to finish after the restart",
            operator,
        )

    assert planned["plan.id"] == plan["id"]
    document = json.loads(planned["plan.json"])
    now = partitions(kafka_bed, topic)
    for entry in document["partitions"]:
        assert now[entry["partition"]][0] == entry["replicas"]
    state = json.loads(get(kube_bed, namespace, "configmap", "main-execution")["data"]["state.json"])
    moved = [(m["topic"], m["partition"]) for m in state["moves"]]
    assert sorted(moved) == sorted((e["topic"], e["partition"]) for e in document["partitions"])
    assert {m["status"] for m in state["moves"]} == {"done"}
    reasons = [e["reason"] for e in events(kube_bed, namespace)]
    assert "ExecutionFailed" not in reasons and "ExecutionFinished" in reasons
    assert_clean(kafka_bed, topic)

    # Progress in the pool's status: mid-run some bytes and moves done, the rest to go, an ETA;
    # at the end every byte of the plan, nothing in flight or pending, no ETA left behind.
    assert running["phase"] == "Running" and 0 < running["bytesDone"] < running["bytesTotal"], running
    assert running["movesDone"] + running["movesInFlight"] + running["movesPending"] <= len(moved), running
    assert running["etaSeconds"] > 0 and "ETA" in running["message"], running
    finished = pool_status(kube_bed, namespace)["execution"]
    assert finished["phase"] == "Succeeded", finished
    assert finished["bytesDone"] == finished["bytesTotal"] == state["bytesTotal"] > 0, finished
    assert (finished["movesInFlight"], finished["movesPending"]) == (0, 0), finished
    assert "etaSeconds" not in finished, finished


def test_a_destination_broker_dying_mid_execution_fails_its_moves_and_its_throttle_goes_once_it_is_back(
    kube_bed: kube.KubeBed,
    kafka_bed_factory: Callable[..., KafkaBed],
    operator: OperatorProcess,
    namespace: str,
) -> None:
    bed = kafka_bed_factory(brokers=4, racks=3)  # its own: a broker of it is stopped mid-test
    bed.start()
    added = bed.add_broker(rack="c")
    topic = create_topic(bed, "e2e-dead", [[1, 2] if p % 2 else [2, 1] for p in range(8)])

    def copying_to_added() -> bool:
        return any(
            added in replicas and added not in isr for replicas, _, isr in partitions(bed, topic).values()
        )

    def failed_for_the_dead_broker() -> dict[str, Any] | None:
        said = f"destination broker {added} left the cluster"
        found = [
            e
            for e in events(kube_bed, namespace)
            if e["reason"] == "ExecutionFailed" and said in e["message"]
        ]
        return found[0] if found else None

    with traffic(bed, topic, messages=16_000, size=1_000):
        auto_pool(bed, kube_bed, namespace, topic, execution={**SLOW, "deadBrokerTimeoutSeconds": 5})
        wait_for(copying_to_added, BALANCE_TIMEOUT_S, f"a move copying to broker {added}", operator)
        assert throttles_left(bed, topic), "throttled while copying"
        bed.stop_broker(added)
        failed = wait_for(
            failed_for_the_dead_broker,
            BALANCE_TIMEOUT_S,
            "the execution to fail on the dead broker",
            operator,
        )
        assert "reassignment cancelled" in failed["message"], failed
        # Kafka keeps a dead broker's config: the rate stays on record until the broker is back.
        state = json.loads(get(kube_bed, namespace, "configmap", "main-execution")["data"]["state.json"])
        assert str(added) in state["throttles"]["brokers"], state["throttles"]

        bed.restart_broker(added)

        def settled() -> bool:  # level-based: Balanced, nothing moving, none of our throttles left
            idle = balanced(kube_bed, namespace)() and not ongoing_reassignments(bed, topic)
            return idle and not throttles_left(bed, topic)

        wait_for(settled, BALANCE_TIMEOUT_S, "a balanced pool and no throttle left", operator)
    assert_clean(bed, topic)  # on the returned broker too: it is running again
    assert rack_aware(bed, topic)


def test_two_operator_replicas_never_act_at_once(
    kube_bed: kube.KubeBed,
    kafka_bed: KafkaBed,
    operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    first = operator
    first_log_at = first.log.stat().st_size
    second = operator_process(kube_bed, tmp_path / "second")
    second.start()

    def first_says(text: str) -> bool:
        return text in first.log.read_text(errors="replace")[first_log_at:]

    try:
        # The newer replica outranks the running one, which stands by.
        wait_for(lambda: first_says("Pausing operations"), 60, "the first replica to stand by", first)
        skewed_topic(kafka_bed, f"{namespace}-one")
        apply(kube_bed, namespace, pool("one", kafka_bed.bootstrap_servers, "DryRun", f"{namespace}-one"))
        wait_for(
            lambda: f"pool {namespace}/one reconciled" in second.log.read_text(errors="replace"),
            PLAN_TIMEOUT_S,
            "the active (second) replica to reconcile pool one",
            second,
        )
        assert not first_says(f"pool {namespace}/one "), "the standby replica acted"
    finally:
        second.stop()

    # The active replica left cleanly: the standby takes over and serves new pools.
    wait_for(lambda: first_says("Resuming operations"), 90, "the first replica to resume", first)
    skewed_topic(kafka_bed, f"{namespace}-two")
    apply(kube_bed, namespace, pool("two", kafka_bed.bootstrap_servers, "DryRun", f"{namespace}-two"))
    wait_for(
        lambda: first_says(f"pool {namespace}/two reconciled"), PLAN_TIMEOUT_S, "pool two reconciled", first
    )
