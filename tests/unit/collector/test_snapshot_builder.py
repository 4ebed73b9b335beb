"""The snapshot builder (and the collector's pure rate derivation) on hand-made samples."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafka_balancer.cli import main
from kafka_balancer.errors import InputError, KafkaOperationError
from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.kafka.collector import Observation, PartitionInfo, average_record_size, samples_between
from kafka_balancer.kafka.snapshot_builder import (
    FOLLOWER_CPU_FRACTION,
    BrokerInfo,
    Capacities,
    build_snapshot,
)
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES
from tests.support.samples import broker_row, partition_row

CAP = (1e12, 1e8, 1e8, 8.0)
BROKERS = (BrokerInfo(1, "a"), BrokerInfo(2, "b"), BrokerInfo(3, None))
DEFAULT_CAPS = Capacities({}, CAP)


def psample(
    ts: int,
    topic: str,
    pid: int,
    leader: int,
    replicas: list[int],
    size: float,
    bytes_in: float,
    bytes_out: float,
    interval: int = 10_000,
) -> dict[str, Any]:
    return partition_row(
        ts, topic, pid, replicas, leader, interval=interval, size=size, bytes_in=bytes_in, bytes_out=bytes_out
    )


def bsample(ts: int, broker: int, cpu: float | None, interval: int = 10_000) -> dict[str, Any]:
    return broker_row(ts, broker, cpu, interval=interval)


def build(
    parts: list[dict[str, Any]],
    brokers: Sequence[dict[str, Any]] = (),
    window_ms: int = 20_000,
    caps: Capacities = DEFAULT_CAPS,
) -> dict[str, Any]:
    return build_snapshot(
        BROKERS,
        caps,
        pa.Table.from_pylist(parts, schema=PARTITION_SAMPLES),
        pa.Table.from_pylist(list(brokers), schema=BROKER_SAMPLES),
        window_ms,
    )


def loads(doc: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    return {f"{p['topic']}-{p['partition']}": p["load"] for p in doc["partitions"]}


def test_rates_are_time_weighted_over_the_window_and_disk_is_the_newest_size() -> None:
    doc = build(
        [
            # Outside the window (0, 20000]: would dominate every rate if it were counted.
            psample(0, "t", 0, 1, [1, 2], 1.0, 1e9, 1e9),
            psample(10_000, "t", 0, 1, [1, 2], 5_000.0, 1_000.0, 500.0),
            psample(20_000, "t", 0, 2, [1, 2], 7_000.0, 3_000.0, 1_500.0),
            # Intervals of different lengths: Σ bytes ÷ Σ seconds = (600 + 600) / (2 + 10) = 100 B/s.
            psample(12_000, "t", 1, 2, [2, 3], 100.0, 600.0, 0.0, interval=2_000),
            psample(20_000, "t", 1, -1, [2, 3], 200.0, 600.0, 0.0),
        ]
    )
    load = loads(doc)
    # (1000 + 3000) B / 20 s = 200 B/s in; (500 + 1500) / 20 = 100 B/s out.
    assert load["t-0"] == {
        "disk": 7_000.0,
        "networkIn": 200.0,
        "networkOut": 100.0,
        "cpu": 0.0,
        "followerCpu": 0.0,
    }
    assert load["t-1"]["networkIn"] == pytest.approx(100.0)
    assert load["t-1"]["disk"] == 200.0
    by_name = {f"{p['topic']}-{p['partition']}": p for p in doc["partitions"]}
    assert by_name["t-0"]["leader"] == 2  # the newest sample's leader
    assert by_name["t-1"]["leader"] == 2  # no leader (-1): the preferred leader, replicas[0]
    assert by_name["t-0"]["replicas"] == [1, 2]


def test_broker_cpu_is_shared_by_bytes_in_among_the_partitions_it_leads() -> None:
    parts = [
        psample(20_000, "a", 0, 1, [1, 2], 0.0, 3_000.0, 0.0),
        psample(20_000, "a", 1, 1, [1, 3], 0.0, 1_000.0, 0.0),
        psample(20_000, "b", 0, 2, [2, 1], 0.0, 1_000.0, 0.0),
        psample(20_000, "c", 0, 3, [3, 1], 0.0, 0.0, 0.0),
        psample(20_000, "c", 1, 3, [3, 2], 0.0, 0.0, 0.0),
    ]
    brokers = [
        bsample(10_000, 1, 1.0),
        bsample(20_000, 1, 3.0),  # average 2.0 cores
        bsample(20_000, 2, None),  # no cpu source: its partitions get 0
        bsample(20_000, 3, 1.0),  # 1 core, nothing produced: split evenly
        bsample(0, 3, 9.0),  # before the window (0, 20000]: ignored
    ]
    load = loads(build(parts, brokers))
    assert load["a-0"]["cpu"] == pytest.approx(1.5)  # 2.0 × 3000 / 4000
    assert load["a-1"]["cpu"] == pytest.approx(0.5)  # 2.0 × 1000 / 4000
    assert load["a-0"]["followerCpu"] == pytest.approx(1.5 * 0.2)
    assert load["b-0"]["cpu"] == 0.0
    assert load["c-0"]["cpu"] == pytest.approx(0.5)
    assert load["c-1"]["cpu"] == pytest.approx(0.5)


def test_document_is_a_valid_snapshot_with_capacities_and_racks() -> None:
    caps = Capacities({2: (2e12, 2e8, 3e8, 16.0)}, CAP)
    doc = build([psample(20_000, "t", 0, 1, [1, 2, 3], 10.0, 0.0, 0.0)], caps=caps)
    parse_snapshot(doc)
    assert doc["version"] == 1
    assert [(b["id"], b["rack"], b["state"]) for b in doc["brokers"]] == [
        (1, "a", "active"),
        (2, "b", "active"),
        (3, None, "active"),
    ]
    assert doc["brokers"][1]["capacity"] == {"disk": 2e12, "networkIn": 2e8, "networkOut": 3e8, "cpu": 16.0}
    assert doc["brokers"][0]["capacity"] == {"disk": 1e12, "networkIn": 1e8, "networkOut": 1e8, "cpu": 8.0}


def test_no_samples_gives_brokers_and_no_partitions() -> None:
    doc = build([])
    assert doc["partitions"] == []
    parse_snapshot(doc)


def test_missing_capacity_and_unknown_replica_are_refused() -> None:
    with pytest.raises(InputError, match="broker 3 is not listed"):
        build([], caps=Capacities({1: CAP, 2: CAP}))
    with pytest.raises(KafkaOperationError, match="broker 9"):
        build([psample(20_000, "t", 0, 1, [1, 9], 0.0, 0.0, 0.0)])


def test_follower_cpu_fraction_is_the_scoring_jobs() -> None:
    from kafka_balancer.scoring.model_loads import DEFAULT_FOLLOWER_CPU_FRACTION

    assert FOLLOWER_CPU_FRACTION == DEFAULT_FOLLOWER_CPU_FRACTION


def test_average_record_size_uses_deltas_when_both_grew_else_the_whole_log() -> None:
    # 3000 more bytes over 30 more records: 100 B each.
    assert average_record_size(13_000, 10_000, 130, 100, 0) == 100.0
    # Retention shrank the log: size ÷ (end − start) = 4000 / 80.
    assert average_record_size(4_000, 10_000, 130, 100, 50) == 50.0
    # First sight (no previous size) and an empty log.
    assert average_record_size(900, None, 10, 10, 1) == 100.0
    assert average_record_size(0, None, 7, 7, 7) == 0.0


def observation(ts: int, end: int, size: int, committed: Mapping[str, int]) -> Observation:
    tp = ("t", 0)
    return Observation(
        ts_ms=ts,
        brokers=(BrokerInfo(1, "a"), BrokerInfo(2, "b")),
        partitions={tp: PartitionInfo((1, 2), 1, frozenset({1, 2}))},
        sizes={tp: size},
        start_offsets={tp: 0},
        end_offsets={tp: end},
        committed={(g, tp): o for g, o in committed.items()},
    )


def test_samples_between_two_passes_then_snapshot() -> None:
    prev = observation(1_000, 100, 10_000, {"g1": 40, "g2": 90})
    # 50 records, 5000 bytes more: 100 B/record. g1 read 60 records, g2 went back (reset: 0), g3 is new.
    cur = observation(6_000, 150, 15_000, {"g1": 100, "g2": 10, "g3": 150})
    parts, brokers = samples_between(prev, cur)
    assert parts.schema.equals(PARTITION_SAMPLES) and brokers.schema.equals(BROKER_SAMPLES)
    [row] = parts.to_pylist()
    assert row == {
        "ts_ms": 6_000,
        "interval_ms": 5_000,
        "topic": "t",
        "partition": 0,
        "leader": 1,
        "replicas": [1, 2],
        "size_bytes": 15_000.0,
        "bytes_in": 5_000.0,
        "bytes_out": 6_000.0,
        "messages_in": 50,
    }
    assert [(b["broker"], b["rack"], b["cpu"]) for b in brokers.to_pylist()] == [
        (1, "a", None),
        (2, "b", None),
    ]
    doc = build_snapshot(cur.brokers, Capacities({}, CAP), parts, brokers, 60_000)
    # 5000 B in 5 s = 1000 B/s in; 6000 B out in 5 s = 1200 B/s.
    assert doc["partitions"][0]["load"]["networkIn"] == 1_000.0
    assert doc["partitions"][0]["load"]["networkOut"] == 1_200.0


def test_passes_out_of_order_are_refused() -> None:
    with pytest.raises(KafkaOperationError, match="out of order"):
        samples_between(observation(5_000, 1, 1, {}), observation(5_000, 2, 2, {}))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--window", "5x", "--disk-capacity", "1", "--network-capacity", "1", "--cpu-capacity", "1"],
            "--window",
        ),
        (
            ["--interval", "0s", "--disk-capacity", "1", "--network-capacity", "1", "--cpu-capacity", "1"],
            "--interval",
        ),
        (
            [
                "--window",
                "5s",
                "--interval",
                "10s",
                "--disk-capacity",
                "1",
                "--network-capacity",
                "1",
                "--cpu-capacity",
                "1",
            ],
            "longer than --window",
        ),
        (["--disk-capacity", "1", "--network-capacity", "1"], "missing --cpu-capacity"),
        (["--disk-capacity", "-1", "--network-capacity", "1", "--cpu-capacity", "1"], "--disk-capacity"),
        (["--capacity-file", "CAPS", "--cpu-capacity", "1"], "exclude each other"),
        (["--capacity-file", "CAPS"], "default.cpu"),
        (["--capacity-file", "MISSING"], "cannot read"),
        (["--disk-capacity", "1"], None),
    ],
)
def test_snapshot_command_refuses_bad_flags_with_one_line(
    flags: list[str], message: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text('{"default": {"disk": 1, "networkIn": 1, "networkOut": 1}}')
    flags = [
        str(caps) if f == "CAPS" else str(tmp_path / "nope.json") if f == "MISSING" else f for f in flags
    ]
    output = tmp_path / "snapshot.json"
    output.write_text("stale")
    code = main(["snapshot", "--bootstrap-server", "127.0.0.1:1", "--output", str(output), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert message is None or message in err, err
    assert not output.exists()
