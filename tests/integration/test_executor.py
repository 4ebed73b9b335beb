"""The executor moves partitions on the real Kafka bed: throttled, resumable after SIGKILL, cancellable."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from tests.support.executor_cli import cli, copying, read_state, write_plan
from tests.support.kafka_checks import (
    Writer,
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    extra_broker,
    ongoing_reassignments,
    partitions,
    throttles_left,
    under_replicated,
    writing_and_sampling,
)
from tests.support.messages import consume_digest

from kafka_balancer.cli import main
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.kafka import REASSIGN_PARTITIONS, KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

T = TypeVar("T")


def _in_flight(path: Path) -> bool:
    return any(m["status"] == "in-flight" for m in read_state(path).get("moves", []))


def _assert_as_planned(bed: KafkaBed, topic: str, targets: dict[int, list[int]]) -> None:
    actual = partitions(bed, topic)
    for partition, target in targets.items():
        replicas, leader, isr = actual[partition]
        assert (replicas, leader, isr) == (target, target[0], set(target)), (partition, actual[partition])


def test_a_throttled_plan_moves_data_without_losing_a_message(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = create_topic(kafka_bed, "exec", [[1, 2], [1, 2], [1, 2]])
    writer = Writer(kafka_bed, topic)
    writer.write(12_000, 500)
    targets = {0: [3, 1], 1: [3, 4], 2: [4, 2]}
    plan = write_plan(tmp_path / "plan.json", topic, targets)
    state = tmp_path / "state.json"
    throttle = 1_000_000

    background = threading.Thread(target=writer.write_until_stopped)
    background.start()
    try:
        code = main(
            ["execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
             "--state", str(state), "--throttle", str(throttle), "--max-moves-per-broker", "2",
             "--poll-interval", "0.5"]
        )  # fmt: skip
    finally:
        writer.stop.set()
        background.join(timeout=60)
    assert code == 0

    _assert_as_planned(kafka_bed, topic, targets)
    assert_no_throttle_left(kafka_bed, topic)
    assert ongoing_reassignments(kafka_bed, topic) == []
    verify = kafka_bed.run_tool(REASSIGN_PARTITIONS, ["--verify", "--reassignment-json-file", str(plan)])
    assert verify.returncode == 0, verify.stderr
    for partition in targets:
        assert f"Reassignment of partition {topic}-{partition} is completed" in verify.stdout, verify.stdout

    sent = writer.result()
    received = consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent)
    assert sum(received[0].values()) == writer.sent
    assert received == sent

    doc = read_state(state)
    assert {m["status"] for m in doc["moves"]} == {"done"}
    assert doc["throttles"]["brokers"] == {} and doc["throttles"]["topics"] == {}
    started = min(m["startedAt"] for m in doc["moves"])
    finished = max(m["finishedAt"] for m in doc["moves"])
    rate = doc["bytesTotal"] / (finished - started)
    took = finished - started
    print(f"\nmoved {doc['bytesTotal']} bytes in {took:.1f}s: {rate:.0f} B/s, throttle {throttle} B/s")


def test_a_reordered_leader_is_in_place_while_a_data_move_still_copies(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    topic = create_topic(kafka_bed, "lead", [[1, 2], [3, 4]])
    writer = Writer(kafka_bed, topic)
    # About 2 MB a partition. Kafka lets the first ~10 s worth of the rate through at once (its
    # quota's window), so at 100 kB/s partition 0 copies 1 MB at once, then the rest and what the
    # writer adds meanwhile for ~20 s.
    writer.write(8_000, 500)
    targets = {0: [3, 1], 1: [4, 3]}  # 0 copies to broker 3; 1 only swaps its leader
    plan = write_plan(tmp_path / "plan.json", topic, targets)
    state = tmp_path / "state.json"

    def sample() -> tuple[float, list[int], int]:  # when, partition 0's replicas, partition 1's leader
        now = partitions(kafka_bed, topic)
        return time.time(), now[0][0], now[1][1]

    with writing_and_sampling(writer, sample, 0.1) as seen:
        executor = cli(
            "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
            "--state", str(state), "--throttle", "100000", "--max-moves", "1", "--poll-interval", "0.5",
        )  # fmt: skip
        out, err = executor.communicate(timeout=300)
    assert executor.returncode == 0, (out, err)

    doc = read_state(state)
    started = doc["createdAt"]
    copy_done = next(m["finishedAt"] for m in doc["moves"] if m["partition"] == 0)
    led = next(when for when, _, leader in seen if leader == 4)
    print(
        f"\nreordered leader in place {led - started:.1f}s after the start, "
        f"the copy done after {copy_done - started:.1f}s"
    )
    # Metadata lists the union (3 replicas) while partition 0 copies: partition 1 was led by its
    # planned leader before the copy ended.
    assert any(leader == 4 and len(replicas) == 3 for _, replicas, leader in seen), seen
    assert led < copy_done
    assert "(leadership first)" in out, out

    _assert_as_planned(kafka_bed, topic, targets)
    assert_no_throttle_left(kafka_bed, topic)
    assert consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent) == writer.result()


def test_one_replica_at_a_time_never_copies_two_replicas_of_a_partition_at_once(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    topic = create_topic(kafka_bed, "steps", [[1, 2]])
    writer = Writer(kafka_bed, topic)
    # About 4 MB. Kafka's replication quota averages over its ~11 s window, so up to ~2.8 MB of a
    # step passes at once at 250 kB/s and the rest takes over 5 s: at 500 kB/s a whole step could
    # pass in that burst, between two samples (CI saw [1, 2] then [1, 3], never the union).
    writer.write(8_000, 500)
    plan = write_plan(tmp_path / "plan.json", topic, {0: [3, 4]})
    with writing_and_sampling(writer, lambda: partitions(kafka_bed, topic)[0][0], 0.2) as seen:
        code = main(
            ["execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
             "--state", str(tmp_path / "state.json"), "--throttle", "250000", "--replicas-at-a-time", "1",
             "--poll-interval", "0.3"]
        )  # fmt: skip
    assert code == 0

    _assert_as_planned(kafka_bed, topic, {0: [3, 4]})
    assert_no_throttle_left(kafka_bed, topic)
    # Metadata lists the union while a reassignment copies: at most one replica more than RF, and
    # both steps seen. Racks 1:a 2:b 3:c 4:a, so broker 3 came first (the step [1, 3] spans two
    # racks, [1, 4] would have held both replicas in rack a), then 4 replaced 1.
    assert kafka_bed.racks == {1: "a", 2: "b", 3: "c", 4: "a"}
    assert max(len(replicas) for replicas in seen) == 3, seen
    assert {1, 2, 3} in [set(r) for r in seen] and {1, 3, 4} in [set(r) for r in seen], seen
    assert {1, 2, 4} not in [set(r) for r in seen], seen
    received = consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent)
    assert received == writer.result()


def test_an_executor_killed_mid_run_resumes_and_finishes(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = create_topic(kafka_bed, "resume", [[2, 3], [2, 3], [2, 3]])
    # About 2 MB a partition: a follower fetches at most 1 MB of a partition at once, so each move
    # takes several fetches with the throttle's wait between them and the run is caught mid-copy.
    # (At 1 MB a move could finish in one fetch, between two looks at the state file.)
    Writer(kafka_bed, topic).write(12_000, 500)
    targets = {0: [4, 3], 1: [1, 2], 2: [3, 4]}
    plan = write_plan(tmp_path / "plan.json", topic, targets)
    state = tmp_path / "state.json"
    args = ["execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers]
    args += ["--state", str(state), "--throttle", "300000", "--max-moves", "1", "--poll-interval", "0.3"]

    first = cli(*args, "--order", "smallest-first")
    try:
        wait_until(
            lambda: copying(state) or first.poll() is not None, timeout_s=60, what="a move copying data"
        )
        assert first.poll() is None, first.communicate()
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.communicate(timeout=30)
    assert throttles_left(kafka_bed, topic) != [], "the killed run should have left its throttles"

    second = cli(*args)  # no --order: the resumed run keeps the killed one's
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert "resuming" in out

    _assert_as_planned(kafka_bed, topic, targets)
    assert_no_throttle_left(kafka_bed, topic)
    moves = read_state(state)["moves"]
    assert [m["status"] for m in moves] == ["done"] * len(targets)
    started = sorted(moves, key=lambda m: m["startedAt"])
    assert [m["size"] for m in started] == sorted(m["size"] for m in moves), started


def test_cancel_mid_run_leaves_each_partition_original_or_planned(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    original = [[3, 4], [3, 4], [3, 4]]
    topic = create_topic(kafka_bed, "cancel", original)
    Writer(kafka_bed, topic).write(6_000, 500)
    targets = {0: [1, 4], 1: [2, 3], 2: [1, 2]}
    plan = write_plan(tmp_path / "plan.json", topic, targets)
    state = tmp_path / "state.json"
    executor = cli(
        "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
        "--state", str(state), "--throttle", "100000", "--max-moves", "1", "--poll-interval", "0.3",
    )  # fmt: skip
    try:
        wait_until(
            lambda: _in_flight(state) or executor.poll() is not None, timeout_s=60, what="a move in flight"
        )
        cancel = cli("cancel", "--state", str(state), "--bootstrap-server", kafka_bed.bootstrap_servers)
        _, err = cancel.communicate(timeout=180)
        assert cancel.returncode == 0, err
        assert executor.wait(timeout=60) == 1
    finally:
        executor.kill()
        executor.communicate(timeout=30)

    assert ongoing_reassignments(kafka_bed, topic) == []
    assert_no_throttle_left(kafka_bed, topic)
    statuses = {m["partition"]: m["status"] for m in read_state(state)["moves"]}
    assert "cancelled" in statuses.values()
    expected = {p: target if statuses[p] == "done" else original[p] for p, target in targets.items()}

    def layout() -> dict[int, list[int]]:
        actual = partitions(kafka_bed, topic)
        return {p: list(actual[p][0]) for p in targets}

    # The broker the test asks may show the restored order a moment after the one cancel asked.
    try:
        wait_until(lambda: layout() == expected, timeout_s=30, what="each partition original or planned")
    except BedError:
        pytest.fail(f"replicas {layout()} are neither original nor planned: {expected} (moves {statuses})")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda topic: {"topic": "no-such-topic", "partition": 0, "replicas": [1, 2]}, "unknown topic"),
        (lambda topic: {"topic": topic, "partition": 7, "replicas": [1, 2]}, "unknown partition"),
        (lambda topic: {"topic": topic, "partition": 0, "replicas": [1, 99]}, "unknown broker"),
        (lambda topic: {"topic": topic, "partition": 0, "replicas": [2, 3, 4]}, "replication factor"),
        (lambda topic: {"topic": topic, "partition": 0, "replicas": [3, 3]}, "duplicate broker"),
        (
            lambda topic: {
                "topic": topic,
                "partition": 0,
                "replicas": [1, 2],
                "log_dirs": ["/no/dir", "any"],
            },
            "-0.log_dirs: broker 1 has no log dir '/no/dir'",
        ),
    ],
)
def test_a_malformed_plan_exits_2_before_touching_anything(
    kafka_bed: KafkaBed, tmp_path: Path, change: Callable[[str], dict[str, Any]], message: str
) -> None:
    topic = create_topic(kafka_bed, "bad", [[1, 2], [1, 2]])
    good = {"topic": topic, "partition": 1, "replicas": [3, 4]}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [good, change(topic)]}))
    state = tmp_path / "state.json"
    run = cli(
        "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
        "--state", str(state), "--throttle", "100000",
    )  # fmt: skip
    out, err = run.communicate(timeout=120)
    assert run.returncode == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert "Traceback" not in err
    assert not state.exists()
    assert [r[0] for r in partitions(kafka_bed, topic).values()] == [[1, 2], [1, 2]]
    assert_no_throttle_left(kafka_bed, topic)
    assert ongoing_reassignments(kafka_bed, topic) == []


def test_a_move_to_a_broker_that_died_is_cancelled_and_its_throttle_goes_when_the_broker_is_back(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with extra_broker(kafka_bed, "b") as added:
        topic = create_topic(kafka_bed, "stuck", [[1, 2]])
        try:
            Writer(kafka_bed, topic).write(4_000, 500)
            plan = write_plan(tmp_path / "plan.json", topic, {0: [added, 1]})
            state = tmp_path / "state.json"
            executor = cli(
                "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
                "--state", str(state), "--throttle", "100000", "--dead-broker-timeout", "5",
                "--poll-interval", "0.3",
            )  # fmt: skip
            try:
                wait_until(
                    lambda: copying(state) or executor.poll() is not None,
                    timeout_s=60,
                    what="the move copying data",
                )
                kafka_bed.stop_broker(added)
                _, err = executor.communicate(timeout=180)
            finally:
                executor.kill()
                executor.communicate(timeout=30)
            assert executor.returncode == 1, err
            assert f"destination broker {added} left the cluster" in err, err
            assert "reassignment cancelled" in err, err
            assert f"broker {added} is down with our leader.replication.throttled.rate" in err, err

            [move] = read_state(state)["moves"]
            assert move["status"] == "failed"
            took = move["finishedAt"] - move["progressAt"]
            print(f"\nmove to a dead broker cancelled {took:.1f}s after its last progress")
            assert ongoing_reassignments(kafka_bed, topic) == []
            assert partitions(kafka_bed, topic)[0][0] == [1, 2]
            assert_no_throttle_left(kafka_bed, topic)  # on every broker that is up
            assert list(read_state(state)["throttles"]["brokers"]) == [str(added)]

            # Back after the outage: Kafka kept the rate nobody could remove; cancel removes it.
            kafka_bed.restart_broker(added)
            assert f"{added}: leader.replication.throttled.rate=100000" in throttles_left(kafka_bed, topic)
            cancel = cli("cancel", "--state", str(state), "--bootstrap-server", kafka_bed.bootstrap_servers)
            out, err = cancel.communicate(timeout=120)
            assert cancel.returncode == 0, (out, err)
            assert_no_throttle_left(kafka_bed, topic)
            assert read_state(state)["throttles"]["brokers"] == {}
        finally:
            delete_topic(kafka_bed, topic)


def test_the_partitions_of_a_stopped_broker_move_to_live_brokers_without_losing_a_message(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with extra_broker(kafka_bed, "c") as added:
        topic = create_topic(kafka_bed, "replace", [[1, added], [added, 2]])
        try:
            writer = Writer(kafka_bed, topic)
            writer.write(4_000, 500)
            kafka_bed.stop_broker(added)
            assert {f"{topic}-0", f"{topic}-1"} <= set(under_replicated(kafka_bed))
            # Replacing a dead broker: its partitions are under-replicated, which must not hold the move.
            targets = {0: [1, 3], 1: [3, 2]}
            plan = write_plan(tmp_path / "plan.json", topic, targets)
            executor = cli(
                "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
                "--state", str(tmp_path / "state.json"), "--throttle", "1000000", "--poll-interval", "0.3",
            )  # fmt: skip
            out, err = executor.communicate(timeout=180)
            assert executor.returncode == 0, (out, err)

            _assert_as_planned(kafka_bed, topic, targets)
            assert not {f"{topic}-0", f"{topic}-1"} & set(under_replicated(kafka_bed))
            assert_no_throttle_left(kafka_bed, topic)
            assert consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent) == writer.result()
        finally:
            delete_topic(kafka_bed, topic)
