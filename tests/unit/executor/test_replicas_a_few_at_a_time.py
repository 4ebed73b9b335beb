"""Moving a partition's replicas a few at a time (``--replicas-at-a-time``), against the in-memory fake."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import MoveStatus, load_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.kafka.steps import next_step
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster

TP = ("t", 0)
SIZE = 900


def _cluster() -> FakeKafkaCluster:
    return FakeKafkaCluster(brokers=frozenset(range(1, 7)), replicas={TP: (1, 2, 3)}, sizes={TP: SIZE})


def _executor(cluster: FakeKafkaCluster, tmp_path: Path, at_a_time: int) -> tuple[Executor, FakeClock]:
    clock = FakeClock(cluster)
    options = ExecuteOptions(throttle=1000, replicas_at_a_time=at_a_time)
    executor = Executor(
        cluster, tmp_path / "state.json", options, log=lambda _: None, clock=clock.time, sleep=clock.sleep
    )
    return executor, clock


def _submitted_targets(cluster: FakeKafkaCluster) -> list[tuple[int, ...]]:
    return [target for batch in cluster.submitted for tp, target in batch.items() if tp == TP and target]


def test_steps_reach_the_plan_adding_at_most_n_replicas_each_and_keep_the_leader_until_the_last() -> None:
    rng = random.Random(5)
    for _ in range(300):
        rf = rng.randint(1, 5)
        brokers = rng.sample(range(1, 11), 2 * rf)
        current = tuple(brokers[:rf])
        final = tuple(rng.sample(brokers, rf))
        at_a_time = rng.randint(1, rf)
        arriving = len(set(final) - set(current))
        steps = 0
        while current != final:
            step = next_step(current, final, at_a_time)
            assert len(step) == rf and len(set(step)) == rf
            assert 0 < len(set(step) - set(current)) <= at_a_time or (
                step == final and set(step) == set(current)
            )
            if step != final:
                assert step[0] == current[0]  # the leader's slot changes only in the last step
            current, steps = step, steps + 1
        assert steps <= max(1, -(-arriving // at_a_time))


def test_zero_means_one_reassignment_for_the_whole_move() -> None:
    assert next_step((1, 2, 3), (4, 5, 6), 0) == (4, 5, 6)
    assert next_step((1, 2, 3), (4, 5, 6), 3) == (4, 5, 6)


def test_one_replica_at_a_time_moves_a_whole_partition_in_three_reassignments(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, at_a_time=1)
    state = executor.run(
        new_state(
            cluster, ReassignmentPlan((Reassignment("t", 0, (4, 5, 6)),)), executor.options, clock.time()
        )
    )

    targets = _submitted_targets(cluster)
    assert len(targets) == 3 and targets[-1] == (4, 5, 6)
    before: tuple[int, ...] = (1, 2, 3)
    for target in targets:
        assert len(set(target) - set(before)) == 1  # never more than RF + 1 replicas at once
        before = target
    assert cluster.replicas[TP] == (4, 5, 6) and cluster.leader(TP) == 4
    [move] = state.moves
    assert move.status is MoveStatus.DONE and state.bytes_done == state.bytes_total == 3 * SIZE
    assert all(not v for v in cluster.configs.values())


def test_all_at_once_is_one_reassignment(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, at_a_time=0)
    executor.run(
        new_state(
            cluster, ReassignmentPlan((Reassignment("t", 0, (4, 5, 6)),)), executor.options, clock.time()
        )
    )
    assert _submitted_targets(cluster) == [(4, 5, 6)]


def _finish_in_flight(cluster: FakeKafkaCluster, clock: FakeClock) -> None:
    for _ in range(cluster.ticks_to_finish):
        clock.sleep(1.0)


def test_progress_counts_the_steps_done_and_the_one_in_flight(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, at_a_time=1)
    state = new_state(
        cluster, ReassignmentPlan((Reassignment("t", 0, (4, 5, 6)),)), executor.options, clock.time()
    )
    assert state.bytes_total == 3 * SIZE and state.bytes_done == 0
    state = executor.submit(executor.observe(state))
    _finish_in_flight(cluster, clock)
    state = executor.submit(executor.observe(state))  # the first step done, the second submitted

    [move] = state.moves
    assert (move.source, move.target, move.status) == ((1, 2, 6), (1, 5, 6), MoveStatus.IN_FLIGHT)
    assert (move.original, move.final) == ((1, 2, 3), (4, 5, 6))
    assert state.with_move(replace(move, progress_bytes=SIZE // 3)).bytes_done == SIZE + SIZE // 3


def test_a_killed_executor_resumes_between_steps_without_redoing_one(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, at_a_time=1)
    state = new_state(
        cluster, ReassignmentPlan((Reassignment("t", 0, (4, 5, 6)),)), executor.options, clock.time()
    )
    state = executor.commit(executor.submit(executor.observe(state)))
    _finish_in_flight(cluster, clock)  # the first step finishes while nobody watches
    assert cluster.replicas[TP] == (1, 2, 6)

    resumed, clock = _executor(cluster, tmp_path, at_a_time=0)  # the state file's setting wins
    resumed.run(load_state(tmp_path / "state.json"))
    assert _submitted_targets(cluster) == [(1, 2, 6), (1, 5, 6), (4, 5, 6)]
    assert cluster.replicas[TP] == (4, 5, 6)


def test_cancel_between_steps_leaves_a_complete_replica_set_and_says_where(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, at_a_time=1)
    state = new_state(
        cluster, ReassignmentPlan((Reassignment("t", 0, (4, 5, 6)),)), executor.options, clock.time()
    )
    state = executor.submit(executor.observe(state))
    _finish_in_flight(cluster, clock)
    state = executor.submit(executor.observe(state))  # the second step in flight
    assert TP in cluster.ongoing

    state = cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)
    [move] = state.moves
    assert cluster.ongoing == {} and cluster.replicas[TP] == (1, 2, 6)
    assert move.status is MoveStatus.CANCELLED
    assert move.reason == "cancelled between steps, at replicas [1, 2, 6]"
    assert all(not v for v in cluster.configs.values())


def test_steps_keep_a_partition_spread_over_its_racks_where_the_plan_allows(tmp_path: Path) -> None:
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    cluster = replace(_cluster(), racks=racks)
    executor, clock = _executor(cluster, tmp_path, at_a_time=1)
    # Pairing by position alone would first put 6 (c) beside 1 (a) and 2 (b) only after 3 (c) left
    # for 5 (b): two replicas in rack b while that step copies.
    executor.run(
        new_state(
            cluster, ReassignmentPlan((Reassignment("t", 0, (4, 6, 5)),)), executor.options, clock.time()
        )
    )

    targets = _submitted_targets(cluster)
    assert len(targets) == 3 and targets[-1] == (4, 6, 5)
    for target in targets:
        assert {racks[b] for b in target} == {"a", "b", "c"}, targets
    assert cluster.leader(TP) == 4


def test_steps_without_racks_follow_the_plans_order() -> None:
    assert next_step((1, 2), (3, 4), 1) == (1, 4)
    assert next_step((1, 2), (3, 4), 1, {1: "a", 2: "b", 3: "c", 4: "a"}) == (1, 3)
