"""The executor on a shared cluster, against an in-memory fake: topics deleted and replicas changed by
someone else under an execution, reassignments it did not start, and records edited by hand."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kafka_balancer.errors import ExecutionError
from kafka_balancer.k8s.plan_run import execution_progress, skipped_text
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import (
    TOPIC_DELETED,
    ExecutionState,
    MoveStatus,
    load_state,
    save_state,
    state_document,
)
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.kafka.progress import summary
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from kafka_balancer.reconcile.executing import executing_condition
from kafka_balancer.reconcile.status import ExecutionPhase, ExecutionStatus
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster

PLAN = ReassignmentPlan(
    (
        Reassignment("doomed", 0, (3, 1)),
        Reassignment("doomed", 1, (3, 2)),
        Reassignment("kept", 0, (4, 1)),
        Reassignment("kept", 1, (4, 2)),
    )
)


def _cluster() -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("doomed", 0): (1, 2), ("doomed", 1): (1, 2), ("kept", 0): (1, 2), ("kept", 1): (1, 2)},
        sizes={("doomed", 0): 500, ("doomed", 1): 500, ("kept", 0): 500, ("kept", 1): 500},
        ticks_to_finish=4,
    )


def _executor(
    cluster: FakeKafkaCluster, tmp_path: Path, log: Callable[[str], None] = lambda _: None
) -> tuple[Executor, FakeClock]:
    clock = FakeClock(cluster)
    options = ExecuteOptions(throttle=1000, poll_interval_s=1.0, max_moves=2)
    return Executor(
        cluster, tmp_path / "state.json", options, log=log, clock=clock.time, sleep=clock.sleep
    ), clock


def _in_flight(executor: Executor, cluster: FakeKafkaCluster, clock: FakeClock) -> ExecutionState:
    """The first batch (the doomed topic's two moves) submitted and throttled, one tick copied."""
    state = executor.round(executor.commit(new_state(cluster, PLAN, executor.options, clock.time())))
    assert [m.status for m in state.moves] == [MoveStatus.IN_FLIGHT] * 2 + [MoveStatus.PENDING] * 2
    assert state.throttled_topics.keys() == {"doomed"}
    clock.sleep(1.0)
    return state


def test_a_topic_deleted_mid_copy_skips_its_moves_and_the_rest_of_the_plan_completes(tmp_path: Path) -> None:
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines.append)
    state = _in_flight(executor, cluster, clock)
    cluster.delete_topic("doomed")

    state = executor.run(state)

    assert [m.status for m in state.moves] == [MoveStatus.SKIPPED] * 2 + [MoveStatus.DONE] * 2
    assert {m.reason for m in state.moves[:2]} == {TOPIC_DELETED}
    assert cluster.replicas == {("kept", 0): (4, 1), ("kept", 1): (4, 2)}
    # Nothing of ours is left, and nothing about the deleted topic is retried.
    assert state.throttled_brokers == {} and state.throttled_topics == {}
    assert all(not configs for configs in cluster.configs.values())
    assert state.finished_at is not None
    text = summary(state, clock.time())
    assert "2 done, 0 cancelled, 0 failed, 2 skipped" in text
    assert f"doomed-0: skipped: {TOPIC_DELETED}" in text
    assert f"doomed-0: in-flight -> skipped {TOPIC_DELETED}" in lines


def test_a_topic_deleted_while_stopped_does_not_block_the_resume(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    _in_flight(executor, cluster, clock)
    cluster.delete_topic("doomed")

    resumed, _ = _executor(cluster, tmp_path)
    state = resumed.run(load_state(tmp_path / "state.json"))

    assert [m.status for m in state.moves] == [MoveStatus.SKIPPED] * 2 + [MoveStatus.DONE] * 2
    assert state.throttled_topics == {} and all(not c for c in cluster.configs.values())


def test_a_cancel_after_a_topic_was_deleted_skips_its_moves_and_removes_all_throttles(
    tmp_path: Path,
) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = _in_flight(executor, cluster, clock)
    cluster.delete_topic("doomed")

    state = cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)

    assert [m.status for m in state.moves] == [MoveStatus.SKIPPED] * 2 + [MoveStatus.CANCELLED] * 2
    assert state.throttled_brokers == {} and state.throttled_topics == {}
    assert all(not configs for configs in cluster.configs.values())


def test_a_partition_whose_replicas_someone_else_changed_is_skipped_not_reverted(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = _in_flight(executor, cluster, clock)
    # Someone else moved a pending move's partition (kept-1) off broker 1 meanwhile.
    cluster.replicas[("kept", 1)] = (2, 3)

    state = executor.run(state)

    kept_1 = state.moves[3]
    assert kept_1.status is MoveStatus.SKIPPED
    assert kept_1.reason == "someone else changed its replicas to [2, 3]"
    assert cluster.replicas[("kept", 1)] == (2, 3)  # left as they made it
    assert [m.status for m in state.moves[:3]] == [MoveStatus.DONE] * 3


def test_a_reassignment_someone_else_started_is_never_replaced_and_its_move_waits(tmp_path: Path) -> None:
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines.append)
    state = _in_flight(executor, cluster, clock)
    # Another tool starts moving kept-0 to (2, 3) while the doomed topic's moves copy (after the run's
    # preflight, which refuses to start beside one).
    cluster.ongoing[("kept", 0)] = ((2, 3), 0)

    while state.by_status(MoveStatus.PENDING) or state.by_status(MoveStatus.IN_FLIGHT):
        state = executor.round(state)
        clock.sleep(1.0)
    state = executor.finish(state)

    ours = [targets for targets in cluster.submitted if ("kept", 0) in targets]
    assert ours == [], ours  # kept-0 was never submitted over the other tool's reassignment
    assert cluster.replicas[("kept", 0)] == (2, 3)
    assert state.moves[2].status is MoveStatus.SKIPPED
    assert state.moves[2].reason == "someone else changed its replicas to [2, 3]"
    assert lines.count("kept-0: waits for a reassignment this execution did not start") == 1
    assert [state.moves[i].status for i in (0, 1, 3)] == [MoveStatus.DONE] * 3


def test_a_record_naming_other_configs_than_throttles_never_removes_them(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = _in_flight(executor, cluster, clock)
    ledger = {"cleanup.policy": "compact", "retention.ms": "-1"}
    cluster.configs[("topic", "kept")] = dict(ledger)
    cluster.configs[("broker", "1")]["log.retention.ms"] = "-1"
    # Someone who may edit the record (the state file, or the pool's execution ConfigMap) adds them.
    doc = state_document(state)
    doc["throttles"]["topics"]["kept"] = ["cleanup.policy", "retention.ms"]
    doc["throttles"]["brokers"]["1"].append("log.retention.ms")
    (tmp_path / "state.json").write_text(json.dumps(doc))

    edited = load_state(tmp_path / "state.json")
    assert edited.throttled_topics["kept"] == ()
    assert "log.retention.ms" not in edited.throttled_brokers["1"]
    cancel_execution(cluster, edited, executor.commit, clock=clock.time, sleep=clock.sleep)

    assert cluster.configs[("topic", "kept")] == ledger
    assert cluster.configs[("broker", "1")] == {"log.retention.ms": "-1"}


def test_a_record_keeps_every_throttle_it_names(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = _in_flight(executor, cluster, clock)
    save_state(tmp_path / "again.json", state)

    again = load_state(tmp_path / "again.json")

    assert again == replace(state)
    assert again.throttled_topics["doomed"] == (
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
    )


def test_a_move_done_before_its_topic_was_deleted_passes_verification(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = _in_flight(executor, cluster, clock)
    while state.by_status(MoveStatus.IN_FLIGHT)[:1] != [] and state.moves[0].status is not MoveStatus.DONE:
        clock.sleep(1.0)
        state = executor.round(state)
    assert [m.status for m in state.moves[:2]] == [MoveStatus.DONE] * 2
    cluster.delete_topic("doomed")

    state = executor.run(state)

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 4
    assert state.finished_at is not None


def _rounds(executor: Executor, clock: FakeClock, state: ExecutionState, count: int) -> ExecutionState:
    for _ in range(count):
        clock.sleep(1.0)
        state = executor.round(state)
    return state


def test_a_batch_waits_while_a_replica_its_move_keeps_is_out_of_sync_then_goes_on(tmp_path: Path) -> None:
    cluster = _cluster()
    lines: list[str] = []
    executor, clock = _executor(cluster, tmp_path, lines.append)
    # kept-0 ([1, 2] -> [4, 1]) keeps broker 1, whose replica fell out of the ISR (a broker outside
    # the plan stopped, or lagging).
    cluster.out_of_isr[("kept", 0)] = frozenset({1})
    state = _in_flight(executor, cluster, clock)

    state = _rounds(executor, clock, state, 8)

    assert [m.status for m in state.moves[:2]] == [MoveStatus.DONE] * 2
    assert [m.status for m in state.moves[2:]] == [MoveStatus.PENDING] * 2
    assert not any(("kept", p) in targets for targets in cluster.submitted for p in (0, 1))
    told = "the next batch waits for 1 partition(s) to be healthy: kept-0 (replica(s) 1 out of sync)"
    assert state.waiting == told and lines.count(told) == 1
    assert load_state(tmp_path / "state.json").waiting == told  # on record: the operator shows it

    del cluster.out_of_isr[("kept", 0)]
    state = executor.run(state)

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 4
    assert state.waiting == "" and state.waiting_since is None
    assert "the batch's partitions are healthy again: submitting" in lines


def test_a_batch_waits_while_a_partitions_isr_is_below_its_min_isr(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    cluster.min_isr["kept"] = 3  # more than its two replicas: never met
    state = _rounds(executor, clock, _in_flight(executor, cluster, clock), 8)

    assert state.waiting == (
        "the next batch waits for 2 partition(s) to be healthy: "
        "kept-0 (ISR [1, 2] below min.insync.replicas 3), kept-1 (ISR [1, 2] below min.insync.replicas 3)"
    )
    assert [m.status for m in state.moves[2:]] == [MoveStatus.PENDING] * 2


def test_a_replica_out_of_sync_that_the_move_takes_away_is_no_reason_to_wait(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    # kept-0 ([1, 2] -> [4, 1]) removes broker 2, whose replica is out of sync: the move is the cure.
    cluster.out_of_isr[("kept", 0)] = frozenset({2})

    state = executor.run(new_state(cluster, PLAN, executor.options, clock.time()))

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 4


def test_a_batch_unhealthy_past_the_health_timeout_stops_the_execution_naming_it(tmp_path: Path) -> None:
    cluster = _cluster()
    clock = FakeClock(cluster)
    options = ExecuteOptions(throttle=1000, poll_interval_s=1.0, max_moves=2, health_timeout_s=30.0)
    path = tmp_path / "state.json"
    executor = Executor(cluster, path, options, clock=clock.time, sleep=clock.sleep)
    state = _in_flight(executor, cluster, clock)
    cluster.out_of_isr[("kept", 0)] = frozenset({1})

    started, message = clock.time(), ""
    while not message and clock.time() - started < 100:
        try:
            state = _rounds(executor, clock, state, 1)
        except ExecutionError as err:
            message = str(err)

    # The first batch copies for a few seconds; the next one waits from then on, 30 s at most.
    assert 30.0 < clock.time() - started <= 40.0
    assert message.startswith("the next batch waits for 1 partition(s) to be healthy: kept-0 (replica(s) 1 ")
    assert "longer than the health timeout of 30s; nothing more was submitted" in message
    assert not any(("kept", 0) in targets for targets in cluster.submitted)


def test_the_pool_shows_a_waiting_batch_and_the_skipped_moves(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    cluster.out_of_isr[("kept", 0)] = frozenset({1})
    state = _in_flight(executor, cluster, clock)
    cluster.delete_topic("doomed")
    state = _rounds(executor, clock, state, 3)

    fields, _ = execution_progress(state, clock.time())
    status = ExecutionStatus("abc", ExecutionPhase.RUNNING, "", fields, waiting=state.waiting)

    assert status.to_dict()["movesSkipped"] == 2
    assert status.to_dict()["waiting"] == state.waiting != ""
    condition = executing_condition(status)
    assert (condition.status, condition.reason) == ("True", "Waiting")
    assert condition.message == f"executing plan abc: {state.waiting}"
    assert skipped_text(state) == (
        f"2 partition move(s) skipped (doomed-0: {TOPIC_DELETED}; doomed-1: {TOPIC_DELETED}); "
        "the next plan places them anew"
    )


def test_a_cluster_wide_default_rate_caps_the_throttle_and_is_said(tmp_path: Path) -> None:
    cluster = _cluster()
    # Someone set the replication rates for every broker (kafka-configs --entity-default).
    cluster.configs[("broker", "")] = {
        "leader.replication.throttled.rate": "600",
        "follower.replication.throttled.rate": "700",
    }
    executor, clock = _executor(cluster, tmp_path)  # asks for 1000

    state = executor.round(executor.commit(new_state(cluster, PLAN, executor.options, clock.time())))

    throttled = cluster.throttled_when_submitted[0]
    rates = {broker: configs for (kind, broker), configs in throttled.items() if kind == "broker" and broker}
    assert rates and all(set(c.values()) == {"600"} for c in rates.values()), rates
    assert "throttle capped at 600 B/s (asked 1000) by the cluster-wide default" in summary(
        state, clock.time()
    )
    _, message = execution_progress(state, clock.time())
    assert message.endswith(
        "throttle capped at 600 B/s (asked 1000) by the cluster-wide default "
        "replication rate (kafka-configs --entity-default)"
    )

    # The cap lifted: the rate the execution asked for from the next round on.
    del cluster.configs[("broker", "")]
    state = executor.round(state)
    assert {cluster.configs[("broker", b)]["leader.replication.throttled.rate"] for b in rates} == {"1000"}
    assert "capped" not in summary(state, clock.time())
