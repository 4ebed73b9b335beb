"""The executor carries out a plan's log_dirs (moves between a broker's own log dirs): batched under the
per-broker limits (never a free reordering), throttled by the intra-broker rate that is always removed,
resumable, verified by the dirs Kafka describes, counted apart in the progress."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_balancer.errors import ExecutionError, InputError
from kafka_balancer.kafka.batching import next_batch
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import INTRA_BROKER_RATE, Move, MoveStatus, load_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.kafka.plan_check import check_plan
from kafka_balancer.kafka.progress import summary
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from tests.unit.executor_fakes import DIRS, FakeClock, FakeKafkaCluster

FOLLOWER_RATE = "follower.replication.throttled.rate"
# t-0 stays on (1, 2) with broker 1's replica moved to the second dir; t-1 moves from (1, 2) to
# (3, 2) with the new replica on broker 3 put in the second dir.
DIR_ONLY = Reassignment("t", 0, (1, 2), (DIRS[1], "any"))
WITH_BROKER = Reassignment("t", 1, (3, 2), (DIRS[1], "any"))
PLAN = ReassignmentPlan((DIR_ONLY, WITH_BROKER))


def _cluster(**extra: object) -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3}),
        replicas={("t", 0): (1, 2), ("t", 1): (1, 2)},
        sizes={("t", 0): 400, ("t", 1): 100},
        **extra,  # type: ignore[arg-type]
    )


def _executor(cluster: FakeKafkaCluster, tmp_path: Path, **options: object) -> tuple[Executor, FakeClock]:
    clock = FakeClock(cluster)
    opts = replace(ExecuteOptions(throttle=1000, poll_interval_s=1.0), **options)  # type: ignore[arg-type]
    executor = Executor(
        cluster, tmp_path / "state.json", opts, log=lambda _: None, clock=clock.time, sleep=clock.sleep
    )
    return executor, clock


def _dir_move(partition: int, broker: int) -> Move:
    return Move("t", partition, (broker, 9), (broker, 9), size=10, log_dirs=(DIRS[1], "any"))


def test_a_move_between_log_dirs_is_no_free_reordering_and_counts_against_the_broker_limits() -> None:
    reorder = Move("t", 5, (4, 5), (5, 4))
    moves = [_dir_move(0, 1), _dir_move(1, 1), _dir_move(2, 2), reorder]
    assert _dir_move(0, 1).brokers == {1} and not _dir_move(0, 1).reorders_only
    # Broker 1 copies one replica between its dirs at a time; the reordering alone rides free.
    batch = next_batch(moves, max_per_broker=1, max_total=10)
    assert [m.partition for m in batch] == [5, 0, 2]
    assert [m.partition for m in next_batch(moves, max_per_broker=5, max_total=2)] == [5, 0, 1]
    # One in flight uses up broker 1.
    busy = [replace(moves[0], status=MoveStatus.IN_FLIGHT), *moves[1:3]]
    assert [m.partition for m in next_batch(busy, max_per_broker=1, max_total=10)] == [2]


def test_a_plan_with_log_dirs_is_executed_throttled_verified_and_counted_apart(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = executor.run(new_state(cluster, PLAN, executor.options, clock.time()))

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 2
    assert cluster.replicas == {("t", 0): (1, 2), ("t", 1): (3, 2)}
    assert cluster.dir_of(("t", 0, 1)) == DIRS[1] and cluster.dir_of(("t", 1, 3)) == DIRS[1]
    assert cluster.dir_of(("t", 0, 2)) == DIRS[0]  # "any": left where it was
    assert cluster.futures == {}
    # The dirs were asked for before the reassignment, under the intra-broker rate on their brokers.
    assert {("t", 0, 1), ("t", 1, 3)} <= set(cluster.dir_asks[0])
    assert cluster.throttled_when_dir_asked[0][("broker", "1")][INTRA_BROKER_RATE] == "1000"
    assert INTRA_BROKER_RATE not in cluster.throttled_when_dir_asked[0][("broker", "2")]
    assert all(not v for v in cluster.configs.values())
    assert state.throttled_brokers == {}
    # Only broker 1's own replica is copied between dirs (broker 3's is made in its dir).
    assert state.dir_bytes_done == state.dir_bytes_total == 400
    assert state.bytes_done == state.bytes_total == 100
    assert "log-dir bytes: 400/400 (100.0%)" in summary(state, clock.time())


def test_a_broker_that_does_not_host_its_replica_yet_is_asked_until_it_accepts(tmp_path: Path) -> None:
    # A broker that ignores the dir it was told before the replica existed (KRaft may place it itself).
    cluster = _cluster(honours_preferred_dir=False)
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan((WITH_BROKER,)), executor.options, clock.time())
    state = executor.submit(executor.observe(state))
    assert cluster.dir_asks[-1] == {("t", 1, 3): DIRS[1]}
    state = executor.run(state)
    assert state.moves[0].status is MoveStatus.DONE and cluster.dir_of(("t", 1, 3)) == DIRS[1]
    assert len(cluster.dir_asks) >= 2 and state.moves[0].dirs_asked == (3,)


def test_a_move_is_not_done_before_its_replica_is_in_its_dir(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=3)
    executor, clock = _executor(cluster, tmp_path)
    state = executor.submit(executor.observe(new_state(cluster, PLAN, executor.options, clock.time())))
    clock.sleep(1)
    state = executor.round(state)
    assert state.moves[0].status is MoveStatus.IN_FLIGHT
    assert 0 < state.moves[0].dir_progress_bytes < 400 and ("t", 0, 1) in cluster.futures


def test_an_execution_stopped_mid_copy_resumes_from_its_state_file_without_asking_again(
    tmp_path: Path,
) -> None:
    cluster = _cluster(ticks_to_finish=4)
    first, clock = _executor(cluster, tmp_path)
    first.round(first.observe(new_state(cluster, PLAN, first.options, clock.time())))
    asked = len(cluster.dir_asks)
    clock.sleep(1)

    saved = load_state(tmp_path / "state.json")  # the process died here
    assert saved.moves[0].log_dirs == (DIRS[1], "any") and saved.moves[0].status is MoveStatus.IN_FLIGHT
    assert INTRA_BROKER_RATE in saved.throttled_brokers["1"]
    second, _ = _executor(cluster, tmp_path)
    second.clock, second.sleep = clock.time, clock.sleep
    state = second.run(saved)
    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 2
    # Broker 1's copy was under way: never asked again.
    assert all(("t", 0, 1) not in asks for asks in cluster.dir_asks[asked:])
    assert all(not v for v in cluster.configs.values())


def test_a_dir_the_broker_lost_mid_execution_fails_the_move_and_leaves_no_throttle(tmp_path: Path) -> None:
    cluster = _cluster()
    cluster.offline_dirs.add((1, DIRS[1]))
    executor, clock = _executor(cluster, tmp_path, settle_timeout_s=2.0)
    state = new_state(
        cluster,
        ReassignmentPlan((Reassignment("t", 0, (1, 2), ("any", DIRS[1])),)),
        executor.options,
        clock.time(),
    )
    state = replace(state, moves=(replace(state.moves[0], log_dirs=(DIRS[1], "any")),))
    with pytest.raises(ExecutionError, match=re.escape("broker 1 to /data/1: KafkaStorageError")):
        executor.run(state)
    assert all(not v for v in cluster.configs.values())


def test_cancel_stops_a_copy_between_dirs_and_removes_the_intra_broker_throttle(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=5)
    executor, clock = _executor(cluster, tmp_path)
    state = executor.submit(
        executor.observe(new_state(cluster, ReassignmentPlan((DIR_ONLY,)), executor.options, clock.time()))
    )
    assert ("t", 0, 1) in cluster.futures and cluster.configs[("broker", "1")] == {INTRA_BROKER_RATE: "1000"}

    state = cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)
    assert state.moves[0].status is MoveStatus.CANCELLED
    assert cluster.futures == {} and cluster.dir_of(("t", 0, 1)) == DIRS[0]
    assert all(not v for v in cluster.configs.values())


def test_a_plan_naming_an_offline_dir_is_refused_naming_the_field() -> None:
    cluster = _cluster()
    cluster.offline_dirs.add((1, DIRS[1]))
    with pytest.raises(
        InputError, match=re.escape(f"plan: t-0.log_dirs: log dir '{DIRS[1]}' of broker 1 is offline")
    ):
        check_plan(PLAN, cluster.broker_ids(), cluster.partitions(), cluster.log_dirs(cluster.brokers))


def test_a_move_in_steps_puts_its_replica_in_its_dir_once_its_broker_arrives(tmp_path: Path) -> None:
    cluster = FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("t", 0): (1, 2)},
        sizes={("t", 0): 100},
        honours_preferred_dir=False,
    )
    executor, clock = _executor(cluster, tmp_path, replicas_at_a_time=1)
    plan = ReassignmentPlan((Reassignment("t", 0, (3, 4), (DIRS[1], DIRS[1])),))
    state = executor.run(new_state(cluster, plan, executor.options, clock.time()))
    assert state.moves[0].status is MoveStatus.DONE and cluster.replicas[("t", 0)] == (3, 4)
    assert cluster.dir_of(("t", 0, 3)) == DIRS[1] and cluster.dir_of(("t", 0, 4)) == DIRS[1]
    # Each broker was asked only once it was in the step's replicas.
    assert all(set(asks) <= {("t", 0, b) for b in (3, 4)} for asks in cluster.dir_asks)
    assert all(not v for v in cluster.configs.values())
