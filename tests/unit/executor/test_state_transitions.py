"""Executor state transitions against an in-memory fake cluster: throttles, resume, stuck moves, refusals."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kafka_balancer.cli import main
from kafka_balancer.errors import ExecutionError, InputError
from kafka_balancer.formats.plan_file import read_plan
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import ExecutionState, MoveOrder, MoveStatus, load_state, save_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, new_state
from kafka_balancer.kafka.plan_check import check_plan
from kafka_balancer.kafka.progress import summary
from kafka_balancer.kafka.throttle import sync_throttles
from kafka_balancer.model.plan import Reassignment, ReassignmentPlan
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster

RATE = "leader.replication.throttled.rate"


def _cluster(**extra: object) -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset({1, 2, 3, 4}),
        replicas={("t", 0): (1, 2), ("t", 1): (1, 2), ("u", 0): (3, 4)},
        sizes={("t", 0): 500, ("t", 1): 100, ("u", 0): 50},
        **extra,  # type: ignore[arg-type]
    )


MOVES = (
    Reassignment("t", 0, (3, 1)),
    Reassignment("t", 1, (2, 4)),
    Reassignment("u", 0, (4, 3)),  # leadership only
)
PLAN = ReassignmentPlan(MOVES)
# Every move copies data (u-0 too): the order decides them all.
DATA_PLAN = ReassignmentPlan((*MOVES[:2], Reassignment("u", 0, (1, 3))))


def _executor(
    cluster: FakeKafkaCluster, tmp_path: Path, log: Callable[[str], None] = lambda _: None, **options: object
) -> tuple[Executor, FakeClock]:
    clock = FakeClock(cluster)
    opts = replace(ExecuteOptions(throttle=1000, poll_interval_s=1.0), **options)  # type: ignore[arg-type]
    executor = Executor(cluster, tmp_path / "state.json", opts, log=log, clock=clock.time, sleep=clock.sleep)
    return executor, clock


def test_every_move_lands_leaders_are_elected_and_throttles_are_removed(tmp_path: Path) -> None:
    cluster = _cluster()
    cluster.configs[("broker", "4")] = {RATE: "777"}  # someone else's throttle
    executor, clock = _executor(cluster, tmp_path)
    state = executor.run(new_state(cluster, PLAN, executor.options, clock.time()))

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 3
    assert cluster.replicas == {("t", 0): (3, 1), ("t", 1): (2, 4), ("u", 0): (4, 3)}
    assert cluster.configs[("broker", "4")] == {RATE: "777"}
    assert all(not v for k, v in cluster.configs.items() if k != ("broker", "4"))
    assert state.bytes_done == state.bytes_total == 500 + 100
    assert load_state(tmp_path / "state.json").finished_at is not None

    first = cluster.throttled_when_submitted[0]
    assert first[("topic", "t")]["follower.replication.throttled.replicas"] in {"0:3", "1:4", "0:3,1:4"}
    assert state.throttled_brokers == {} and state.throttled_topics == {}
    assert "broker 4: leader.replication.throttled.rate" in state.foreign_throttles


@pytest.mark.parametrize(
    ("order", "submitted"),
    [
        (MoveOrder.PLAN, [("u", 0), ("t", 0), ("t", 1)]),
        (MoveOrder.SMALLEST_FIRST, [("u", 0), ("t", 1), ("t", 0)]),
    ],
)
def test_data_moves_are_submitted_one_at_a_time_in_the_order_asked_after_the_reorderings(
    tmp_path: Path, order: MoveOrder, submitted: list[tuple[str, int]]
) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, max_moves=1, order=order)
    executor.run(new_state(cluster, PLAN, executor.options, clock.time()))
    assert [tp for batch in cluster.submitted for tp in batch] == submitted
    # The reordering u-0 copies nothing: it rides along with the first data move, outside max_moves.
    assert [len(batch) for batch in cluster.submitted] == [2, 1]


@pytest.mark.parametrize(
    ("resumed_with", "submitted"),
    [
        (None, [("u", 0), ("t", 1), ("t", 0)]),  # the order the run started with, from the state file
        (MoveOrder.PLAN, [("u", 0), ("t", 0), ("t", 1)]),  # told again: the new order from here on
    ],
)
def test_a_resumed_run_keeps_its_order_unless_given_another(
    tmp_path: Path, resumed_with: MoveOrder | None, submitted: list[tuple[str, int]]
) -> None:
    cluster = _cluster()
    first, clock = _executor(cluster, tmp_path, max_moves=1, order=MoveOrder.SMALLEST_FIRST)
    first.submit(first.observe(new_state(cluster, DATA_PLAN, first.options, clock.time())))
    assert load_state(tmp_path / "state.json").order is MoveOrder.SMALLEST_FIRST

    resumed, _ = _executor(cluster, tmp_path, max_moves=1, order=resumed_with)
    resumed.run(load_state(tmp_path / "state.json"))
    assert [tp for batch in cluster.submitted for tp in batch] == submitted


def test_a_reordered_leader_is_elected_while_the_data_moves_still_copy(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=6)
    lines: list[str] = []
    executor, _ = _executor(cluster, tmp_path, lines.append, max_moves=1)
    state = executor.run(new_state(cluster, PLAN, executor.options, executor.clock()))

    assert [m.status for m in state.moves] == [MoveStatus.DONE] * 3
    assert set(cluster.submitted[0]) == {("t", 0), ("u", 0)}  # max_moves=1 is taken by t-0
    # u-0 led by 4 (its planned leader) while t-0 still copied and t-1 had not started.
    assert cluster.elections[0] == [("u", 0)]
    assert cluster.ongoing_when_elected[0] == {("t", 0)}
    assert len(cluster.submitted) == 2
    assert "electing preferred leaders for 1 partition(s) (leadership first)" in lines
    assert state.moves[2].leader_elected_at is not None
    assert state.moves[0].leader_elected_at is None  # a data move's leader waits for the end


def test_a_resumed_execution_does_not_repeat_the_elections_done(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=6)
    lines: list[str] = []
    first, _ = _executor(cluster, tmp_path, lines.append, max_moves=1)
    state = first.round(first.observe(new_state(cluster, PLAN, first.options, first.clock())))
    while not cluster.elections:
        first.sleep(1.0)
        state = first.round(state)
    cluster.leaders[("u", 0)] = 3  # the leader moved back (its broker restarted): the end elects it

    resumed, _ = _executor(cluster, tmp_path, lines.append, max_moves=1)
    resumed.run(load_state(tmp_path / "state.json"))
    assert lines.count("electing preferred leaders for 1 partition(s) (leadership first)") == 1
    assert cluster.elections == [[("u", 0)], [("u", 0)]]  # once early, once by the end's check
    assert cluster.leader(("u", 0)) == 4


def test_a_move_recorded_in_flight_but_never_submitted_is_submitted_once_on_resume(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, PLAN, executor.options, clock.time())
    crashed = state.with_move(replace(state.moves[0], status=MoveStatus.IN_FLIGHT, started_at=clock.time()))
    crashed = crashed.with_move(replace(state.moves[1], status=MoveStatus.IN_FLIGHT, started_at=clock.time()))
    cluster.ongoing[("t", 1)] = ((2, 4), 1)  # this one Kafka did take before the crash
    save_state(tmp_path / "state.json", crashed)

    executor.run(load_state(tmp_path / "state.json"))
    submissions = [tp for batch in cluster.submitted for tp in batch]
    assert submissions.count(("t", 0)) == 1
    assert ("t", 1) not in submissions


def test_a_move_without_progress_is_cancelled_and_reported_failed(tmp_path: Path) -> None:
    cluster = _cluster(stuck={("t", 0)})
    executor, clock = _executor(cluster, tmp_path, timeout_per_move_s=5.0)
    with pytest.raises(ExecutionError, match="t-0 is failed no progress for 5s"):
        executor.run(new_state(cluster, PLAN, executor.options, clock.time()))
    assert {("t", 0): None} in cluster.submitted
    assert cluster.replicas[("t", 0)] == (1, 2)
    assert all(not v for v in cluster.configs.values())
    failed = load_state(tmp_path / "state.json").moves[0]
    assert failed.status is MoveStatus.FAILED


def test_a_move_to_a_broker_that_left_the_cluster_is_cancelled_after_the_dead_broker_timeout(
    tmp_path: Path,
) -> None:
    cluster = _cluster(stuck={("t", 0)})
    executor, clock = _executor(cluster, tmp_path, timeout_per_move_s=600.0, dead_broker_timeout_s=5.0)
    state = executor.submit(
        executor.observe(new_state(cluster, ReassignmentPlan(MOVES[:1]), executor.options, clock.time()))
    )
    started = clock.time()
    cluster.brokers = frozenset({1, 2, 4})  # 3, the move's destination, goes away

    with pytest.raises(ExecutionError, match="destination broker 3 left the cluster"):
        executor.run(state)
    failed = load_state(tmp_path / "state.json").moves[0]
    assert failed.status is MoveStatus.FAILED
    assert failed.finished_at is not None and 5.0 < failed.finished_at - started <= 7.0
    assert {("t", 0): None} in cluster.submitted
    assert cluster.replicas[("t", 0)] == (1, 2)


def test_a_destination_broker_back_within_the_dead_broker_timeout_keeps_its_move(tmp_path: Path) -> None:
    cluster = _cluster(stuck={("t", 0)})
    executor, clock = _executor(cluster, tmp_path, timeout_per_move_s=600.0, dead_broker_timeout_s=5.0)
    state = executor.submit(
        executor.observe(new_state(cluster, ReassignmentPlan(MOVES[:1]), executor.options, clock.time()))
    )
    cluster.brokers = frozenset({1, 2, 4})
    restarted_at = clock.time() + 3.0

    def sleep(seconds: float) -> None:  # broker 3 restarts after 3 s and catches up
        clock.sleep(seconds)
        if clock.time() >= restarted_at:
            cluster.brokers = frozenset({1, 2, 3, 4})
            cluster.stuck.clear()

    executor.sleep = sleep
    done = executor.run(state)
    assert [m.status for m in done.moves] == [MoveStatus.DONE]
    assert cluster.replicas[("t", 0)] == (3, 1)


def test_foreign_reassignments_and_under_replication_refuse_the_start_unless_forced(tmp_path: Path) -> None:
    cluster = _cluster()
    cluster.ongoing[("u", 0)] = ((3, 1), 0)
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan(MOVES[:2]), executor.options, clock.time())
    with pytest.raises(ExecutionError, match="not started by this execution"):
        executor.run(state)
    assert cluster.submitted == []

    forced, _ = _executor(cluster, tmp_path, force=True)
    assert [m.status for m in forced.run(state).moves] == [MoveStatus.DONE] * 2


def test_a_replica_out_of_the_isr_on_a_live_broker_refuses_the_start_unless_forced(tmp_path: Path) -> None:
    cluster = _cluster(out_of_isr={("u", 0): frozenset({4})})  # broker 4 is up but fell behind
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan(MOVES[:2]), executor.options, clock.time())
    with pytest.raises(
        ExecutionError, match=re.escape("1 partition(s) are under-replicated on live brokers (e.g. u-0)")
    ):
        executor.run(state)
    assert cluster.submitted == []

    forced, _ = _executor(cluster, tmp_path, force=True)
    assert [m.status for m in forced.run(state).moves] == [MoveStatus.DONE] * 2


def test_a_lagging_replica_that_the_plan_moves_away_does_not_hold_back_the_start(tmp_path: Path) -> None:
    # Broker 4 is up, but its replica of u-0 sits on a log dir gone offline: the plan's move is the cure.
    cluster = _cluster(out_of_isr={("u", 0): frozenset({4})})
    executor, clock = _executor(cluster, tmp_path)
    healing = ReassignmentPlan((Reassignment("u", 0, (3, 1)),))
    state = executor.run(new_state(cluster, healing, executor.options, clock.time()))
    assert [m.status for m in state.moves] == [MoveStatus.DONE]
    assert cluster.replicas[("u", 0)] == (3, 1)

    # A plan that keeps the lagging replica where it is still refuses to start.
    cluster = _cluster(out_of_isr={("u", 0): frozenset({4})})
    executor, clock = _executor(cluster, tmp_path)
    keeping = ReassignmentPlan((Reassignment("u", 0, (4, 1)),))
    with pytest.raises(ExecutionError, match=re.escape("under-replicated on live brokers (e.g. u-0)")):
        executor.run(new_state(cluster, keeping, executor.options, clock.time()))


def test_replicas_on_a_dead_broker_do_not_hold_back_the_moves_that_replace_it(tmp_path: Path) -> None:
    cluster = _cluster()
    cluster.replicas[("v", 0)] = (1, 5)
    cluster.sizes[("v", 0)] = 80
    cluster.brokers = frozenset({1, 2, 3, 4})  # broker 5 is down: out of the ISR of what it held
    cluster.out_of_isr[("v", 0)] = frozenset({5})
    cluster.out_of_isr[("u", 0)] = frozenset({5})  # not in the plan: waits for 5 or a later plan
    executor, clock = _executor(cluster, tmp_path)
    state = executor.run(
        new_state(cluster, ReassignmentPlan((Reassignment("v", 0, (1, 3)),)), executor.options, clock.time())
    )
    assert [m.status for m in state.moves] == [MoveStatus.DONE]
    assert cluster.replicas[("v", 0)] == (1, 3)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (Reassignment("nope", 0, (1, 2)), "unknown topic 'nope'"),
        (Reassignment("t", 9, (1, 2)), "unknown partition t-9"),
        (Reassignment("t", 0, (1, 9)), "unknown broker(s) [9]"),
        (Reassignment("t", 0, (1, 2, 3)), "replication factor from 2 to 3"),
        (Reassignment("t", 0, (1, 2), ("/nope", "any")), "t-0.log_dirs: broker 1 has no log dir '/nope'"),
    ],
)
def test_the_plan_is_checked_against_the_cluster(entry: Reassignment, message: str) -> None:
    cluster = _cluster()
    with pytest.raises(InputError) as err:
        check_plan(
            ReassignmentPlan((entry,)),
            cluster.broker_ids(),
            cluster.partitions(),
            cluster.log_dirs(cluster.brokers),
        )
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[", "not JSON"),
        ('{"partitions": {}}', "'partitions' must be a list"),
        ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', "duplicate broker"),
        ('{"partitions": [{"topic": "t", "partition": -1, "replicas": [1]}]}', "partition: must be"),
    ],
)
def test_a_malformed_plan_file_names_the_problem(tmp_path: Path, text: str, message: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(text)
    with pytest.raises(InputError, match=message):
        read_plan(plan)


def test_cancel_stops_our_moves_and_removes_our_throttles(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path, max_moves=1)
    state = new_state(cluster, ReassignmentPlan(MOVES[:2]), executor.options, clock.time())
    state = executor.submit(executor.observe(state))
    assert [m.status for m in state.moves] == [MoveStatus.IN_FLIGHT, MoveStatus.PENDING]
    assert any(cluster.configs.values())

    state = cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)
    assert [m.status for m in state.moves] == [MoveStatus.CANCELLED, MoveStatus.CANCELLED]
    assert cluster.ongoing == {} and cluster.replicas[("t", 0)] == (1, 2)
    assert all(not v for v in cluster.configs.values())
    assert "2 cancelled" in summary(state, clock.time())


def _cancel_a_submitted_move(cluster: FakeKafkaCluster, tmp_path: Path) -> ExecutionState:
    """t-0 placed on (1, 3), its move to (2, 3) submitted, then the execution cancelled."""
    cluster.replicas[("t", 0)] = (1, 3)
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(
        cluster, ReassignmentPlan((Reassignment("t", 0, (2, 3)),)), executor.options, clock.time()
    )
    state = executor.submit(executor.observe(state))
    return cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)


def test_a_cancelled_move_gets_its_original_replica_order_back(tmp_path: Path) -> None:
    cluster = _cluster(reorder_on_cancel=True)
    state = _cancel_a_submitted_move(cluster, tmp_path)

    assert [m.status for m in state.moves] == [MoveStatus.CANCELLED]
    # Without the repair Kafka's cancel leaves (3, 1): broker 3 would become the preferred leader.
    assert cluster.replicas[("t", 0)] == (1, 3)
    assert cluster.ongoing == {}


def test_the_original_order_is_restored_when_metadata_still_shows_the_cancelled_move(tmp_path: Path) -> None:
    # On a loaded bed a broker's metadata showed the in-flight set a moment after the cancel, and the
    # order repair skipped the partition: it stayed (3, 1) with broker 3 as the preferred leader.
    cluster = _cluster(reorder_on_cancel=True, metadata_lag_reads=3)
    state = _cancel_a_submitted_move(cluster, tmp_path)

    assert [m.status for m in state.moves] == [MoveStatus.CANCELLED]
    assert cluster.replicas[("t", 0)] == (1, 3)
    assert cluster.partitions({"t"})[("t", 0)].replicas == (1, 3)


def test_status_reports_bytes_moves_and_an_eta(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan(MOVES[:2]), executor.options, clock.time())
    moving = replace(state.moves[0], status=MoveStatus.IN_FLIGHT, progress_bytes=250)
    text = summary(state.with_move(moving), clock.time() + 10)
    assert "bytes: 250/600" in text
    assert "1 pending, 1 in-flight, 0 done" in text
    assert "ETA: 14s" in text


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_status_prints_the_same_facts_as_a_document_for_scripts(
    tmp_path: Path, output: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan(MOVES[:2]), executor.options, clock.time())
    state = state.with_move(replace(state.moves[0], status=MoveStatus.IN_FLIGHT, progress_bytes=250))
    state = state.with_move(replace(state.moves[1], status=MoveStatus.SKIPPED, reason="topic deleted"))
    path = tmp_path / "plan.json.state.json"
    save_state(path, state)
    monkeypatch.setattr(time, "time", lambda: clock.time() + 10)

    assert main(["status", "--state", str(path), "-o", output]) == 0

    out = capsys.readouterr().out
    document = json.loads(out) if output == "json" else yaml.safe_load(out)
    assert document["bytes"] == {"done": 250, "total": 600}
    assert document["moves"] == {
        "pending": 0,
        "in-flight": 1,
        "done": 0,
        "cancelled": 0,
        "failed": 0,
        "skipped": 1,
    }
    assert (document["finished"], document["etaSeconds"]) == (False, 14.0)
    assert document["problems"] == [
        {"topic": "t", "partition": 1, "status": "skipped", "reason": "topic deleted"}
    ]


def test_metadata_lagging_behind_a_finished_reassignment_is_not_a_failure(tmp_path: Path) -> None:
    cluster = _cluster()
    executor, clock = _executor(cluster, tmp_path)
    state = new_state(cluster, ReassignmentPlan(MOVES[:1]), executor.options, clock.time())
    state = state.with_move(replace(state.moves[0], status=MoveStatus.IN_FLIGHT, started_at=clock.time()))
    cluster.replicas[("t", 0)] = (3, 1, 2)  # no longer listed, metadata still shows the union
    assert executor.observe(state).moves[0].status is MoveStatus.IN_FLIGHT
    cluster.replicas[("t", 0)] = (3, 1)
    assert executor.observe(state).moves[0].status is MoveStatus.DONE
    cluster.replicas[("t", 0)] = (4, 2)  # someone else's change
    assert executor.observe(state).moves[0].status is MoveStatus.SKIPPED


def test_a_removed_throttle_the_brokers_still_show_for_a_moment_is_not_a_failure(tmp_path: Path) -> None:
    cluster = _cluster(stale_config_reads=2)
    executor, clock = _executor(cluster, tmp_path)
    state = executor.run(new_state(cluster, PLAN, executor.options, clock.time()))

    assert state.finished_at is not None
    assert all(not v for v in cluster.configs.values())


def test_a_throttle_still_shown_after_the_settle_timeout_fails_the_verification(tmp_path: Path) -> None:
    cluster = _cluster(stale_config_reads=1000)
    executor, clock = _executor(cluster, tmp_path, settle_timeout_s=5.0)
    with pytest.raises(ExecutionError, match=r"verification failed: .*throttle left: broker 1: "):
        executor.run(new_state(cluster, PLAN, executor.options, clock.time()))


def test_a_resume_with_a_new_throttle_sets_the_new_rate_on_brokers_already_throttled(tmp_path: Path) -> None:
    cluster = _cluster(ticks_to_finish=50)
    executor, clock = _executor(cluster, tmp_path, max_moves=1)
    state = executor.submit(
        executor.observe(new_state(cluster, ReassignmentPlan(MOVES[:1]), executor.options, clock.time()))
    )
    assert {cluster.configs[("broker", b)][RATE] for b in ("1", "2", "3")} == {"1000"}

    resumed, _ = _executor(cluster, tmp_path, max_moves=1, throttle=5000)
    # What each loop of a resumed run does (the run itself would also finish the move).
    sync_throttles(cluster, replace(resumed.observe(state), throttle_rate=5000), resumed.commit)
    assert {cluster.configs[("broker", b)][RATE] for b in ("1", "2", "3")} == {"5000"}


def test_a_throttle_on_a_broker_that_died_is_kept_on_record_and_removed_once_it_is_back(
    tmp_path: Path,
) -> None:
    cluster = _cluster(stuck={("t", 0)})
    executor, clock = _executor(cluster, tmp_path, timeout_per_move_s=5.0, settle_timeout_s=3.0)
    state = executor.submit(
        executor.observe(new_state(cluster, ReassignmentPlan(MOVES[:1]), executor.options, clock.time()))
    )
    assert RATE in cluster.configs[("broker", "3")]
    cluster.brokers = frozenset({1, 2, 4})  # the destination dies mid-move

    with pytest.raises(
        ExecutionError, match=re.escape("broker 3 is down with our leader.replication.throttled.rate")
    ):
        executor.run(state)
    state = load_state(tmp_path / "state.json")
    assert set(state.throttled_brokers) == {"3"}
    assert RATE in cluster.configs[("broker", "3")]  # Kafka kept it: nobody could remove it
    assert not cluster.configs[("broker", "1")] and not cluster.configs[("topic", "t")]

    cluster.brokers = frozenset({1, 2, 3, 4})
    state = cancel_execution(cluster, state, executor.commit, clock=clock.time, sleep=clock.sleep)
    assert state.throttled_brokers == {}
    assert all(not v for v in cluster.configs.values())


def test_a_plan_file_that_is_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_bytes(b'\xff\xfe{"partitions": []}')
    with pytest.raises(InputError, match="not UTF-8 text"):
        read_plan(plan)
