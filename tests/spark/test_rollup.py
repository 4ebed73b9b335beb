"""The rollup the job aggregates instead of raw samples gives the same completeness and model,
also when a reassignment changes the replica list inside a window."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from kafka_balancer.samples.schema import PARTITION_SAMPLES
from kafka_balancer.scoring import model_rows, transforms
from tests.support.samples import partition_row

W = 300_000
NEWEST = 1_000_000


def test_rollup_keeps_newest_state_sums_and_counts(spark: SparkSession) -> None:
    rows = [
        # Window 1, then window 0 with a reassignment [1, 2] → [3, 2] and a leader change.
        partition_row(NEWEST - 360_000, "t", 0, [1, 2], 1, size=10.0, bytes_in=600.0, bytes_out=60.0),
        partition_row(NEWEST - 240_000, "t", 0, [1, 2], 1, size=20.0, bytes_in=1200.0, bytes_out=0.0),
        partition_row(NEWEST - 60_000, "t", 0, [3, 2], 2, size=30.0, bytes_in=0.0, bytes_out=240.0),
        partition_row(NEWEST, "t", 0, [3, 2], 3, size=40.0, bytes_in=60.0, bytes_out=0.0, interval=30_000),
        partition_row(NEWEST, "u", 0, [2], 2, size=5.0, bytes_in=60.0),
    ]
    samples = transforms.in_windows(
        transforms.bucket(
            spark.createDataFrame(pa.Table.from_pylist(rows, PARTITION_SAMPLES).to_pandas()), W, NEWEST
        ),
        2,
    )
    rolled = transforms.rollup(samples, 2)
    # One row per replica list: t's [1, 2] (a sample in each window) and [3, 2] (two in window 0).
    rows_rolled = rolled.collect()
    assert sorted((r["topic"], list(r["replicas"]), r["samples_0"], r["samples_1"]) for r in rows_rolled) == [
        ("t", [1, 2], 1, 1),
        ("t", [3, 2], 2, 0),
        ("u", [2], 1, 0),
    ]

    model = {r["topic"]: r for r in model_rows.partition_model(rolled.toArrow(), 2, 1).to_pylist()}
    assert {topic: (r["complete"], r["samples"]) for topic, r in model.items()} == {
        "t": (True, 4),
        "u": (False, 1),
    }
    t = model["t"]
    assert (list(t["replicas"]), t["leader"], t["disk"]) == ([3, 2], 3, 40.0)
    # 1860 bytes in, 300 out, over 60 + 60 + 60 + 30 = 210 s.
    assert t["network_in"] == pytest.approx(1860.0 / 210.0)
    assert t["network_out"] == pytest.approx(300.0 / 210.0)
