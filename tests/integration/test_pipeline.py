"""The real pipeline: known traffic on the Kafka bed → collector → sample store → the Spark
scoring job (``kafka-balancer score``, local[1]) → scored snapshot → ``kafka-balancer plan``.

Tolerance: the job adds no error of its own (its network figures are exact time-weighted means
of the samples: 3e-16 relative error on synthetic stores in ``bench/bench_scoring.py``), so the
bound is the collector's, measured in ``test_collector.py`` on the same bed and traffic shape:
bytes in from offset deltas × average record size (batch headers make records ~1–3 % larger
than their values), bytes out from committed offsets that trail the consumer by up to one
500 ms auto-commit, and pass timestamps taken when the end offsets were read, not when records
were acknowledged. Over a 10 s window that is a few percent on each partition; 25 %, the
collector test's tolerance, leaves room for a loaded machine without hiding a wrong formula
(a missing or doubled replica, bytes per interval instead of per second, are ≥ 100 % off).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest
from tests.support.traffic import KnownTraffic, create_topic

from kafka_balancer.kafka.collector import AdminReader, Collector, PassResult
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer_dev.localbed.kafka import KafkaBed

VALUE_BYTES = 2_000
RATE_MSGS = 100  # records/s over the topic: 200 kB/s
PARTITIONS = 2
INTERVAL_S = 2.0
PASSES = 7  # a baseline and 6 samples: 12 s of history
WINDOW_MS = 10_000  # one complete window: the 5 newest samples
MIN_SAMPLES = 4
TOLERANCE = 0.25
NETWORK_CAPACITY = 1.25e8
CLI = [sys.executable, "-m", "kafka_balancer.cli"]
GOALS = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancerGoal
metadata: {name: network-in}
spec: {type: NetworkInCapacity, hard: true, priority: 20, thresholdPercent: 80}
---
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancerGoal
metadata: {name: disk}
spec: {type: DiskCapacity, hard: true, priority: 10, thresholdPercent: 80}
"""


def _collect(bed: KafkaBed, store: SampleStore) -> list[PassResult]:
    reader = AdminReader(bed.bootstrap_servers)
    try:
        return Collector(reader, store).run(PASSES, INTERVAL_S)
    finally:
        reader.close()


def _topology(result: PassResult) -> list[dict[str, Any]]:
    return [
        {
            "id": b.id,
            "rack": b.rack,
            "state": "active",
            "capacity": {
                "disk": 1e12,
                "networkIn": NETWORK_CAPACITY,
                "networkOut": NETWORK_CAPACITY,
                "cpu": 8,
            },
        }
        for b in result.observation.brokers
    ]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=900, check=False)


def _plan(snapshot: Path, goals: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return _run(["plan", "--snapshot", str(snapshot), "--goals", str(goals), "--output", str(output)])


def test_scored_loads_agree_with_known_traffic_and_plan_accepts_them(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    topic = create_topic(kafka_bed.bootstrap_servers, "pipeline", PARTITIONS, rf=2)
    store = SampleStore(tmp_path / "store")
    with KnownTraffic(kafka_bed.bootstrap_servers, topic, RATE_MSGS, VALUE_BYTES) as traffic:
        traffic.wait_flowing()
        results = _collect(kafka_bed, store)
    assert not traffic.errors

    (tmp_path / "topology.json").write_text(json.dumps({"brokers": _topology(results[-1])}))
    goals = tmp_path / "goals.yaml"
    goals.write_text(GOALS)
    out = tmp_path / "scored"
    score = _run(
        [
            "score",
            *("--samples", str(store.root), "--topology", str(tmp_path / "topology.json")),
            *("--goals", str(goals), "--out", str(out), "--master", "local[1]"),
            *("--window-ms", str(WINDOW_MS), "--windows", "1", "--min-samples-per-window", str(MIN_SAMPLES)),
        ]
    )
    assert score.returncode == 0, score.stderr[-3000:]

    # The span the used window's samples cover, from the store itself: (oldest start, newest].
    samples = store.partition_samples()
    newest = pc.max(samples["ts_ms"]).as_py()
    used = samples.filter(pc.greater(samples["ts_ms"], newest - WINDOW_MS))
    since = pc.min(pc.subtract(used["ts_ms"], used["interval_ms"])).as_py() / 1000
    until = newest / 1000
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["windows"]["used"] == 1
    assert f"{topic}-0" not in manifest["completeness"]["incompletePartitions"]

    scored = json.loads((out / "snapshot.json").read_text())
    mine = {p["partition"]: p for p in scored["partitions"] if p["topic"] == topic}
    assert sorted(mine) == list(range(PARTITIONS))
    report = []
    for partition, p in sorted(mine.items()):
        produced = traffic.rate(traffic.delivered, since, until, partition)
        consumed = traffic.rate(traffic.consumed, since, until, partition)
        payload = traffic.payload(until, partition)
        load = p["load"]
        report.append(
            f"{topic}-{partition}: networkIn {load['networkIn']:.0f} vs produced {produced:.0f} B/s, "
            f"networkOut {load['networkOut']:.0f} vs consumed {consumed:.0f} B/s, "
            f"disk {load['disk']:.0f} vs payload {payload} B"
        )
        assert load["networkIn"] == pytest.approx(produced, rel=TOLERANCE), report[-1]
        assert load["networkOut"] == pytest.approx(consumed, rel=TOLERANCE), report[-1]
        assert load["disk"] == pytest.approx(payload, rel=TOLERANCE), report[-1]
        assert len(p["replicas"]) == 2 and p["leader"] in p["replicas"]
    print("\n" + "\n".join(report))

    plan_file = tmp_path / "plan.json"
    planned = _plan(out / "snapshot.json", goals, plan_file)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(plan_file.read_text())
    assert plan["version"] == 1 and isinstance(plan["partitions"], list)

    # The same scored loads on brokers whose network-in capacity is below what one of our
    # partitions measurably receives: the hard goal cannot hold, plan says so and writes nothing.
    cramped = min(p["load"]["networkIn"] for p in mine.values()) / 2
    for broker in scored["brokers"]:
        broker["capacity"]["networkIn"] = cramped
    (tmp_path / "cramped.json").write_text(json.dumps(scored))
    refused = _plan(tmp_path / "cramped.json", goals, tmp_path / "refused.json")
    assert refused.returncode == 3, refused.stderr
    assert "NetworkInCapacity" in refused.stderr or "network-in" in refused.stderr, refused.stderr
    assert not (tmp_path / "refused.json").exists()
