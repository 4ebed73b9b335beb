"""Transforms on small inputs; expected values are worked out by hand or in plain Python here."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES
from kafka_balancer.scoring import model_rows, transforms
from tests.support.samples import broker_row, partition_row

W = 300_000
NEWEST = 1_000_000


def frame(spark: SparkSession, rows: list[dict[str, Any]], schema: Any) -> DataFrame:
    import pyarrow as pa

    return spark.createDataFrame(pa.Table.from_pylist(rows, schema).to_pandas())


def partition_model(used: DataFrame, windows: int, min_samples: int) -> list[dict[str, Any]]:
    """The job's model rows: ``used`` rolled up in Spark, folded on the driver."""
    rolled = transforms.rollup(used, windows).toArrow()
    rows: list[dict[str, Any]] = model_rows.partition_model(rolled, windows, min_samples).to_pylist()
    return rows


def test_bucket_counts_windows_back_from_the_newest_sample(spark: SparkSession) -> None:
    ts = [NEWEST, NEWEST - 1, NEWEST - W + 1, NEWEST - W, NEWEST - 2 * W + 1, NEWEST - 2 * W]
    rows = [partition_row(t, "t", 0, [1], 1) for t in ts]
    got = transforms.bucket(frame(spark, rows, PARTITION_SAMPLES), W, NEWEST)
    assert sorted((r["ts_ms"], r["window"]) for r in got.collect()) == sorted(
        zip(ts, [0, 0, 0, 1, 1, 2], strict=True)
    )
    kept = transforms.in_windows(got, 2).collect()
    assert sorted(r["ts_ms"] for r in kept) == sorted(ts[:5])


def test_completeness_excludes_partitions_short_of_samples_in_any_used_window(spark: SparkSession) -> None:
    # Window 0 = (NEWEST - W, NEWEST], window 1 the one before.
    w0 = [NEWEST, NEWEST - 60_000]
    w1 = [NEWEST - W, NEWEST - W - 60_000]
    rows = (
        [partition_row(t, "full", 0, [1], 1) for t in w0 + w1]
        + [partition_row(t, "thin", 0, [1], 1) for t in [*w0, w1[0]]]
        + [partition_row(t, "new", 0, [1], 1) for t in w0]
    )
    used = transforms.in_windows(transforms.bucket(frame(spark, rows, PARTITION_SAMPLES), W, NEWEST), 2)
    model = partition_model(used, windows=2, min_samples=2)
    assert {r["topic"]: (r["complete"], r["samples"]) for r in model} == {
        "full": (True, 4),
        "thin": (False, 3),
        "new": (False, 2),
    }
    # With one sample a window, thin is complete; new, with no sample in window 1, still is not.
    model = partition_model(used, windows=2, min_samples=1)
    assert {r["topic"]: r["complete"] for r in model} == {"full": True, "thin": True, "new": False}


def test_partition_model_takes_newest_state_and_windowed_averages(spark: SparkSession) -> None:
    rows = [
        partition_row(NEWEST - 120_000, "t", 0, [1, 2], 1, size=100.0, bytes_in=600.0, bytes_out=60.0),
        partition_row(
            NEWEST - 60_000, "t", 0, [1, 2], 1, size=200.0, bytes_in=1200.0, bytes_out=0.0, interval=30_000
        ),
        partition_row(NEWEST, "t", 0, [2, 1], 2, size=300.0, bytes_in=0.0, bytes_out=240.0),
        partition_row(NEWEST, "t", 1, [3, 1], -1, size=7.0, bytes_in=60.0, bytes_out=0.0),
    ]
    used = transforms.in_windows(transforms.bucket(frame(spark, rows, PARTITION_SAMPLES), W, NEWEST), 1)
    model = {r["partition"]: r for r in partition_model(used, windows=1, min_samples=1)}
    p0 = model[0]
    # 1800 bytes in over 60 + 30 + 60 = 150 s; 300 bytes out over the same.
    assert p0["disk"] == 300.0
    assert p0["network_in"] == pytest.approx(1800.0 / 150.0)
    assert p0["network_out"] == pytest.approx(300.0 / 150.0)
    assert list(p0["replicas"]) == [2, 1]
    assert p0["leader"] == 2
    # No leader (-1): the preferred leader stands in.
    assert model[1]["leader"] == 3
    assert model[1]["network_in"] == pytest.approx(1.0)


def test_broker_cpu_is_time_weighted_and_ignores_null_samples(spark: SparkSession) -> None:
    broker_samples = [
        broker_row(NEWEST, 1, 2.0, interval=60_000),
        broker_row(NEWEST - 60_000, 1, 4.0, interval=180_000),
        broker_row(NEWEST, 1, None),
        broker_row(NEWEST, 2, None),
    ]
    cpu = transforms.broker_cpu(frame(spark, broker_samples, BROKER_SAMPLES))
    # Time-weighted: (2 × 60 + 4 × 180) / 240 = 3.5 cores; broker 2 has no cpu data.
    rows = {r["broker"]: (r["broker_cpu"], r["samples"]) for r in cpu.collect()}
    assert rows == {1: (pytest.approx(3.5), 3), 2: (None, 1)}
