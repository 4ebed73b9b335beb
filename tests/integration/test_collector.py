"""The Admin-API collector on the real Kafka bed: measured rates agree with known traffic; the CLI's
snapshot is accepted by ``plan``; the sample store outlives its collector."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from tests.support.traffic import KnownTraffic, create_topic

from kafka_balancer.kafka.collector import AdminReader, Collector, PassResult, total_requests
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import Capacities, build_snapshot
from kafka_balancer.samples.schema import PARTITION_SAMPLES
from kafka_balancer_dev.localbed.kafka import KafkaBed

VALUE_BYTES = 2_000
RATE_MSGS = 100  # per second: 200 kB/s
INTERVAL_S = 2.0
PASSES = 7  # 6 samples, 12 s
TOLERANCE = 0.25
CAP = (1e12, 1e8, 1e8, 4.0)


def _collect(bed: KafkaBed, store: SampleStore, passes: int) -> list[PassResult]:
    reader = AdminReader(bed.bootstrap_servers)
    try:
        return Collector(reader, store).run(passes, INTERVAL_S)
    finally:
        reader.close()


def test_rates_sizes_and_history_agree_with_known_traffic(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = create_topic(kafka_bed.bootstrap_servers, "collector", partitions=2, rf=2)
    store = SampleStore(tmp_path / "store")
    with KnownTraffic(kafka_bed.bootstrap_servers, topic, RATE_MSGS, VALUE_BYTES) as traffic:
        traffic.wait_flowing()
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
    payload = traffic.payload(until)
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
    # One DescribeLogDirs per broker (every replica's dir and size); offset requests go to leader
    # brokers only; group offsets one request per group.
    per_pass = results[-1].observation.requests
    assert per_pass["DescribeLogDirs"] == len(last.brokers)
    assert sorted(results[-1].observation.log_dirs) == sorted(b.id for b in last.brokers)
    assert per_pass["ListOffsets"] <= 2 * len(last.brokers)
    assert per_pass["OffsetFetch"] >= 1

    # A new collector on the same store: the first instance's history is still there, and extends.
    before = {r["ts_ms"] for r in store.partition_samples().to_pylist()}
    _collect(kafka_bed, SampleStore(tmp_path / "store"), 2)
    after = {r["ts_ms"] for r in SampleStore(tmp_path / "store").partition_samples().to_pylist()}
    assert len(before) == PASSES - 1
    assert before < after and len(after) == len(before) + 1


def test_snapshot_command_writes_what_plan_accepts(kafka_bed: KafkaBed, tmp_path: Path) -> None:
    topic = create_topic(kafka_bed.bootstrap_servers, "collector", partitions=3, rf=3)
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
