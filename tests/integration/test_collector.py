"""The Admin-API collector on the real Kafka bed: measured rates agree with known traffic; the CLI's
snapshot is accepted by ``plan``; the sample store outlives its collector."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_balancer.kafka.collector import AdminReader, Collector, PassResult, total_requests
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import Capacities, build_snapshot
from kafka_balancer.localbed.kafka import KafkaBed
from kafka_balancer.samples.schema import PARTITION_SAMPLES

VALUE_BYTES = 2_000
RATE_MSGS = 100  # per second: 200 kB/s
INTERVAL_S = 2.0
PASSES = 7  # 6 samples, 12 s
TOLERANCE = 0.25
CAP = (1e12, 1e8, 1e8, 4.0)


def _poll_until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}", pytrace=False)
        time.sleep(0.1)


def _topic(bed: KafkaBed, partitions: int = 2, rf: int = 2) -> str:
    topic = f"collector-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=30)[topic].result(timeout=60)

    def ready() -> bool:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
        return len(meta.partitions) == partitions and all(p.leader >= 0 for p in meta.partitions.values())

    _poll_until(ready, 30, f"{topic} leaders")
    return topic


class _Traffic:
    """A paced producer and a committing consumer group, each recording when its records went through."""

    def __init__(self, bed: KafkaBed, topic: str) -> None:
        self.topic = topic
        self.group = f"collector-group-{uuid.uuid4().hex[:8]}"
        self.delivered: list[float] = []
        self.consumed: list[float] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bed.bootstrap_servers, "linger.ms": 5, "acks": "all"})
        self._consumer = Consumer(
            {
                "bootstrap.servers": bed.bootstrap_servers,
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
            }
        )
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def __enter__(self) -> _Traffic:
        self._consumer.subscribe([self.topic])
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._consumer.close()

    def _on_delivery(self, err: KafkaError | None, _msg: object) -> None:
        if err is None:
            self.delivered.append(time.time())
        else:
            self.errors.append(str(err))

    def _produce(self) -> None:
        value = b"x" * VALUE_BYTES
        start = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            # Pacing, not synchronisation: the next record is due at start + sent / rate.
            due = start + sent / RATE_MSGS
            self._producer.poll(max(0.0, due - time.monotonic()))
            if time.monotonic() >= due:
                key = str(sent).encode()
                self._producer.produce(self.topic, value, key=key, on_delivery=self._on_delivery)
                sent += 1
        self._producer.flush(30)

    def _consume(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.consumed.append(time.time())

    def rate(self, stamps: list[float], since: float, until: float) -> float:
        return sum(1 for t in stamps if since < t <= until) * VALUE_BYTES / (until - since)


def _collect(bed: KafkaBed, store: SampleStore, passes: int) -> list[PassResult]:
    reader = AdminReader(bed.bootstrap_servers)
    try:
        return Collector(reader, store).run(passes, INTERVAL_S)
    finally:
        reader.close()


def test_rates_sizes_and_history_agree_with_known_traffic(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = _topic(kafka_bed)
    store = SampleStore(tmp_path / "store")
    with _Traffic(kafka_bed, topic) as traffic:
        _poll_until(lambda: len(traffic.consumed) > RATE_MSGS, 60, "the consumer group to receive records")
        results = _collect(kafka_bed, store, PASSES)
    assert not traffic.errors
    first, last = results[0].observation, results[-1].observation
    window_ms = last.ts_ms - first.ts_ms
    samples = store.partition_samples()
    assert samples.schema.equals(PARTITION_SAMPLES)
    doc = build_snapshot(last.brokers, Capacities({}, CAP), samples, store.broker_samples(), window_ms)
    mine = [p for p in doc["partitions"] if p["topic"] == topic]
    assert len(mine) == 2
    since, until = first.ts_ms / 1000, last.ts_ms / 1000
    produced = traffic.rate(traffic.delivered, since, until)
    consumed = traffic.rate(traffic.consumed, since, until)
    network_in = sum(p["load"]["networkIn"] for p in mine)
    network_out = sum(p["load"]["networkOut"] for p in mine)
    on_disk = sum(p["load"]["disk"] for p in mine)
    payload = sum(1 for t in traffic.delivered if t <= until) * VALUE_BYTES
    requests = total_requests(results[1:])
    print(
        f"\nproduced {produced:.0f} B/s, networkIn {network_in:.0f} B/s ({network_in / produced - 1:+.1%}); "
        f"consumed {consumed:.0f} B/s, networkOut {network_out:.0f} B/s ({network_out / consumed - 1:+.1%}); "
        f"payload {payload} B, disk {on_disk:.0f} B ({on_disk / payload - 1:+.1%}); "
        f"{len(last.partitions)} partitions in the bed; requests per pass "
        f"{sum(requests.values()) / (len(results) - 1):.1f}: {dict(requests)}"
    )
    assert network_in == pytest.approx(produced, rel=TOLERANCE)
    assert network_out == pytest.approx(consumed, rel=TOLERANCE)
    assert on_disk == pytest.approx(payload, rel=TOLERANCE)
    # Log-dir and offset requests go to leader brokers only; group offsets one request per group.
    per_pass = results[-1].observation.requests
    assert per_pass["DescribeLogDirs"] <= len(last.brokers)
    assert per_pass["ListOffsets"] <= 2 * len(last.brokers)
    assert per_pass["OffsetFetch"] >= 1

    # A new collector on the same store: the first instance's history is still there, and extends.
    before = {r["ts_ms"] for r in store.partition_samples().to_pylist()}
    _collect(kafka_bed, SampleStore(tmp_path / "store"), 2)
    after = {r["ts_ms"] for r in SampleStore(tmp_path / "store").partition_samples().to_pylist()}
    assert len(before) == PASSES - 1
    assert before < after and len(after) == len(before) + 1


def test_snapshot_command_writes_what_plan_accepts(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = _topic(kafka_bed, partitions=3, rf=3)
    secret = f"pw-{uuid.uuid4().hex}"
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=PLAINTEXT\nsasl.username=nobody\nsasl.password={secret}\n")
    snapshot = tmp_path / "snapshot.json"
    cli = [sys.executable, "-m", "kafka_balancer.cli"]
    done = subprocess.run(
        [
            *cli,
            "snapshot",
            "--bootstrap-server",
            kafka_bed.bootstrap_servers,
            "--command-config",
            str(props),
            "--window",
            "2s",
            "--interval",
            "1s",
            "--disk-capacity",
            "1e12",
            "--network-capacity",
            "1.25e8",
            "--cpu-capacity",
            "8",
            "--store",
            str(tmp_path / "store"),
            "--output",
            str(snapshot),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    doc = json.loads(snapshot.read_text())
    assert doc["version"] == 1
    assert {b["id"]: b["rack"] for b in doc["brokers"]} == kafka_bed.racks
    assert {p["partition"] for p in doc["partitions"] if p["topic"] == topic} == {0, 1, 2}
    assert any(f.name.endswith(".parquet") for f in (tmp_path / "store" / "partition_samples").iterdir())
    goals = tmp_path / "goals.yaml"
    goals.write_text(
        "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancerGoal\nmetadata: {name: disk}\n"
        "spec: {type: DiskCapacity, hard: true, priority: 10, thresholdPercent: 80}\n"
    )
    plan_file = tmp_path / "plan.json"
    plan = subprocess.run(
        [*cli, "plan", "--snapshot", str(snapshot), "--goals", str(goals), "--output", str(plan_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan_file.read_text())["version"] == 1
