"""One executor at a time, whatever happens to the operator or the apiserver; halts that mean it.

Real operator processes (``kafka-balancer run``), the real apiserver and the real Kafka bed. A
producer writes throughout each scenario and every message is read back at the end.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import (
    assert_no_throttle_left,
    create_topic,
    ongoing_reassignments,
    partitions,
    throttles_left,
)

from .conftest import Logged, OperatorProcess, operator_process, wait_for
from .objects import condition, events, get
from .test_lifecycle import BALANCE_TIMEOUT_S, SLOW, assert_clean, auto_pool, half_done, pool_status, traffic

SKEWED = [[1, 2] if p % 2 else [2, 1] for p in range(8)]
# The thawed replica is frozen for longer than its peering lifetime and the execution lease (15 s).
FREEZE_S = 38.0
PEERING_LIFETIME_S = 15
OUTAGE_S = 20.0
LEASE_LINE = re.compile(
    r"lease of pool (?P<pool>\S+) (?P<what>acquired|released|lost) by (?P<holder>\S+) "
    r"at wall=(?P<wall>[\d.]+)(?: \(owned until wall=(?P<until>[\d.]+)\))?"
)


def submissions(log: str, topic: str) -> list[int]:
    """The partitions of ``topic`` an operator submitted a reassignment for, one entry per submission."""
    pattern = re.compile(rf"{re.escape(topic)}-(\d+): \[[\d, ]*\] -> \[[\d, ]*\] \(")
    return [int(m.group(1)) for m in pattern.finditer(log)]


def seen_in_flight(log: str, topic: str) -> set[int]:
    """The partitions of ``topic`` an operator found in flight in Kafka: submitted by some process."""
    return {int(p) for p in re.findall(rf"{re.escape(topic)}-(\d+): in-flight -> ", log)}


def ownership(logs: list[str], pool: str) -> list[tuple[str, float, float]]:
    """(holder, from, until) of every time a process believed it owned ``pool``'s execution."""
    spans: list[tuple[str, float, float]] = []
    for log in logs:
        since: dict[str, float] = {}
        for m in LEASE_LINE.finditer(log):
            if m["pool"] != pool:
                continue
            if m["what"] == "acquired":
                since.setdefault(m["holder"], float(m["wall"]))
            elif m["holder"] in since:
                end = float(m["until"]) if m["until"] else float(m["wall"])
                spans.append((m["holder"], since.pop(m["holder"]), end))
        spans += [(holder, start, time.time()) for holder, start in since.items()]
    return spans


def longest_overlap(spans: list[tuple[str, float, float]]) -> float:
    """The longest time two different holders both believed they owned the execution."""
    return max(
        (
            max(0.0, min(a_end, b_end) - max(a_start, b_start))
            for i, (a, a_start, a_end) in enumerate(spans)
            for b, b_start, b_end in spans[i + 1 :]
            if a != b
        ),
        default=0.0,
    )


def reasons_for(
    kube_bed: kube.KubeBed, namespace: str, reason: str, plan: str | None = None
) -> list[dict[str, Any]]:
    """The pool's events with ``reason``; about ``plan`` only when given (messages name the plan's id)."""
    return [
        e
        for e in events(kube_bed, namespace)
        if e["reason"] == reason and (plan is None or plan in e.get("message", ""))
    ]


def finished_state(kube_bed: kube.KubeBed, namespace: str, plan: str) -> Callable[[], dict[str, Any] | None]:
    """The execution state of ``plan`` once it finished and the pool's status says it was executed."""

    def check() -> dict[str, Any] | None:
        if not executed(kube_bed, namespace, plan):
            return None
        data = get(kube_bed, namespace, "configmap", "main-execution")["data"]
        state: dict[str, Any] = json.loads(data["state.json"])
        return state if data.get("plan.id") == plan and state.get("finishedAt") else None

    return check


def finished_then_dry_run(kube_bed: kube.KubeBed, namespace: str, plan: str, log: Logged) -> dict[str, Any]:
    """The execution state of ``plan`` once it finished; then mode DryRun. The plan is the scenario;
    the pool would balance on (a next plan runs once a second sync confirms it, so not at once), and
    the next plan's state would replace this one's: DryRun stops that before any operator starts one."""
    state: dict[str, Any] = wait_for(
        finished_state(kube_bed, namespace, plan), BALANCE_TIMEOUT_S, "the plan to finish", log
    )
    patch_spec(kube_bed, namespace, {"mode": "DryRun"})
    return state


def executed(kube_bed: kube.KubeBed, namespace: str, plan: str) -> bool:
    return bool(pool_status(kube_bed, namespace).get("plan", {}).get("executedId") == plan)


def patch_spec(kube_bed: kube.KubeBed, namespace: str, spec: dict[str, Any]) -> None:
    patched = kube_bed.kubectl(
        "patch", "bp", "main", "-n", namespace, "--type", "merge", "-p", json.dumps({"spec": spec})
    )
    assert patched.returncode == 0, patched.stderr


def paused_with(kube_bed: kube.KubeBed, namespace: str, text: str) -> Any:
    def check() -> dict[str, Any] | None:
        found = get(kube_bed, namespace, "bp", "main")
        executing = condition(found, "Executing")
        phase = found.get("status", {}).get("execution", {}).get("phase")
        stopped = phase == "Paused" and executing.get("reason") == "Paused"
        return executing if stopped and text in executing.get("message", "") else None

    return check


def moves_to_go(kube_bed: kube.KubeBed, namespace: str, pending: int) -> Callable[[], dict[str, Any] | None]:
    """The pool's plan status while its execution runs with at least ``pending`` moves not yet
    submitted. With 2 moves a batch, 3 pending hold through several batches of at least one poll
    each (even 0-byte moves take ~2 s), and every move's change of status is written ahead: a
    once-a-second poll cannot miss it, unlike "a move copying and 3 pending", which early 0-byte
    moves held for less than a poll."""

    def check() -> dict[str, Any] | None:
        status = pool_status(kube_bed, namespace)
        execution = status.get("execution", {})
        waiting = execution.get("phase") == "Running" and execution.get("movesPending", 0) >= pending
        plan: dict[str, Any] = status.get("plan", {})
        return plan if waiting else None

    return check


def copying_with_moves_to_go(
    kube_bed: kube.KubeBed, bed: KafkaBed, namespace: str, topic: str, pending: int = 1
) -> Callable[[], dict[str, Any] | None]:
    """The pool's plan status while moves copy and at least ``pending`` wait for a later batch."""

    def check() -> dict[str, Any] | None:
        status = pool_status(kube_bed, namespace)
        execution = status.get("execution", {})
        waiting = execution.get("phase") == "Running" and execution.get("movesPending", 0) >= pending
        plan: dict[str, Any] = status.get("plan", {})
        return (
            plan
            if waiting and execution.get("movesInFlight", 0) > 0 and ongoing_reassignments(bed, topic)
            else None
        )

    return check


def assert_taken_over_once(
    kube_bed: kube.KubeBed,
    bed: KafkaBed,
    namespace: str,
    plan: str,
    state: dict[str, Any],
    logs: list[str],
    topic: str,
    log: Logged,
) -> float:
    """What a takeover of pool ``main``'s execution of ``plan`` must leave: every move done and
    submitted exactly once across the operators' ``logs``, never two owners at once, one start and
    one finish of the plan, then nothing in flight and no throttle. Returns the longest overlap (0)."""
    assert {m["status"] for m in state["moves"]} == {"done"}
    now = partitions(bed, topic)
    for move in state["moves"]:  # done means done in Kafka: nothing lost or reverted
        assert now[move["partition"]][0] == (move.get("planned") or move["target"]), move
    planned = sorted(m["partition"] for m in state["moves"])
    submitted = sorted(p for text in logs for p in submissions(text, topic))
    assert planned and len(set(submitted)) == len(submitted), f"submitted twice: {submitted}"
    # A submission the freeze cut off (sent, its answer never read) leaves no line; the process
    # that took over found that move in flight in Kafka. Every other move was logged.
    unlogged = set(planned) - set(submitted)
    in_flight = {p for text in logs for p in seen_in_flight(text, topic)}
    assert set(submitted) <= set(planned) and unlogged <= in_flight, (
        f"submitted {submitted}, planned {planned}, found in flight {sorted(in_flight)}"
    )
    spans = ownership(logs, f"{namespace}/main")
    overlap = longest_overlap(spans)
    assert len({holder for holder, _, _ in spans}) >= 2, spans  # there was a takeover
    assert overlap == 0.0, f"two processes owned the execution at once for {overlap:.3f}s: {spans}"
    # Of this plan: the operator active after the scenario may have started the next one.
    assert len(reasons_for(kube_bed, namespace, "ExecutionStarted", plan)) == 1
    assert len(reasons_for(kube_bed, namespace, "ExecutionFinished", plan)) == 1
    wait_for(
        lambda: not ongoing_reassignments(bed, topic) and not throttles_left(bed, topic),
        BALANCE_TIMEOUT_S,
        "nothing in flight and no throttle left",
        log,
    )
    assert_clean(bed, topic)
    return overlap


def test_a_frozen_replica_that_wakes_after_a_takeover_never_submits_again(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str, tmp_path: Path
) -> None:
    first = operator
    first_from = first.log.stat().st_size
    second = operator_process(kube_bed, tmp_path / "second")
    second.argv += ["--peering-lifetime", str(PEERING_LIFETIME_S)]
    second.start()
    key = f"{namespace}/main"
    # 16 partitions of ≈ 1 MB, copied one at a time at 128 KiB/s: moves are still pending when the
    # frozen replica wakes up, and the whole plan copies in about half the wait for its end (at ≈ 2 MB,
    # 244 s of copying at the throttle alone, a loaded run outlasted the 300 s wait).
    topic = create_topic(kafka_bed, "e2e-freeze", [[1, 2] if p % 2 else [2, 1] for p in range(16)])

    def log_of(process: OperatorProcess, start: int = 0) -> str:
        return process.log.read_text(errors="replace")[start:]

    try:
        wait_for(
            lambda: "Pausing operations" in log_of(first, first_from), 60, "the first replica to stand by"
        )
        with traffic(kafka_bed, topic, messages=16_000, size=1_000):
            # Slow enough that moves are still pending when the frozen replica wakes up.
            auto_pool(
                kafka_bed, kube_bed, namespace, topic, execution={**SLOW, "throttleBytesPerSecond": "128Ki"}
            )
            plan = wait_for(
                moves_to_go(kube_bed, namespace, pending=3),
                BALANCE_TIMEOUT_S,
                "the execution running with at least 3 moves to go",
                second,
            )
            assert f"lease of pool {key} acquired" in log_of(second), "the active replica holds the lease"
            assert second.process is not None
            os.kill(second.process.pid, signal.SIGSTOP)
            frozen = time.monotonic()
            try:
                wait_for(
                    lambda: f"lease of pool {key} acquired" in log_of(first, first_from),
                    FREEZE_S,
                    "the standby to take the execution over",
                    first,
                )
                # The freeze itself is the scenario: it lasts FREEZE_S, whatever the standby did.
                time.sleep(max(0.0, FREEZE_S - (time.monotonic() - frozen)))
            finally:
                os.kill(second.process.pid, signal.SIGCONT)
            wait_for(
                lambda: f"lease of pool {key} lost by" in log_of(second),
                60,
                "the thawed replica to stop",
                second,
            )
            # Read together, before the second replica stops: once it does, the standby becomes
            # active and may start the next plan, whose state replaces this one's.
            state = finished_then_dry_run(kube_bed, namespace, plan["id"], second)
        logs = [log_of(first, first_from), log_of(second)]
    finally:
        second.stop()

    overlap = assert_taken_over_once(kube_bed, kafka_bed, namespace, plan["id"], state, logs, topic, first)
    print(f"\nfreeze: longest time two processes both owned the execution: {overlap:.3f}s")


def test_an_apiserver_outage_mid_execution_is_ridden_out(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-outage", SKEWED)
    with traffic(kafka_bed, topic, messages=16_000, size=1_000):
        auto_pool(kafka_bed, kube_bed, namespace, topic, execution=SLOW)
        plan = wait_for(
            half_done(kube_bed, kafka_bed, namespace, topic), BALANCE_TIMEOUT_S, "moves in flight", operator
        )
        log_from = operator.log.stat().st_size
        kube_bed.stop_apiserver()
        try:
            time.sleep(OUTAGE_S)  # the outage itself is the scenario
        finally:
            kube_bed.start_apiserver()
        back = time.monotonic()
        at_back = len(submissions(operator.log.read_text(errors="replace")[log_from:], topic))

        def resumed() -> bool:
            later = submissions(operator.log.read_text(errors="replace")[log_from:], topic)
            return len(later) > at_back or executed(kube_bed, namespace, plan["id"])

        wait_for(resumed, 120, "moves to resume after the outage", operator)
        resumed_after = time.monotonic() - back
        wait_for(
            lambda: executed(kube_bed, namespace, plan["id"]),
            BALANCE_TIMEOUT_S,
            "the plan to finish",
            operator,
        )

    outage = reasons_for(kube_bed, namespace, "KubernetesApiOutage")
    assert outage and "unreachable" in outage[0]["message"], outage
    reasons = {e["reason"] for e in events(kube_bed, namespace)}
    assert "ExecutionFailed" not in reasons and "ExecutionFinished" in reasons
    state = json.loads(get(kube_bed, namespace, "configmap", "main-execution")["data"]["state.json"])
    assert {m["status"] for m in state["moves"]} == {"done"}
    assert_clean(kafka_bed, topic)
    assert resumed_after < 15.0, f"moves resumed {resumed_after:.1f}s after the apiserver was back"
    print(f"\noutage: apiserver back -> moves resuming {resumed_after:.1f}s")


def test_pausing_mid_execution_releases_every_idle_throttle_and_conditions_follow_the_run(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-pause", SKEWED)
    with traffic(kafka_bed, topic, messages=16_000, size=1_000):
        auto_pool(kafka_bed, kube_bed, namespace, topic, execution=SLOW)
        plan = wait_for(
            copying_with_moves_to_go(kube_bed, kafka_bed, namespace, topic),
            BALANCE_TIMEOUT_S,
            "moves in flight and moves to go",
            operator,
        )
        running = condition(get(kube_bed, namespace, "bp", "main"), "Executing")
        assert (running["status"], running["reason"]) == ("True", "Running"), running
        assert plan["id"] in running["message"], running

        patch_spec(kube_bed, namespace, {"paused": True})
        paused = wait_for(
            paused_with(kube_bed, namespace, "spec.paused"), 120, "the execution to pause", operator
        )
        assert (paused["status"], paused["reason"]) == ("False", "Paused"), paused
        # Paused: nothing in flight, so no throttle of ours anywhere, through two reconcile intervals.
        deadline = time.monotonic() + 25
        left = 0
        while time.monotonic() < deadline:
            assert ongoing_reassignments(kafka_bed, topic) == []
            assert_no_throttle_left(kafka_bed, topic)
            left = len(throttles_left(kafka_bed, topic))
            time.sleep(2.0)

        patch_spec(kube_bed, namespace, {"paused": False})
        # Resumed: the throttles are back with the moves.
        wait_for(
            lambda: ongoing_reassignments(kafka_bed, topic) and throttles_left(kafka_bed, topic),
            120,
            "throttled moves after resuming",
            operator,
        )
        again = condition(get(kube_bed, namespace, "bp", "main"), "Executing")
        assert (again["status"], again["reason"]) == ("True", "Running"), again
        wait_for(
            lambda: executed(kube_bed, namespace, plan["id"]),
            BALANCE_TIMEOUT_S,
            "the plan to finish",
            operator,
        )

    finished = condition(get(kube_bed, namespace, "bp", "main"), "Executing")
    assert (finished["status"], finished["reason"]) == ("False", "Finished"), finished
    assert_clean(kafka_bed, topic)
    print(f"\npause: throttles left while paused: {left}")


def test_switching_to_dry_run_mid_execution_stops_it_at_the_next_batch(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-dry", SKEWED)
    with traffic(kafka_bed, topic, messages=16_000, size=1_000):
        auto_pool(kafka_bed, kube_bed, namespace, topic, execution=SLOW)
        wait_for(
            half_done(kube_bed, kafka_bed, namespace, topic), BALANCE_TIMEOUT_S, "moves in flight", operator
        )
        log_from = operator.log.stat().st_size
        patch_spec(kube_bed, namespace, {"mode": "DryRun"})
        paused = wait_for(paused_with(kube_bed, namespace, "DryRun"), 120, "the execution to stop", operator)
        assert (paused["status"], paused["reason"]) == ("False", "Paused"), paused
        at_stop = submissions(operator.log.read_text(errors="replace")[log_from:], topic)
        # At most the batch that was being submitted when the switch landed.
        batch = SLOW["maxMoves"]
        assert isinstance(batch, int)
        assert len(at_stop) <= batch, at_stop
        deadline = time.monotonic() + 25  # two reconcile intervals in DryRun
        while time.monotonic() < deadline:
            assert submissions(operator.log.read_text(errors="replace")[log_from:], topic) == at_stop
            assert ongoing_reassignments(kafka_bed, topic) == []
            assert_no_throttle_left(kafka_bed, topic)
            time.sleep(2.0)
    assert_clean(kafka_bed, topic)
