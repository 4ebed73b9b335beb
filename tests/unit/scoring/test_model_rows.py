"""The driver's fold of the rollup into model rows, on rows written here by hand: the cases the
collector does not write (no replicas, no interval) and the fold's order."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from kafka_balancer.scoring.model_rows import partition_model


def rolled(rows: list[dict[str, Any]]) -> pa.Table:
    schema = pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("replicas", pa.list_(pa.int32())),
            ("ts_ms", pa.int64()),
            ("leader", pa.int32()),
            ("size_bytes", pa.float64()),
            ("bytes_in", pa.float64()),
            ("bytes_out", pa.float64()),
            ("interval_ms", pa.int64()),
            ("samples_0", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema)


def row(topic: str, partition: int, replicas: list[int], ts: int, leader: int, **more: Any) -> dict[str, Any]:
    base = {"size_bytes": 1.0, "bytes_in": 60.0, "bytes_out": 0.0, "interval_ms": 60_000, "samples_0": 1}
    key = {"topic": topic, "partition": partition, "replicas": replicas, "ts_ms": ts, "leader": leader}
    return key | base | more


def test_rows_come_one_per_partition_in_topic_and_partition_order() -> None:
    rows = [row("b", 0, [1], 5, 1), row("a", 10, [1], 5, 1), row("a", 9, [2], 5, 2), row("a", 10, [2], 9, 2)]
    model = partition_model(rolled(rows), 1, 1).to_pylist()
    assert [(r["topic"], r["partition"], r["replicas"], r["samples"]) for r in model] == [
        ("a", 9, [2], 1),
        ("a", 10, [2], 2),  # the newest list of two
        ("b", 0, [1], 1),
    ]


def test_a_partition_without_replicas_has_no_leader_and_no_interval_no_rate() -> None:
    rows = [row("t", 0, [], 5, 3), row("t", 1, [4, 5], 5, 3, interval_ms=0)]
    none, zero = partition_model(rolled(rows), 1, 1).to_pylist()
    assert none["leader"] is None
    # Not a replica: the preferred leader stands in.
    assert zero["leader"] == 4
    assert math.isinf(zero["network_in"]) and math.isnan(zero["network_out"])


def test_no_rows_no_model() -> None:
    assert partition_model(rolled([]), 1, 1).num_rows == 0
