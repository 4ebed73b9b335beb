"""Log dirs (JBOD) through KafkaAdmin on the real Kafka bed, whose brokers have two log dirs each:
DescribeLogDirs names each replica's dir and each dir's size, and AlterReplicaLogDirs moves a replica
between a broker's dirs under the intra-broker throttle, with every message kept and the throttle
removed after; and Kafka's own kafka-reassign-partitions tool executes a plan whose log_dirs the
planner wrote."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.executor_cli import cli, read_state
from tests.support.kafka_checks import (
    Writer,
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    throttles_left,
    under_replicated,
    writing_and_sampling,
)
from tests.support.messages import consume_digest

from kafka_balancer.cli import main
from kafka_balancer.kafka.admin import KafkaAdmin, LogDirState, PartitionState
from kafka_balancer_dev.localbed.kafka import LOG_DIRS_PER_BROKER, REASSIGN_PARTITIONS, KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

INTRA_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"


def _dir_of(dirs: tuple[LogDirState, ...], tp: tuple[str, int]) -> list[str]:
    return [d.path for d in dirs if tp in d.replicas]


@contextmanager
def written_topic(
    bed: KafkaBed, name: str, assignment: list[list[int]], messages: int, size: int
) -> Iterator[tuple[str, KafkaAdmin]]:
    """A topic with ``messages`` written and an admin client, for the block; after it every message
    must read back intact, then the topic is deleted."""
    topic = create_topic(bed, name, assignment)
    writer = Writer(bed, topic)
    writer.write(messages, size)
    admin = KafkaAdmin(bed.bootstrap_servers)
    try:
        yield topic, admin
    finally:
        admin.close()
    assert consume_digest(bed.bootstrap_servers, topic, writer.sent) == writer.result()
    delete_topic(bed, topic)


def test_a_replica_moves_between_the_log_dirs_of_its_broker_with_every_message_kept(
    kafka_bed: KafkaBed,
) -> None:
    with written_topic(kafka_bed, "logdirs", [[1, 2]], 2_000, 500) as (topic, admin):
        tp = (topic, 0)
        dirs = admin.log_dirs([1, 2])
        # The collector's view: each broker's dirs, online, with their volume's size, and the one
        # dir that holds each replica (sizes reach the leader's log once it is flushed to the dir).
        assert sorted(dirs) == [1, 2]
        for broker in (1, 2):
            assert len(dirs[broker]) == LOG_DIRS_PER_BROKER
            assert all(d.online and d.total_bytes is not None and d.total_bytes > 0 for d in dirs[broker])
            assert len(_dir_of(dirs[broker], tp)) == 1
        [source] = _dir_of(dirs[1], tp)
        [target] = [d.path for d in dirs[1] if d.path != source]

        admin.alter_configs("broker", "1", {INTRA_THROTTLE: "10000000"})
        try:
            assert admin.alter_replica_log_dirs({(topic, 0, 1): target}) == {}

            def moved() -> bool:
                now = admin.log_dirs([1])[1]
                return _dir_of(now, tp) == [target] and all(tp not in d.future for d in now)

            wait_until(moved, timeout_s=60, what=f"{topic}-0 in {target} on broker 1, no future replica left")
        finally:
            admin.alter_configs("broker", "1", {}, [INTRA_THROTTLE])
        assert_no_throttle_left(kafka_bed, topic)
        # Broker 2's replica stayed where it was.
        assert _dir_of(admin.log_dirs([2])[2], tp) == _dir_of(dirs[2], tp)


def _planned_between_dirs(
    bed: KafkaBed,
    admin: KafkaAdmin,
    topic: str,
    count: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> Path:
    """A plan from ``kafka-balancer plan`` that moves replicas of ``topic``'s first ``count`` partitions
    (on brokers 1 and 2) between the log dirs of their brokers, on the bed's real dirs."""
    dirs = admin.log_dirs(sorted(bed.racks))
    first = {b: sorted(d.path for d in ds)[0] for b, ds in dirs.items()}
    where = {number: {b: _dir_of(dirs[b], (topic, number))[0] for b in (1, 2)} for number in range(count)}
    # Sizes made up so that broker 1's dirs are far apart and one move between them brings them
    # closer: where Kafka spread the partitions evenly over its dirs, a 10 GB replica in its first
    # dir and 1 GB elsewhere; where it did not, 1 GB each.
    in_first = sum(1 for number in range(count) if where[number][1] == first[1])
    even = abs(2 * in_first - count) < 2
    partitions = []
    for number in range(count):
        disk = 1.0e10 if even and where[number][1] == first[1] else 1.0e9
        partitions.append(
            {
                "topic": topic,
                "partition": number,
                "replicas": [1, 2],
                "leader": 1,
                "load": {"disk": disk, "networkIn": 1.0e3, "networkOut": 1.0e3, "cpu": 0.0},
                "logDirs": [where[number][1], where[number][2]],
            }
        )
    brokers = [
        {
            "id": b,
            "rack": rack,
            "capacity": {"disk": 1.0e12, "networkIn": 1.0e8, "networkOut": 1.0e8, "cpu": 8},
            "logDirs": [{"path": d.path, "capacity": 1.0e11, "online": d.online} for d in dirs[b]],
        }
        for b, rack in sorted(bed.racks.items())
    ]
    snap = tmp_path / "snapshot.json"
    snap.write_text(json.dumps({"version": 1, "brokers": brokers, "partitions": partitions}))
    goals = tmp_path / "goals.yaml"
    goals.write_text(
        "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancerGoal\nmetadata: {name: disks}\n"
        "spec: {type: IntraBrokerDiskDistribution, rangePercent: 10}\n"
    )
    plan = tmp_path / "plan.json"
    code = main(["plan", "--snapshot", str(snap), "--goals", str(goals), "--output", str(plan)])
    assert code == 0, capsys.readouterr().err
    return plan


def _dir_targets(plan: Path) -> dict[tuple[int, int], str]:
    """(partition, broker) → the log dir the plan names for that replica."""
    return {
        (entry["partition"], b): path
        for entry in json.loads(plan.read_text())["partitions"]
        for b, path in zip(entry["replicas"], entry.get("log_dirs", []), strict=False)
        if path != "any"
    }


def _all_in_their_dirs(admin: KafkaAdmin, topic: str, targets: dict[tuple[int, int], str]) -> bool:
    """Every planned replica in its dir and no future replica of ``topic`` left on any broker."""
    now = admin.log_dirs(sorted({b for _, b in targets} | {1, 2}))
    placed = all(_dir_of(now[b], (topic, p)) == [path] for (p, b), path in targets.items())
    return placed and not any(tp[0] == topic for ds in now.values() for d in ds for tp in d.future)


def test_kafkas_own_tool_executes_a_plan_that_moves_replicas_between_log_dirs(
    kafka_bed: KafkaBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with written_topic(kafka_bed, "logdirplan", [[1, 2]] * 4, 1_000, 300) as (topic, admin):
        plan = _planned_between_dirs(kafka_bed, admin, topic, 4, tmp_path, capsys)
        planned = json.loads(plan.read_text())["partitions"]
        targets = _dir_targets(plan)
        assert targets, planned

        execute = kafka_bed.run_tool(
            REASSIGN_PARTITIONS,
            [
                "--execute",
                "--reassignment-json-file",
                str(plan),
                "--replica-alter-log-dirs-throttle",
                "10000000",
            ],
        )
        assert execute.returncode == 0, execute.stderr

        wait_until(
            lambda: _all_in_their_dirs(admin, topic, targets),
            timeout_s=60,
            what=f"every planned log-dir move of {topic} carried out",
        )
        # --verify sees the moves done and removes the throttles --execute set.
        verify = kafka_bed.run_tool(REASSIGN_PARTITIONS, ["--verify", "--reassignment-json-file", str(plan)])
        assert verify.returncode == 0, verify.stderr
        assert "is completed" in verify.stdout and "is still in progress" not in verify.stdout, verify.stdout
        assert_no_throttle_left(kafka_bed, topic)


def test_the_snapshot_command_reports_each_replicas_log_dir(
    kafka_bed: KafkaBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = create_topic(kafka_bed, "logdirsnap", [[1, 2], [2, 3], [3, 1]])
    output = tmp_path / "snapshot.json"
    flags = ["--window", "2s", "--interval", "1s", "--disk-capacity", "1e12", "--network-capacity", "1e8"]
    code = main(
        [
            "snapshot",
            "--bootstrap-server",
            kafka_bed.bootstrap_servers,
            *flags,
            "--cpu-capacity",
            "8",
            "--output",
            str(output),
        ]
    )
    assert code == 0, capsys.readouterr().err
    document = json.loads(output.read_text())
    admin = KafkaAdmin(kafka_bed.bootstrap_servers)
    try:
        dirs = admin.log_dirs(sorted(kafka_bed.racks))
    finally:
        admin.close()
    for broker in document["brokers"]:
        listed = dirs[broker["id"]]
        assert [d["path"] for d in broker["logDirs"]] == [d.path for d in listed]
        assert [d["capacity"] for d in broker["logDirs"]] == [float(d.total_bytes or 0) for d in listed]
        assert all(d["online"] for d in broker["logDirs"]) and len(listed) == LOG_DIRS_PER_BROKER
    mine = [p for p in document["partitions"] if p["topic"] == topic]
    assert len(mine) == 3
    for p in mine:
        assert p["logDirs"] == [_dir_of(dirs[b], (topic, p["partition"]))[0] for b in p["replicas"]]
    delete_topic(kafka_bed, topic)


def test_our_executor_moves_replicas_between_log_dirs_and_brokers_throttled_with_every_message_kept(
    kafka_bed: KafkaBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Kafka lets about 10 s worth of a throttle's rate through at once (its quota's window): at
    # 250 kB/s a 2.5 MB replica copies half at once, then the rest at the rate.
    throttle = 250_000
    # About 12.5 MB over five partitions on brokers 1 and 2; partition 4 moves to broker 3.
    topic = create_topic(kafka_bed, "logdirexec", [[1, 2]] * 5)
    writer = Writer(kafka_bed, topic)
    writer.write(25_000, 500)
    admin = KafkaAdmin(kafka_bed.bootstrap_servers)
    try:
        plan = _planned_between_dirs(kafka_bed, admin, topic, 4, tmp_path, capsys)
        document = json.loads(plan.read_text())
        [third_dir, _] = sorted(d.path for d in admin.log_dirs([3])[3])[::-1]
        document["partitions"].append(
            {"topic": topic, "partition": 4, "replicas": [3, 2], "log_dirs": [third_dir, "any"]}
        )
        plan.write_text(json.dumps(document))
        targets = _dir_targets(plan)
        assert (4, 3) in targets and any(p != 4 for p, _ in targets), document
        state = tmp_path / "state.json"

        intra_rates: set[str] = set()

        def sample() -> None:
            configs = admin.dynamic_configs("broker", ["1", "2", "3"])
            intra_rates.update(c[INTRA_THROTTLE] for c in configs.values() if INTRA_THROTTLE in c)

        with writing_and_sampling(writer, sample, 0.1):
            code = main(
                ["execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
                 "--state", str(state), "--throttle", str(throttle), "--poll-interval", "0.5",
                 "--timeout-per-move", "60"]
            )  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 0, (out, err)

        # Every planned replica in its dir, no future replica left, the replicas and leaders as planned.
        assert _all_in_their_dirs(admin, topic, targets)
        now = admin.partitions([topic])
        for entry in document["partitions"]:
            replicas = tuple(entry["replicas"])
            assert now[(topic, entry["partition"])] == PartitionState(
                replicas, replicas[0], frozenset(replicas)
            )
        assert [p for p in under_replicated(kafka_bed) if p.startswith(f"{topic}-")] == []
        # The copies between dirs ran under our rate, which is gone from every broker now.
        assert intra_rates == {str(throttle)}
        assert_no_throttle_left(kafka_bed, topic)
        assert "log-dir bytes:" in out

        doc = json.loads(state.read_text())
        assert {m["status"] for m in doc["moves"]} == {"done"}
        assert doc["throttles"]["brokers"] == {} and doc["dirBytesDone"] == doc["dirBytesTotal"] > 0
        between_dirs = [m for m in doc["moves"] if m["source"] == m["target"]]
        took = max(m["finishedAt"] for m in between_dirs) - min(m["startedAt"] for m in between_dirs)
        megabytes = doc["dirBytesTotal"] / 1e6
        print(
            f"\n{len(between_dirs)} move(s) between log dirs: {megabytes:.1f} MB in {took:.1f}s "
            f"({megabytes / took:.2f} MB/s) at a throttle of {throttle / 1e6:.2f} MB/s per broker"
        )
    finally:
        admin.close()
    # Every message written before and during the execution reads back intact.
    assert consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent) == writer.result()
    delete_topic(kafka_bed, topic)


@dataclass(frozen=True)
class DirCopy:
    """An ``execute`` run copying partition 0 of ``topic`` on broker 1 from ``source`` to ``target``."""

    run: subprocess.Popen[str]
    args: list[str]
    state: Path
    source: str
    target: str


def _copying_between_dirs(bed: KafkaBed, admin: KafkaAdmin, topic: str, tmp_path: Path) -> DirCopy:
    """``execute`` of a plan moving broker 1's replica of ``topic``-0 to its other dir, returned once
    the copy is under way (a future replica in the state's progress and in DescribeLogDirs)."""
    tp = (topic, 0)
    [source] = _dir_of(admin.log_dirs([1])[1], tp)
    [target] = [d.path for d in admin.log_dirs([1])[1] if d.path != source]
    plan = tmp_path / "plan.json"
    entry = {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": [target, "any"]}
    plan.write_text(json.dumps({"version": 1, "partitions": [entry]}))
    state = tmp_path / "state.json"
    args = ["execute", "--plan", str(plan), "--bootstrap-server", bed.bootstrap_servers]
    args += ["--state", str(state), "--throttle", "100000", "--poll-interval", "0.3"]
    run = cli(*args)

    def copying() -> bool:
        moves = read_state(state).get("moves", [])
        return run.poll() is not None or any(m["dirProgressBytes"] > 0 for m in moves)

    try:
        wait_until(copying, timeout_s=60, what="a copy between log dirs under way")
        assert run.poll() is None, run.communicate()
        assert any(tp in d.future for d in admin.log_dirs([1])[1])
    except BaseException:
        run.kill()
        run.communicate(timeout=30)
        raise
    return DirCopy(run, args, state, source, target)


# One partition on brokers 1 and 2 with about 6 MB (messages, bytes each): at 100 kB/s Kafka lets about
# 1 MB through at once, then copies for about a minute, so the copy is caught under way.
ABOUT_6_MB = (12_000, 500)


def test_a_cancelled_copy_between_log_dirs_leaves_the_replica_where_it_was_and_no_throttle(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with written_topic(kafka_bed, "logdircancel", [[1, 2]], *ABOUT_6_MB) as (topic, admin):
        tp = (topic, 0)
        copy = _copying_between_dirs(kafka_bed, admin, topic, tmp_path)
        try:
            cancel = cli(
                "cancel", "--state", str(copy.state), "--bootstrap-server", kafka_bed.bootstrap_servers
            )
            out, err = cancel.communicate(timeout=180)
            assert cancel.returncode == 0, err
            assert copy.run.wait(timeout=60) == 1
        finally:
            copy.run.kill()
            copy.run.communicate(timeout=30)

        assert [m["status"] for m in read_state(copy.state)["moves"]] == ["cancelled"]
        assert "log-dir bytes:" in out

        def left_where_it_was() -> bool:
            now = admin.log_dirs([1])[1]
            return _dir_of(now, tp) == [copy.source] and all(tp not in d.future for d in now)

        wait_until(
            left_where_it_was, timeout_s=30, what=f"{topic}-0 in {copy.source}, its future replica dropped"
        )
        assert_no_throttle_left(kafka_bed, topic)
        assert [p for p in under_replicated(kafka_bed) if p.startswith(f"{topic}-")] == []


def test_an_executor_killed_mid_copy_between_log_dirs_resumes_and_finishes(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with written_topic(kafka_bed, "logdirresume", [[1, 2]], *ABOUT_6_MB) as (topic, admin):
        tp = (topic, 0)
        copy = _copying_between_dirs(kafka_bed, admin, topic, tmp_path)
        copy.run.send_signal(signal.SIGKILL)
        copy.run.communicate(timeout=30)
        assert throttles_left(kafka_bed, topic) != [], "the killed run should have left its throttle"

        second = cli(*copy.args)
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, err
        assert "resuming" in out
        [move] = read_state(copy.state)["moves"]
        assert move["status"] == "done" and move["dirsAsked"] == [1]
        now = admin.log_dirs([1])[1]
        assert _dir_of(now, tp) == [copy.target] and all(tp not in d.future for d in now)
        assert_no_throttle_left(kafka_bed, topic)
        assert [p for p in under_replicated(kafka_bed) if p.startswith(f"{topic}-")] == []
