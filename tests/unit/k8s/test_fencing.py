"""Ownership of an execution: lease deadlines, takeover, fenced Kafka writes, conditional state writes,
halts. Pure logic with an injected clock and in-memory fakes; the real thing is in tests/e2e."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.errors import ExecutionFenced
from kafka_balancer.k8s.lease import PoolLease
from kafka_balancer.k8s.port import LeaseWrite, PoolId
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.execution_state import ExecutionState, Move, MoveStatus
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.kafka.fence import FencedAdmin
from kafka_balancer.kafka.pause import settle_in_flight
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.reconcile.approval import halt_reason
from kafka_balancer.reconcile.executing import execution_conditions
from kafka_balancer.reconcile.ownership import SAFETY_MARGIN_S, Ownership, expired
from kafka_balancer.reconcile.status import ExecutionPhase, ExecutionStatus
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster
from tests.unit.k8s.kube_fake import FakeKube

DURATION = 15.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_holder_owns_until_its_last_renewal_was_sent_plus_the_duration_less_the_margin() -> None:
    clock = Clock()
    ownership = Ownership(DURATION, clock)
    assert not ownership.owns()
    ownership.renewed(sent=100.0)
    clock.now = 100.0 + DURATION - SAFETY_MARGIN_S - 0.01
    assert ownership.owns()
    # No renewal came through (API away, or the process frozen): past the deadline it owns nothing,
    # without asking anyone.
    clock.now += 0.02
    assert not ownership.owns()
    assert "not renewed within 15s" in ownership.lost_because
    assert ownership.ended == pytest.approx(100.0 + DURATION - SAFETY_MARGIN_S)


def test_a_held_lease_is_taken_only_after_a_whole_duration_without_change_on_the_takers_clock() -> None:
    may, seen = expired(None, "v1", "other", now=0.0, duration_s=DURATION)
    assert not may
    may, seen = expired(seen, "v1", "other", now=DURATION - 0.1, duration_s=DURATION)
    assert not may
    # The holder renewed (a new version): the wait starts again.
    may, seen = expired(seen, "v2", "other", now=DURATION + 1, duration_s=DURATION)
    assert not may and seen.since == DURATION + 1
    may, _ = expired(seen, "v2", "other", now=2 * DURATION + 1, duration_s=DURATION)
    assert may
    # Handed back: taken at once.
    assert expired(None, "v3", None, now=0.0, duration_s=DURATION)[0]


def test_the_holders_belief_ends_before_anyone_can_take_over() -> None:
    """Holder sends its renewal at 10; the apiserver stores it later; a standby first reads that
    version at 10 at the earliest and may take over DURATION later, after the holder stopped."""
    holder_clock = Clock()
    holder = Ownership(DURATION, holder_clock)
    holder.renewed(sent=10.0)
    seen = expired(None, "renewed-at-10", "holder", now=10.0, duration_s=DURATION)[1]
    takeover = next(
        t / 10 for t in range(100, 400) if expired(seen, seen.version, "holder", t / 10, DURATION)[0]
    )
    holder_clock.now = takeover
    assert not holder.owns()
    assert holder.ended is not None and takeover - holder.ended >= SAFETY_MARGIN_S


class Fence:
    def __init__(self) -> None:
        self.owned = True
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if not self.owned:
            raise ExecutionFenced("lost the execution lease")


def _cluster() -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("t", 0): (1, 2), ("t", 1): (1, 2)},
        sizes={("t", 0): 500, ("t", 1): 100},
    )


def test_a_process_that_lost_the_lease_writes_nothing_more_to_kafka(tmp_path: Path) -> None:
    cluster, fence = _cluster(), Fence()
    clock = FakeClock(cluster)
    options = ExecuteOptions(throttle=1000, max_moves=1, max_moves_per_broker=1)
    plan = ReassignmentPlan((Reassignment("t", 0, (3, 1)), Reassignment("t", 1, (2, 4))))

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        fence.owned = False  # frozen and woken up after a takeover, while the first move copies

    executor = Executor(
        FencedAdmin(cluster, fence),
        tmp_path / "s.json",
        options,
        log=lambda _: None,
        clock=clock.time,
        sleep=sleep,
    )
    with pytest.raises(ExecutionFenced):
        executor.run(new_state(cluster, plan, options, clock.time()))
    assert [list(batch) for batch in cluster.submitted] == [[("t", 0)]]  # the second move never went
    assert fence.checks >= 2  # the throttle write and the submission were both checked


def test_a_halt_follows_the_moves_in_flight_and_leaves_no_throttle_once_they_are_done(tmp_path: Path) -> None:
    cluster = _cluster()
    clock = FakeClock(cluster)
    options = ExecuteOptions(throttle=1000, max_moves=1, max_moves_per_broker=1)
    executor = Executor(
        cluster, tmp_path / "s.json", options, log=lambda _: None, clock=clock.time, sleep=clock.sleep
    )
    plan = ReassignmentPlan((Reassignment("t", 0, (3, 1)), Reassignment("t", 1, (2, 4))))
    state = executor.submit(executor.commit(new_state(cluster, plan, options, clock.time())))
    assert any(cluster.configs.values()), "throttled while the first move copies"

    settled = settle_in_flight(executor, state, until=lambda: False)

    assert [m.status for m in settled.moves] == [MoveStatus.DONE, MoveStatus.PENDING]
    assert (
        not any(cluster.configs.values()) and not settled.throttled_brokers and not settled.throttled_topics
    )
    assert len(cluster.submitted) == 1


@pytest.mark.parametrize(
    ("mode", "paused", "approved", "reason"),
    [
        ("Auto", False, None, None),
        ("Auto", True, None, "spec.paused is true"),
        ("DryRun", False, None, "mode DryRun never executes"),
        ("Manual", False, "p1", None),
        ("Manual", False, None, "no longer names plan p1"),
        ("Manual", False, "p0", "no longer names plan p1"),
    ],
)
def test_a_running_execution_halts_when_paused_in_dry_run_or_without_its_approval(
    mode: str, paused: bool, approved: str | None, reason: str | None
) -> None:
    found = halt_reason(mode=mode, paused=paused, approved=approved, plan="p1")
    assert (found is None) if reason is None else (found is not None and reason in found)


def test_executing_is_written_with_the_progress_and_ready_follows_it() -> None:
    previous: list[dict[str, Any]] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Reconciled",
            "message": "",
            "lastTransitionTime": "t0",
        },
        {"type": "SpecValid", "status": "True", "reason": "Valid", "message": "", "observedGeneration": 1},
        {"type": "Executing", "status": "False", "reason": "Idle", "message": "", "lastTransitionTime": "t0"},
    ]
    running = [
        c.to_dict()
        for c in execution_conditions(
            previous, ExecutionStatus("p1", ExecutionPhase.RUNNING, "1/3 moves"), generation=2, now=0
        )
    ]
    by_type = {c["type"]: c for c in running}
    assert (by_type["Executing"]["status"], by_type["Executing"]["reason"]) == ("True", "Running")
    assert "p1" in by_type["Executing"]["message"] and by_type["Executing"]["lastTransitionTime"] != "t0"
    assert by_type["SpecValid"]["observedGeneration"] == 1  # the others are left as reconcile wrote them
    failed = execution_conditions(
        running, ExecutionStatus("p1", ExecutionPhase.FAILED, "boom"), generation=2, now=0
    )
    assert {c.type: c.to_dict() for c in failed}["Ready"]["status"] == "False"


POOL = PoolId("ns", "main", "u")


def _state(status: MoveStatus) -> ExecutionState:
    return ExecutionState(
        moves=(Move("t", 0, (1, 2), (3, 2), size=10, status=status),), created_at=0, updated_at=0
    )


def test_a_stale_writer_of_the_execution_state_is_refused_and_fenced() -> None:
    kube = FakeKube()
    first = StateMirror(kube, POOL)
    first.load()
    first.write("p1", _state(MoveStatus.PENDING), force=True)
    successor = StateMirror(kube, POOL)
    assert successor.load() is not None
    successor.write("p1", _state(MoveStatus.IN_FLIGHT), force=True)

    with pytest.raises(ExecutionFenced, match="written by another process"):
        first.write("p1", _state(MoveStatus.PENDING), force=True)
    recorded = StateMirror(kube, POOL).load()
    assert recorded is not None and recorded[1].moves[0].status is MoveStatus.IN_FLIGHT


def test_a_state_change_is_retried_through_an_outage_progress_is_not() -> None:
    kube, clock = FakeKube(), Clock()
    slept: list[float] = []
    outages: list[float] = []
    mirror = StateMirror(kube, POOL, on_recovered=outages.append, clock=clock, sleep=slept.append)
    mirror.load()
    mirror.write("p1", _state(MoveStatus.PENDING), force=True)
    kube.unavailable = 4
    assert mirror.write("p1", _state(MoveStatus.IN_FLIGHT))  # essential: written ahead, retried
    assert slept == [0.5, 1.0, 2.0, 4.0] and len(outages) == 1
    # Progress only (bytes copied): skipped while the API is away, no waiting; the next one goes.
    clock.now += 10
    kube.unavailable = 1
    progressed = _state(MoveStatus.IN_FLIGHT)
    progressed = replace(progressed, moves=(replace(progressed.moves[0], progress_bytes=5),))
    assert not mirror.write("p1", progressed)
    assert mirror.write("p1", progressed) and slept == [0.5, 1.0, 2.0, 4.0]
    # Once the lease is gone the retries stop: a non-owner never writes the state.
    fenced = StateMirror(kube, POOL, check=_lost, sleep=lambda _: None)
    fenced.load()
    kube.unavailable = 100
    with pytest.raises(ExecutionFenced):
        fenced.write("p1", _state(MoveStatus.DONE))


def _lost() -> None:
    raise ExecutionFenced("lost the execution lease")


def test_a_lease_watched_while_another_is_awaited_is_taken_over_as_soon_as_its_holder_was_silent() -> None:
    """A process frozen mid-execution holds its pool's lease and its Kafka cluster's: the taker
    watches the second while it waits for the first, so that both are its own after one duration."""
    kube = FakeKube()
    pool = PoolId("kafka", "main", "uid-main")
    kube.write_lease(LeaseWrite("kafka-balancer", "kafka-cluster-x", None, "frozen main", 15, 0, None))
    now = [0.0]
    taker = PoolLease(
        kube,
        pool,
        duration_s=15,
        identity="taker",
        clock=lambda: now[0],
        where=("kafka-balancer", "kafka-cluster-x"),
    )
    unwatched = PoolLease(
        kube,
        pool,
        duration_s=15,
        identity="other",
        clock=lambda: now[0],
        where=("kafka-balancer", "kafka-cluster-x"),
    )

    taker.observe()
    now[0] = 15.0
    try:
        assert not unwatched.try_acquire(), "seen silent for no time yet: not taken"
        assert taker.try_acquire(), "seen silent for the whole duration: taken"
        record = kube.read_lease("kafka-balancer", "kafka-cluster-x")
        assert record is not None and record.holder == "taker"
    finally:
        taker.release()
