"""Log dirs (JBOD) through KafkaAdmin on the real Kafka bed, whose brokers have two log dirs each:
DescribeLogDirs names each replica's dir and each dir's size, and AlterReplicaLogDirs moves a replica
between a broker's dirs under the intra-broker throttle, with every message kept and the throttle
removed after; and Kafka's own kafka-reassign-partitions tool executes a plan whose log_dirs the
planner wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.support.kafka_checks import Writer, assert_no_throttle_left, create_topic, delete_topic
from tests.support.messages import consume_digest

from kafka_balancer.cli import main
from kafka_balancer.kafka.admin import KafkaAdmin, LogDirState
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


def test_kafkas_own_tool_executes_a_plan_that_moves_replicas_between_log_dirs(
    kafka_bed: KafkaBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with written_topic(kafka_bed, "logdirplan", [[1, 2]] * 4, 1_000, 300) as (topic, admin):
        dirs = admin.log_dirs(sorted(kafka_bed.racks))
        # Sizes made up so that each broker's dirs are far apart: a 10 GB replica in the broker's
        # first dir, 1 GB elsewhere; the plan must then move replicas between the dirs of a broker.
        first = {b: sorted(d.path for d in ds)[0] for b, ds in dirs.items()}
        partitions = []
        for number in range(4):
            where = {b: _dir_of(dirs[b], (topic, number))[0] for b in (1, 2)}
            disk = 1.0e10 if where[1] == first[1] else 1.0e9
            partitions.append(
                {
                    "topic": topic,
                    "partition": number,
                    "replicas": [1, 2],
                    "leader": 1,
                    "load": {"disk": disk, "networkIn": 1.0e3, "networkOut": 1.0e3, "cpu": 0.0},
                    "logDirs": [where[1], where[2]],
                }
            )
        brokers = [
            {
                "id": b,
                "rack": rack,
                "capacity": {"disk": 1.0e12, "networkIn": 1.0e8, "networkOut": 1.0e8, "cpu": 8},
                "logDirs": [{"path": d.path, "capacity": 1.0e11, "online": d.online} for d in dirs[b]],
            }
            for b, rack in sorted(kafka_bed.racks.items())
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
        planned = json.loads(plan.read_text())["partitions"]
        targets = {
            (entry["partition"], b): path
            for entry in planned
            for b, path in zip(entry["replicas"], entry["log_dirs"], strict=True)
            if path != "any"
        }
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

        def done() -> bool:
            now = admin.log_dirs([1, 2])
            return all(_dir_of(now[b], (topic, p)) == [path] for (p, b), path in targets.items()) and not any(
                d.future for ds in now.values() for d in ds if any(tp[0] == topic for tp in d.future)
            )

        wait_until(done, timeout_s=60, what=f"every planned log-dir move of {topic} carried out")
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
