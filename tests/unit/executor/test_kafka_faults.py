"""The executor under Kafka faults, against the in-memory fake: a cancel marker no live cancel holds,
a destination broker declared gone, the controller not answering for a while or for too long."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka import errors as kp_errors

from kafka_balancer.errors import ExecutionError, KafkaUnavailableError
from kafka_balancer.kafka.admin import _fail
from kafka_balancer.kafka.execution_lock import CancelMarker
from kafka_balancer.kafka.execution_state import MoveStatus, load_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster


def _cluster(**extra: object) -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("t", 0): (1, 2), ("t", 1): (1, 2), ("t", 2): (2, 3)},
        sizes={("t", 0): 500, ("t", 1): 100, ("t", 2): 100},
        **extra,  # type: ignore[arg-type]
    )


def _plan(*moves: Reassignment) -> ReassignmentPlan:
    return ReassignmentPlan(moves)


def _executor(
    cluster: FakeKafkaCluster, tmp_path: Path, lines: list[str], **options: object
) -> tuple[Executor, FakeClock]:
    clock = FakeClock(cluster)
    opts = replace(ExecuteOptions(throttle=1000, poll_interval_s=1.0), **options)  # type: ignore[arg-type]
    executor = Executor(
        cluster,
        tmp_path / "state.json",
        opts,
        log=lines.append,
        clock=clock.time,
        sleep=clock.sleep,
        resume_hint="`kafka-balancer execute --state S` resumes it safely",
    )
    return executor, clock


def test_a_marker_no_live_cancel_holds_is_ignored_and_removed(tmp_path: Path) -> None:
    marker = CancelMarker(tmp_path / "state.json")
    marker.path.write_text("4242\n")  # what a cancel that failed or was killed leaves
    lines: list[str] = []
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, lines)
    executor.cancel_requested = lambda: marker.requested(lines.append)

    done = executor.run(
        new_state(cluster, _plan(Reassignment("t", 0, (3, 1))), executor.options, clock.time())
    )

    assert [m.status for m in done.moves] == [MoveStatus.DONE]
    assert not marker.path.exists()
    assert [line for line in lines if "no running cancel holds it" in line] == [
        f"ignored and removed {marker.path}: no running cancel holds it (one failed or was killed)"
    ]


def test_a_marker_held_by_a_live_cancel_stops_the_executor_and_goes_with_it(tmp_path: Path) -> None:
    held = CancelMarker(tmp_path / "state.json")
    held.hold()
    lines: list[str] = []
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, lines)
    seen = CancelMarker(tmp_path / "state.json")
    executor.cancel_requested = lambda: seen.requested(lines.append)
    try:
        with pytest.raises(ExecutionError, match="cancel requested"):
            executor.run(
                new_state(cluster, _plan(Reassignment("t", 0, (3, 1))), executor.options, clock.time())
            )
        assert held.path.exists()
    finally:
        held.release()
    assert not held.path.exists()
    assert not seen.requested(lines.append)


def test_a_marker_an_executor_removed_as_stale_is_placed_again_by_the_cancel_waiting(tmp_path: Path) -> None:
    marker = CancelMarker(tmp_path / "state.json")
    marker.hold()
    try:
        marker.path.unlink()  # an executor removing a stale marker just as this one replaced it
        marker.keep()
        assert CancelMarker(tmp_path / "state.json").requested(lambda _: None)
    finally:
        marker.release()


def test_no_move_starts_towards_a_broker_declared_gone(tmp_path: Path) -> None:
    # Both moves copy to broker 4; one at a time per broker, so the second waits for the first.
    plan = _plan(Reassignment("t", 0, (4, 1)), Reassignment("t", 1, (4, 2)), Reassignment("t", 2, (2, 1)))
    cluster = _cluster(stuck={("t", 0)})
    lines: list[str] = []
    executor, clock = _executor(
        cluster, tmp_path, lines, max_moves_per_broker=1, dead_broker_timeout_s=5.0, timeout_per_move_s=600.0
    )
    state = executor.submit(executor.observe(new_state(cluster, plan, executor.options, clock.time())))
    cluster.brokers = frozenset({1, 2, 3})  # broker 4 leaves with the first move copying to it

    with pytest.raises(ExecutionError, match="destination broker 4 left the cluster"):
        executor.run(state)

    submitted = [tp for batch in cluster.submitted for tp, target in batch.items() if target is not None]
    assert ("t", 1) not in submitted
    moves = {m.partition: m for m in load_state(tmp_path / "state.json").moves}
    assert moves[0].status is MoveStatus.FAILED and "reassignment cancelled" in moves[0].reason
    assert moves[1].status is MoveStatus.FAILED
    assert moves[1].reason == "not started: destination broker 4 left the cluster"
    assert moves[2].status is MoveStatus.DONE
    assert load_state(tmp_path / "state.json").gone_brokers == {4}
    assert "broker 4 left the cluster: no move towards it starts in this execution" in lines


def test_a_broker_declared_gone_stays_gone_for_the_execution_even_once_back(tmp_path: Path) -> None:
    plan = _plan(Reassignment("t", 0, (4, 1)), Reassignment("t", 1, (4, 2)))
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines)
    state = replace(new_state(cluster, plan, executor.options, clock.time()), gone_brokers=frozenset({4}))

    with pytest.raises(ExecutionError, match="not started: destination broker 4 left the cluster"):
        executor.run(state)
    assert cluster.submitted == []


def test_a_controller_outage_shorter_than_the_outage_timeout_is_ridden_out(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=4)
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines, outage_timeout_s=60.0)
    plan = _plan(Reassignment("t", 0, (3, 1)), Reassignment("t", 1, (2, 4)))
    state = executor.submit(executor.observe(new_state(cluster, plan, executor.options, clock.time())))
    cluster.controller_down_ticks = 4  # pauses of 1, 2, 4, 8 s: down for 15 s

    done = executor.run(state)

    assert [m.status for m in done.moves] == [MoveStatus.DONE] * 2
    assert cluster.replicas[("t", 0)] == (3, 1) and cluster.replicas[("t", 1)] == (2, 4)
    assert all(not v for v in cluster.configs.values())
    outage = [line for line in lines if line.startswith("Kafka does not answer")]
    assert len(outage) == 1 and "riding it out for up to 60s" in outage[0], lines
    assert "Kafka answers again after 15s" in lines


def test_a_controller_outage_past_the_outage_timeout_stops_with_the_cause_and_how_to_resume(
    tmp_path: Path,
) -> None:
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines, outage_timeout_s=10.0)
    plan = _plan(Reassignment("t", 0, (3, 1)))
    state = executor.submit(executor.observe(new_state(cluster, plan, executor.options, clock.time())))
    cluster.controller_down_ticks = 1000

    with pytest.raises(ExecutionError) as raised:
        executor.run(state)

    message = str(raised.value)
    assert re.fullmatch(
        r"Kafka has not answered since \d\d:\d\d:\d\d UTC, for 1[0-9]s, "
        r"longer than the outage timeout of 10s "
        r"\(listing partition reassignments: no answer within 30s: Kafka's controller did not answer\); "
        r"nothing is lost and every move is recorded in .*state\.json: once Kafka answers, "
        r"`kafka-balancer execute --state S` resumes it safely",
        message,
    ), message
    # The pauses between tries grow but stay bounded.
    assert clock.time() - 1000.0 < 10.0 + 10.0 + 1.0
    assert [m.status for m in load_state(tmp_path / "state.json").moves] == [MoveStatus.IN_FLIGHT]

    cluster.controller_down_ticks = 0  # back: the same state file resumes and finishes
    done = executor.run(load_state(tmp_path / "state.json"))
    assert [m.status for m in done.moves] == [MoveStatus.DONE]
    assert all(not v for v in cluster.configs.values())


def test_a_throttle_recorded_in_a_round_the_controller_broke_off_stays_on_record(tmp_path: Path) -> None:
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines, outage_timeout_s=60.0)
    calls = {"n": 0}
    real_alter = cluster.alter_configs

    def alter_then_fail(kind: str, name: str, set_: object, delete: object = ()) -> None:
        real_alter(kind, name, set_, delete)  # type: ignore[arg-type]
        calls["n"] += 1
        if calls["n"] == 1:  # applied, but the answer never came
            cluster.controller_down_ticks = 2
            cluster.ask_controller("altering configs")

    cluster.alter_configs = alter_then_fail  # type: ignore[method-assign]
    done = executor.run(
        new_state(cluster, _plan(Reassignment("t", 0, (3, 1))), executor.options, clock.time())
    )

    assert [m.status for m in done.moves] == [MoveStatus.DONE]
    assert all(not v for v in cluster.configs.values()), cluster.configs


@pytest.mark.parametrize(
    ("error", "unanswered"),
    [
        (kp_errors.RequestTimedOutError("Request timed out after 4995 ms"), True),
        (kp_errors.KafkaConnectionError("Node not connected"), True),
        (TimeoutError(), True),
        (KafkaException(KafkaError(KafkaError._TIMED_OUT)), True),
        (kp_errors.TopicAuthorizationFailedError(), False),
        (KafkaException(KafkaError(KafkaError.POLICY_VIOLATION)), False),
    ],
)
def test_only_a_request_without_an_answer_is_worth_riding_out(error: BaseException, unanswered: bool) -> None:
    failed = _fail("listing partition reassignments", error, 5.0, controller=True)
    assert isinstance(failed, KafkaUnavailableError) is unanswered
    if unanswered:
        assert str(failed) == (
            "listing partition reassignments: no answer within 5s: "
            "Kafka's controller did not answer (brokers forward this request to it)"
        )
