"""The executor on a shared cluster, on the real bed: a topic of the plan deleted by someone else
mid-copy (during a run, and while the executor was stopped), an execution record edited to name a
compacted topic's configs among its throttles, a broker outside the plan stopped so that the next
batch's partition is under-replicated, and kafka-reassign-partitions.sh run before and during it. A
producer writes to the surviving topic throughout and every message is read back; no throttle and
no reassignment may be left."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from tests.support.executor_cli import cli, copying, read_state
from tests.support.kafka_checks import (
    Traffic,
    Writer,
    admin_of,
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    extra_broker,
    ongoing_reassignments,
    partitions,
    topic_with_traffic,
)

from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

CONFIG_COMMAND = "kafka.admin.ConfigCommand"
# kafka-reassign-partitions.sh's class.
REASSIGN_COMMAND = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TARGETS = {0: [3, 1], 1: [4, 2]}
DELETED = "its topic was deleted during the execution"


@contextmanager
def _two_topics(bed: KafkaBed, tmp_path: Path) -> Iterator[tuple[Traffic, str, Path]]:
    """``kept`` with traffic, ``doomed`` with 4 MB in it, and a plan moving both (doomed first: with
    two moves per broker at a time, its moves copy while kept's wait)."""
    with topic_with_traffic(bed, "kept", [[1, 2], [1, 2]]) as traffic:
        doomed = create_topic(bed, "doomed", [[1, 2], [1, 2]])
        try:
            writer = Writer(bed, doomed)
            writer.write(8_000, 500)
            writer.result()
            moves = [
                {"topic": topic, "partition": p, "replicas": r}
                for topic in (doomed, traffic.topic)
                for p, r in TARGETS.items()
            ]
            plan = tmp_path / "plan.json"
            plan.write_text(json.dumps({"version": 1, "partitions": moves}))
            yield traffic, doomed, plan
        finally:
            if doomed in admin_of(bed).list_topics(timeout=10).topics:
                delete_topic(bed, doomed)


def _execute(bed: KafkaBed, plan: Path, state: Path) -> list[str]:
    args = [
        "execute",
        "--plan",
        str(plan),
        "--bootstrap-server",
        bed.bootstrap_servers,
        "--state",
        str(state),
    ]
    # Two moves per broker at a time: _two_topics' plan copies doomed's moves while kept's wait.
    return [*args, "--throttle", "100000", "--max-moves-per-broker", "2", "--poll-interval", "0.3"]


def _assert_kept_placed_and_nothing_left(bed: KafkaBed, traffic: Traffic, doomed: str, state: Path) -> None:
    moves = {(m["topic"], m["partition"]): m for m in read_state(state)["moves"]}
    # A copy may just have finished when the topic went (the deletion waits for the metadata to drop it).
    ended = sorted((moves[(doomed, p)]["status"], moves[(doomed, p)]["reason"]) for p in TARGETS)
    assert ended in ([("done", ""), ("skipped", DELETED)], [("skipped", DELETED)] * 2), ended
    for p in TARGETS:
        assert moves[(traffic.topic, p)]["status"] == "done", moves[(traffic.topic, p)]
    actual = partitions(bed, traffic.topic)
    assert {p: actual[p][0] for p in TARGETS} == TARGETS
    assert ongoing_reassignments(bed, traffic.topic) == [] and ongoing_reassignments(bed, doomed) == []
    assert_no_throttle_left(bed, traffic.topic)
    traffic.assert_all_read_back()


def test_a_topic_deleted_mid_copy_skips_its_moves_and_the_rest_of_the_plan_completes(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with _two_topics(kafka_bed, tmp_path) as (traffic, doomed, plan):
        state = tmp_path / "state.json"
        executor = cli(*_execute(kafka_bed, plan, state))
        try:
            wait_until(lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy")
            delete_topic(kafka_bed, doomed)
            deleted = time.monotonic()
            out, err = executor.communicate(timeout=300)
            took = time.monotonic() - deleted
        finally:
            executor.kill()
            executor.communicate(timeout=30)
        print(f"\ntopic deleted mid-copy; execute finished {took:.1f}s later")
        assert executor.returncode == 0, (out, err)
        assert f": skipped: {DELETED}" in out, out
        assert "0 cancelled, 0 failed" in out, out
        _assert_kept_placed_and_nothing_left(kafka_bed, traffic, doomed, state)


def test_a_topic_deleted_while_the_executor_was_stopped_does_not_block_its_resume(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with _two_topics(kafka_bed, tmp_path) as (traffic, doomed, plan):
        state = tmp_path / "state.json"
        executor = cli(*_execute(kafka_bed, plan, state))
        try:
            wait_until(lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy")
        finally:
            executor.kill()  # as a node dies: its throttles and reassignments stay, on record
            executor.communicate(timeout=30)
        assert set(read_state(state)["throttles"]["topics"]) == {doomed}
        delete_topic(kafka_bed, doomed)

        started = time.monotonic()
        rerun = cli(*_execute(kafka_bed, plan, state))
        out, err = rerun.communicate(timeout=300)
        print(f"\nresumed after the deletion; finished in {time.monotonic() - started:.1f}s")
        assert rerun.returncode == 0, (out, err)
        assert "resuming" in out
        _assert_kept_placed_and_nothing_left(kafka_bed, traffic, doomed, state)


def _dynamic(bed: KafkaBed, topic: str) -> dict[str, str]:
    admin = admin_of(bed)  # kept referenced: a client collected before its answer fails the future
    [future] = admin.describe_configs([ConfigResource("topic", topic)], request_timeout=30).values()
    entries = future.result(timeout=30).values()
    return {e.name: str(e.value) for e in entries if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def test_an_edited_record_naming_a_compacted_topics_configs_leaves_them_alone(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    ledger = create_topic(kafka_bed, "ledger", [[1, 2]])
    try:
        kept = {"cleanup.policy": "compact", "retention.ms": "-1"}
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in kept.items()]
        resource = ConfigResource("topic", ledger, incremental_configs=entries)
        admin = admin_of(kafka_bed)
        [done] = admin.incremental_alter_configs([resource]).values()
        done.result(timeout=30)
        wait_until(lambda: _dynamic(kafka_bed, ledger) == kept, timeout_s=30, what="the ledger's configs")
        with topic_with_traffic(kafka_bed, "moved", [[1, 2], [1, 2]]) as traffic:
            plan = tmp_path / "plan.json"
            moves = [{"topic": traffic.topic, "partition": p, "replicas": r} for p, r in TARGETS.items()]
            plan.write_text(json.dumps({"version": 1, "partitions": moves}))
            state = tmp_path / "state.json"
            executor = cli(*_execute(kafka_bed, plan, state))
            try:
                wait_until(lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy")
            finally:
                executor.kill()
                executor.communicate(timeout=30)
            # Someone who may edit the record but has no Kafka rights names the ledger's configs in it.
            record = read_state(state)
            record["throttles"]["topics"][ledger] = ["cleanup.policy", "retention.ms"]
            state.write_text(json.dumps(record))

            cancel = cli("cancel", "--state", str(state), "--bootstrap-server", kafka_bed.bootstrap_servers)
            out, err = cancel.communicate(timeout=180)
            assert cancel.returncode == 0, (out, err)
            assert _dynamic(kafka_bed, ledger) == kept
            assert ongoing_reassignments(kafka_bed, traffic.topic) == []
            assert_no_throttle_left(kafka_bed, traffic.topic)
            traffic.assert_all_read_back()
    finally:
        delete_topic(kafka_bed, ledger)


def test_a_batch_waits_while_a_broker_outside_the_plan_is_down_and_goes_on_once_it_is_back(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with (
        extra_broker(kafka_bed, "b") as added,
        topic_with_traffic(kafka_bed, "gate", [[1, 2], [added, 2]]) as traffic,
    ):
        # One move at a time: gate-0 copies first; gate-1 keeps its replica on the added broker, which
        # is stopped meanwhile, so its batch must wait for it.
        targets = {0: [3, 1], 1: [4, added]}
        moves = [{"topic": traffic.topic, "partition": p, "replicas": r} for p, r in targets.items()]
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": moves}))
        state = tmp_path / "state.json"
        executor = cli(*_execute(kafka_bed, plan, state), "--max-moves", "1")
        try:
            wait_until(lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy")
            kafka_bed.stop_broker(added)
            stopped = time.time()
            try:
                wait_until(
                    lambda: read_state(state).get("waiting") or executor.poll() is not None,
                    timeout_s=120,
                    what="the next batch waiting",
                )
                waiting = read_state(state)["waiting"]
                assert waiting == (
                    f"the next batch waits for 1 partition(s) to be healthy: "
                    f"{traffic.topic}-1 (replica(s) {added} out of sync)"
                ), waiting
            finally:
                restarting = time.time()
                kafka_bed.restart_broker(added)
            back = time.time()
            out, err = executor.communicate(timeout=300)
        finally:
            executor.kill()
            executor.communicate(timeout=30)
        assert executor.returncode == 0, (out, err)
        assert "the batch's partitions are healthy again: submitting" in out, out
        record = read_state(state)
        second = next(m for m in record["moves"] if m["partition"] == 1)
        after = second["startedAt"] - back
        print(f"\nbroker down for {back - stopped:.1f}s; gate-1 submitted {after:.1f}s after it was back")
        # Until the broker was started again its replica was out of sync; it may be back in sync a
        # moment before restart_broker returns (which waits for more than the ISR).
        assert second["startedAt"] > restarting, "a move whose kept replica was out of sync was submitted"
        assert record["waiting"] == "" and record["waitingSince"] is None
        actual = partitions(kafka_bed, traffic.topic)
        assert {p: actual[p][0] for p in targets} == targets
        assert ongoing_reassignments(kafka_bed, traffic.topic) == []
        assert_no_throttle_left(kafka_bed, traffic.topic)
        traffic.assert_all_read_back()


def _set_default_rates(bed: KafkaBed, rate: str | None) -> None:
    """The cluster-wide default replication rates, or none, as a person sets them: kafka-configs
    --entity-default (the Python clients refuse the default entity's empty name)."""
    names = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
    change = (
        ["--add-config", ",".join(f"{name}={rate}" for name in names)]
        if rate is not None
        else ["--delete-config", ",".join(names)]
    )
    done = bed.run_tool(CONFIG_COMMAND, ["--entity-type", "brokers", "--entity-default", "--alter", *change])
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_cluster_wide_default_rate_caps_the_executions_throttle(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    _set_default_rates(kafka_bed, "60000")
    try:
        with topic_with_traffic(kafka_bed, "capped", [[1, 2], [1, 2]]) as traffic:
            plan = tmp_path / "plan.json"
            moves = [{"topic": traffic.topic, "partition": p, "replicas": r} for p, r in TARGETS.items()]
            plan.write_text(json.dumps({"version": 1, "partitions": moves}))
            state = tmp_path / "state.json"
            args = ["execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers]
            executor = cli(*args, "--state", str(state), "--throttle", "1000000", "--poll-interval", "0.3")
            try:
                wait_until(lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy")
                admin = admin_of(kafka_bed)
                # One broker a call: librdkafka takes a single broker resource per DescribeConfigs.
                rates = {
                    entry.value
                    for b in (1, 2, 3, 4)
                    for future in admin.describe_configs(
                        [ConfigResource("broker", str(b))], request_timeout=30
                    ).values()
                    for entry in future.result(timeout=30).values()
                    if entry.name.endswith("replication.throttled.rate")
                    and entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
                }
                out, err = executor.communicate(timeout=300)
            finally:
                executor.kill()
                executor.communicate(timeout=30)
            assert executor.returncode == 0, (out, err)
            assert rates == {"60000"}, rates  # never the 1,000,000 asked for
            assert "throttle capped at 60000 B/s (asked 1000000)" in out, out
            assert ongoing_reassignments(kafka_bed, traffic.topic) == []
            # The default rates are the person's: every broker shows them until they go.
            _set_default_rates(kafka_bed, None)
            assert_no_throttle_left(kafka_bed, traffic.topic)
            traffic.assert_all_read_back()
    finally:
        _set_default_rates(kafka_bed, None)


def _reassign(bed: KafkaBed, path: Path, moves: dict[tuple[str, int], list[int]], *args: str) -> str:
    """kafka-reassign-partitions.sh (its class, from the bed's jars) with ``moves`` as its JSON."""
    document = [{"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()]
    path.write_text(json.dumps({"version": 1, "partitions": document}))
    done = bed.run_tool(REASSIGN_COMMAND, ["--reassignment-json-file", str(path), *args])
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_another_tools_reassignment_keeps_the_execution_from_starting_and_is_never_replaced(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    with (
        topic_with_traffic(kafka_bed, "ours", [[1, 2], [1, 2]]) as traffic,
        topic_with_traffic(kafka_bed, "theirs", [[1, 2]]) as theirs,
    ):
        topic = traffic.topic
        moves = [{"topic": topic, "partition": p, "replicas": r} for p, r in TARGETS.items()]
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps({"version": 1, "partitions": moves}))
        state = tmp_path / "state.json"

        # Started before: the execution does not start beside it (the operator's waits instead).
        before = {(theirs.topic, 0): [3, 2]}
        _reassign(kafka_bed, tmp_path / "theirs.json", before, "--execute", "--throttle", "10000")
        refused = cli(*_execute(kafka_bed, plan, state))
        out, err = refused.communicate(timeout=120)
        assert refused.returncode == 1, (out, err)
        said = f"1 reassignment(s) not started by this execution are in flight (e.g. {theirs.topic}-0)"
        assert said in err, err
        _reassign(kafka_bed, tmp_path / "theirs.json", before, "--cancel")
        wait_until(lambda: not ongoing_reassignments(kafka_bed, theirs.topic), timeout_s=60, what="cancelled")

        # Started during: our move of that partition waits for it, and is never submitted over it.
        # One move at a time: first a bulk partition's (4 MiB at 100 kB/s: about 40 s of copying),
        # during which theirs starts. Theirs copies to a broker stopped once it started (at our
        # rate, so it is still copying then), so it stays in flight until their tool cancels it.
        bulk = create_topic(kafka_bed, "bulk", [[1, 2]])
        try:
            _fill(kafka_bed, bulk, mib=4)
            moves = [
                {"topic": bulk, "partition": 0, "replicas": [3, 1]},
                {"topic": topic, "partition": 1, "replicas": [4, 2]},
            ]
            plan.write_text(json.dumps({"version": 1, "partitions": moves}))
            state = tmp_path / "during-state.json"
            with extra_broker(kafka_bed, "c") as added:
                executor = cli(*_execute(kafka_bed, plan, state), "--max-moves", "1")
                try:
                    wait_until(
                        lambda: copying(state) or executor.poll() is not None, timeout_s=60, what="a copy"
                    )
                    during = {(topic, 1): [added, 2]}
                    # The tool refuses to start beside another reassignment (ours) unless told --additional.
                    started = ("--execute", "--additional", "--throttle", "100000")
                    _reassign(kafka_bed, tmp_path / "during.json", during, *started)
                    kafka_bed.stop_broker(added)
                    assert read_state(state)["moves"][1]["status"] == "pending", "theirs started first"
                    wait_until(
                        lambda: (
                            read_state(state)["moves"][0]["status"] == "done" or executor.poll() is not None
                        ),
                        timeout_s=180,
                        what="our first move done while theirs is in flight",
                    )
                    done_at = read_state(state)["updatedAt"]
                    wait_until(
                        lambda: read_state(state)["updatedAt"] > done_at + 3 or executor.poll() is not None,
                        timeout_s=60,
                        what="the execution to look again several times",
                    )
                    assert executor.poll() is None and read_state(state)["moves"][1]["status"] == "pending"
                    [listed] = ongoing_reassignments(kafka_bed, topic)
                    assert listed.partition == 1
                    assert 4 not in partitions(kafka_bed, topic)[1][0], "theirs was replaced by ours"
                    # Their throttles stay until the broker they set them on is back to take their removal.
                    _reassign(kafka_bed, tmp_path / "during.json", during, "--cancel", "--preserve-throttles")
                    out, err = executor.communicate(timeout=300)
                finally:
                    _stop_leaving_nothing(kafka_bed, executor, state)
                kafka_bed.restart_broker(added)
                cleared = _reassign(kafka_bed, tmp_path / "during.json", during, "--cancel")
                assert "Clearing broker-level throttles" in cleared, cleared
            assert executor.returncode == 0, (out, err)
            assert f"{topic}-1: waits for a reassignment this execution did not start" in out, out
            assert {m["status"] for m in read_state(state)["moves"]} == {"done"}
            assert partitions(kafka_bed, topic)[1][0] == [4, 2]
            assert partitions(kafka_bed, bulk)[0][0] == [3, 1]
            assert ongoing_reassignments(kafka_bed, topic) == []
            assert_no_throttle_left(kafka_bed, topic)
        finally:
            delete_topic(kafka_bed, bulk)
        traffic.assert_all_read_back()


def _fill(bed: KafkaBed, topic: str, mib: int) -> None:
    """``mib`` MiB of incompressible records into partition 0 of ``topic``."""
    producer = Producer({"bootstrap.servers": bed.bootstrap_servers, "linger.ms": 20})
    record = os.urandom(10_000)
    for _ in range(mib * 2**20 // len(record)):
        producer.produce(topic, record, partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0


def _stop_leaving_nothing(bed: KafkaBed, executor: subprocess.Popen[str], state: Path) -> None:
    """A run the test had to stop early is cancelled, so that no later test finds its moves or
    throttles."""
    if executor.poll() is None:
        executor.kill()
        executor.communicate(timeout=30)
        cancel = cli("cancel", "--state", str(state), "--bootstrap-server", bed.bootstrap_servers)
        cancel.communicate(timeout=180)
