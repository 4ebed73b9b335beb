"""A catastrophic ``excludedTopics`` pattern in one pool, beside another pool's running execution.

``(a|aa)+c`` backtracks exponentially against a long run of a's. Matched while holding the GIL, it
would stall the operator's event loop (``/healthz``), its lease renewals and every other pool's
execution; the operator refuses it within its time limit instead. Shown here with the operator
process, the real apiserver and the real Kafka bed, ``/healthz`` asked all along.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka.cimpl import NewTopic

from kafka_balancer.k8s.settings import Timings
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import admin_of, create_topic, ongoing_reassignments

from .conftest import OperatorProcess, wait_for
from .objects import OWN_TOPIC_SPREAD, apply, condition, events, get, goal, pool
from .test_fencing import SKEWED, finished_then_dry_run
from .test_lifecycle import BALANCE_TIMEOUT_S, SLOW, assert_clean, pool_status, traffic

PATTERN = "(a|aa)+c"
# Names of 200 a's: matching the pattern against one, a backtracking engine never ends.
LONG_TOPICS = ["a" * 200 + f"-{i}" for i in range(40)]
PROBE_EVERY_S = 0.1
# The kubelet gives up on a liveness probe after this long (the chart's timeoutSeconds).
PROBE_TIMEOUT_S = 5.0
# The longest /healthz answer allowed: a pool's daemon re-checks its pool every wake, so a stall
# within one delays nothing by more than a wake. A stall fences an execution only once it outlasts
# the lease less a renewal interval and the holder's margin (15 s - 5 s - 2 s), and fails the
# kubelet's probe past PROBE_TIMEOUT_S: the bound is well inside both.
STALL_BOUND_S = Timings().wake_s
REFUSAL_TIMEOUT_S = 60.0
# Pool main's moves at half SLOW's throttle: ≈ 2 MB a partition, each move takes seconds, the
# execution tens of them, long enough for the other pool's first passes to fall inside it.
THROTTLED = {**SLOW, "throttleBytesPerSecond": "256Ki"}


class HealthProbe:
    """The operator's ``/healthz`` asked every PROBE_EVERY_S in a thread; how long each answer took
    (a request that failed or timed out counts for the time it took to)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.took: list[float] = []
        self.failed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=PROBE_TIMEOUT_S) as response:
                    response.read()
            except OSError as err:
                self.failed.append(f"{err}")
            self.took.append(time.monotonic() - started)
            self.stop.wait(PROBE_EVERY_S)

    def longest(self) -> float:
        return max(self.took, default=0.0)


@contextmanager
def probing(operator: OperatorProcess) -> Iterator[HealthProbe]:
    """``/healthz`` probed for the block; the longest answer is printed even when the block failed."""
    probe = HealthProbe(operator.liveness)
    thread = threading.Thread(target=probe.run, daemon=True)
    thread.start()
    try:
        yield probe
    finally:
        probe.stop.set()
        thread.join(timeout=PROBE_TIMEOUT_S + 5)
        print(
            f"\n/healthz: {len(probe.took)} probes, longest answer {probe.longest() * 1000:.0f} ms, "
            f"{len(probe.failed)} failed"
        )


@contextmanager
def long_topics(bed: KafkaBed) -> Iterator[None]:
    """LONG_TOPICS on the bed (1 partition each) for the block."""
    admin = admin_of(bed)
    created = admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1) for t in LONG_TOPICS])
    for future in created.values():
        future.result(timeout=60)
    try:
        yield
    finally:
        for future in admin.delete_topics(LONG_TOPICS, operation_timeout=30).values():
            future.result(timeout=60)


def test_a_catastrophic_pattern_is_refused_while_another_pools_execution_goes_on(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    topic = create_topic(kafka_bed, "e2e-redos", SKEWED)
    log_start = len(operator.log.read_bytes())

    def copying() -> dict[str, Any] | None:
        execution: dict[str, Any] = pool_status(kube_bed, namespace).get("execution", {})
        return (
            execution
            if execution.get("phase") == "Running" and ongoing_reassignments(kafka_bed, topic)
            else None
        )

    def refused() -> dict[str, Any] | None:
        found = condition(get(kube_bed, namespace, "bp", "redos"), "SpecValid")
        return found if found.get("reason") == "InvalidExcludedTopics" else None

    with (
        probing(operator) as probe,
        long_topics(kafka_bed),
        traffic(kafka_bed, topic, messages=16_000, size=1_000),
    ):
        apply(
            kube_bed,
            namespace,
            pool("main", kafka_bed.bootstrap_servers, "Auto", topic, execution=THROTTLED),
            goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
            goal("racks", "main", type="RackAware"),
        )
        plan = wait_for(copying, BALANCE_TIMEOUT_S, "pool main's moves in flight", operator)["planId"]
        # DryRun: were the pattern ever accepted, this pool would plan the whole bed, never move it.
        asked = time.monotonic()
        apply(
            kube_bed,
            namespace,
            pool("redos", kafka_bed.bootstrap_servers, "DryRun", excludedTopics=[PATTERN]),
            goal("redos-racks", "redos", type="RackAware"),
        )
        refusal = wait_for(refused, REFUSAL_TIMEOUT_S, f"pool redos to refuse {PATTERN}", operator)
        refused_after, refused_at = time.monotonic() - asked, time.time()
        stall_by_refusal = probe.longest()
        state = finished_then_dry_run(kube_bed, namespace, plan, operator)

    print(
        f"refused after {refused_after:.1f} s (polled every 1 s); longest /healthz answer "
        f"{stall_by_refusal * 1000:.0f} ms by the refusal, {probe.longest() * 1000:.0f} ms in all; "
        f"pool main's execution {state['finishedAt'] - state['createdAt']:.1f} s, refused "
        f"{refused_at - state['createdAt']:.1f} s into it"
    )
    assert refusal["status"] == "False"
    assert refusal["message"].startswith(f"spec.excludedTopics: {PATTERN!r} took over 50 ms on topic 'aaa")
    assert probe.failed == []
    assert probe.longest() < STALL_BOUND_S
    # Pool main's execution ran before, through and after the refusal, to its end, its lease held.
    assert state["createdAt"] < refused_at < state["finishedAt"], (state["createdAt"], refused_at)
    assert pool_status(kube_bed, namespace)["execution"]["phase"] == "Succeeded"
    assert {m["status"] for m in state["moves"]} == {"done"}
    main_events = [e["reason"] for e in events(kube_bed, namespace) if e["involvedObject"]["name"] == "main"]
    assert "ExecutionFinished" in main_events and "ExecutionFailed" not in main_events, main_events
    log = operator.log.read_bytes()[log_start:].decode(errors="replace")
    assert f"lease of pool {namespace}/main lost" not in log
    assert f"pool {namespace}/main: lease not renewed" not in log
    assert_clean(kafka_bed, topic)
