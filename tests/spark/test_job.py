"""The scoring job end to end on Parquet samples written as the collector writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from kafka_balancer.cli import main
from kafka_balancer.errors import ScoringError
from kafka_balancer.formats.snapshot import read_snapshot
from kafka_balancer.scoring.launch import read_outputs
from tests.support.samples import broker_row, partition_row, write_samples

STEP = 60_000
END = 1_700_000_000_000
BROKERS = [0, 1, 2, 3]
RACKS = {0: "a", 1: "a", 2: "b", 3: "b"}


def cluster_samples() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """11 minutes of one-minute samples: 12 partitions (RF 2); broker 0 leads the big ones.
    orders-3 misses its samples between minutes 2 and 6, so window 1 lacks them."""
    partitions: list[dict[str, Any]] = []
    brokers: list[dict[str, Any]] = []
    for minute in range(11):
        ts = END - (10 - minute) * STEP
        for p in range(12):
            topic, index = ("orders", p) if p < 6 else ("events", p - 6)
            if topic == "orders" and index == 3 and 2 <= minute <= 6:
                continue
            leader = 0 if p < 4 else BROKERS[p % 4]
            follower = 2 if RACKS[leader] == "a" else 1
            scale = 20.0 if p < 4 else 1.0
            partitions.append(
                partition_row(
                    ts,
                    topic,
                    index,
                    [leader, follower],
                    leader,
                    size=scale * 1e9 + minute * 1e6,
                    bytes_in=scale * 6e6 + minute,
                    bytes_out=scale * 1e7,
                )
            )
        brokers.extend(broker_row(ts, b, 1.0 + b) for b in BROKERS)
    return partitions, brokers


def write_topology_and_goals(root: Path) -> None:
    """The job's other inputs in ``root``: the brokers of cluster_samples, and no goal (the
    documented default set)."""
    topology = [
        {
            "id": b,
            "rack": RACKS[b],
            "state": "active",
            "capacity": {"disk": 1e12, "networkIn": 1e8, "networkOut": 1e8, "cpu": 8},
        }
        for b in BROKERS
    ]
    (root / "topology.json").write_text(json.dumps({"brokers": topology}))
    (root / "goals.yaml").write_text("")


@pytest.fixture()
def inputs(tmp_path: Path) -> dict[str, Path]:
    partitions, brokers = cluster_samples()
    write_samples(tmp_path / "store", partitions, brokers)
    write_topology_and_goals(tmp_path)
    return {
        "samples": tmp_path / "store",
        "topology": tmp_path / "topology.json",
        "goals": tmp_path / "goals.yaml",
        "out": tmp_path / "out",
        "tmp": tmp_path,
    }


def score_args(inputs: dict[str, Path], *extra: str) -> list[str]:
    return [
        "score",
        "--samples",
        str(inputs["samples"]),
        "--topology",
        str(inputs["topology"]),
        "--goals",
        str(inputs["goals"]),
        "--out",
        str(inputs["out"]),
        "--master",
        "local[2]",
        *extra,
    ]


def test_score_writes_a_snapshot_plan_accepts(spark: SparkSession, inputs: dict[str, Path]) -> None:
    assert main(score_args(inputs, "--windows", "2", "--min-samples-per-window", "3")) == 0
    out = inputs["out"]

    cluster = read_snapshot(out / "snapshot.json")
    names = {p.name for p in cluster.partitions}
    assert len(names) == 11 and "orders-3" not in names
    # orders-0, computed from the generated rows: 10 samples in windows 0 and 1 (minutes 1..10).
    partitions, _ = cluster_samples()
    rows = [
        r for r in partitions if (r["topic"], r["partition"]) == ("orders", 0) and r["ts_ms"] > END - 600_000
    ]
    seconds = sum(r["interval_ms"] for r in rows) / 1000.0
    orders0 = next(p for p in cluster.partitions if p.name == "orders-0")
    assert orders0.load.network_in == pytest.approx(sum(r["bytes_in"] for r in rows) / seconds)
    assert orders0.load.network_out == pytest.approx(sum(r["bytes_out"] for r in rows) / seconds)
    assert orders0.load.disk == 20.0 * 1e9 + 10 * 1e6
    # Broker 0 (1 core) leads orders-0..3 only, with equal bytes in but for the minute offsets.
    led = [p for p in cluster.partitions if p.leader == 0]
    assert sum(p.load.cpu for p in led) == pytest.approx(1.0)

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["windows"]["used"] == 2
    assert manifest["windows"]["windows"] == [
        {"index": 0, "startMs": END - 300_000, "endMs": END},
        {"index": 1, "startMs": END - 600_000, "endMs": END - 300_000},
    ]
    assert manifest["completeness"]["incompletePartitions"] == ["orders-3"]
    assert manifest["completeness"]["incompleteCount"] == 1
    assert manifest["rows"]["partitionSamples"] == len(partitions)
    assert manifest["rows"]["partitions"] == 11
    assert manifest["rows"]["replicas"] == 22

    scores = pq.read_table(out / "broker_scores").to_pylist()
    assert len(scores) == len(BROKERS) * 11  # the default goals minus RackAware and topic spread
    assert manifest["rows"]["brokerScores"] == len(scores)
    disk = {r["broker"]: r for r in scores if r["goal_type"] == "DiskDistribution"}
    assert disk[0]["violation"] > 0
    candidates = pq.read_table(out / "candidates").to_pylist()
    assert manifest["rows"]["candidates"] == len(candidates)
    moves = [c for c in candidates if c["goal_type"] == "DiskDistribution" and c["source_broker"] == 0]
    assert moves and all(c["action"] == "move" and c["improvement"] > 0 for c in moves)
    assert all(c["target_broker"] in (1, 3) for c in moves)  # not broker 2, which holds them

    plan = inputs["tmp"] / "plan.json"
    assert (
        main(
            [
                "plan",
                "--snapshot",
                str(out / "snapshot.json"),
                "--goals",
                str(inputs["goals"]),
                "--output",
                str(plan),
            ]
        )
        == 0
    )
    assert json.loads(plan.read_text())["version"] == 1


def test_too_little_history_is_refused(
    spark: SparkSession, inputs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(score_args(inputs, "--window-ms", "3600000")) == 1
    err = capsys.readouterr().err
    assert "no complete window" in err and "Traceback" not in err
    assert not (inputs["out"] / "snapshot.json").exists()


def test_missing_sample_store_is_bad_input(
    spark: SparkSession, inputs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    inputs["samples"] = inputs["tmp"] / "nowhere"
    assert main(score_args(inputs)) == 2
    assert "partition_samples" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"replicas": [0, 9]}, "replicas: [0, 9] of orders-0 names a broker not in brokers"),
        ({"replicas": [0, None]}, "replicas: [0, None] of orders-0 names a broker not in brokers"),
        ({"replicas": [1, 1], "leader": 1}, "replicas: [1, 1] of orders-0 lists a broker twice"),
        ({"size_bytes": -1.0}, "load.disk: -1.0 for orders-0, not a finite number >= 0"),
    ],
)
def test_samples_the_snapshot_format_refuses_are_bad_input(
    spark: SparkSession,
    inputs: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    reason: str,
) -> None:
    """Samples the collector would never write (a store is files anyone with access can change)
    make the job refuse, naming the partition, not write a snapshot ``plan`` would refuse."""
    partitions, brokers = cluster_samples()
    changed = [r | change if (r["topic"], r["partition"]) == ("orders", 0) else r for r in partitions]
    write_samples(inputs["tmp"] / "changed", changed, brokers)
    inputs["samples"] = inputs["tmp"] / "changed"
    assert main(score_args(inputs)) == 2
    err = capsys.readouterr().err
    assert "score: bad input: scored snapshot.partitions[" in err and reason in err, err
    assert "Traceback" not in err
    assert not (inputs["out"] / "snapshot.json").exists()


def test_the_seal_the_job_writes_vouches_for_its_outputs_and_no_others(
    spark: SparkSession, inputs: dict[str, Path]
) -> None:
    """What a driver writes to its termination log (``--seal-file``) is what the operator checks the
    outputs it reads back against (k8s/spark_submit.py): the job's own outputs pass, changed ones not."""
    termination_log = inputs["tmp"] / "termination-log"
    assert main(score_args(inputs, "--seal-file", str(termination_log))) == 0
    sealed = termination_log.read_text(encoding="utf-8")
    out = str(inputs["out"])

    manifest = json.loads((inputs["out"] / "manifest.json").read_text())
    assert read_outputs(out, 0.0, sealed).manifest == manifest

    snapshot = inputs["out"] / "snapshot.json"
    snapshot.write_text(snapshot.read_text().replace('"leader": 0', '"leader": 1', 1))
    with pytest.raises(ScoringError, match="not the ones the run's driver wrote"):
        read_outputs(out, 0.0, sealed)
