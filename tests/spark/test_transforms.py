"""Transforms on small inputs; expected values are worked out by hand or in plain Python here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession

from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model import math
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES
from kafka_balancer.scoring import scores as scoring
from kafka_balancer.scoring import transforms
from tests.support.samples import broker_row, partition_row

W = 300_000
NEWEST = 1_000_000


def frame(spark: SparkSession, rows: list[dict[str, Any]], schema: Any) -> DataFrame:
    import pyarrow as pa

    return spark.createDataFrame(pa.Table.from_pylist(rows, schema).to_pandas())


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
    model = transforms.partition_model(used, windows=2, min_samples=2)
    assert {r["topic"]: (r["complete"], r["samples"]) for r in model.collect()} == {
        "full": (True, 4),
        "thin": (False, 3),
        "new": (False, 2),
    }
    # With one sample a window, thin is complete; new, with no sample in window 1, still is not.
    model = transforms.partition_model(used, windows=2, min_samples=1)
    assert {r["topic"]: r["complete"] for r in model.collect()} == {"full": True, "thin": True, "new": False}


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
    model = {r["partition"]: r for r in transforms.partition_model(used, windows=1, min_samples=1).collect()}
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


def test_cpu_is_shared_by_bytes_in_among_the_partitions_a_broker_leads(spark: SparkSession) -> None:
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
    model = spark.createDataFrame(
        [("a", 0, 1, 100.0), ("a", 1, 1, 300.0), ("b", 0, 2, 50.0), ("c", 0, 3, 0.0), ("c", 1, 3, 0.0)],
        "topic string, partition int, leader int, bytes_in double",
    )
    cpu3 = spark.createDataFrame([(3, 1.0)], "broker int, broker_cpu double")
    got = transforms.attribute_cpu(
        model, cpu.drop("samples").unionByName(cpu3), follower_fraction=0.5
    ).collect()
    by_name = {(r["topic"], r["partition"]): (r["cpu"], r["follower_cpu"]) for r in got}
    assert by_name == {
        ("a", 0): (pytest.approx(0.875), pytest.approx(0.4375)),
        ("a", 1): (pytest.approx(2.625), pytest.approx(1.3125)),
        ("b", 0): (0.0, 0.0),
        ("c", 0): (pytest.approx(0.5), pytest.approx(0.25)),  # no bytes in: shared evenly
        ("c", 1): (pytest.approx(0.5), pytest.approx(0.25)),
    }


CONTRIBUTIONS = ("c_disk", "c_networkIn", "c_networkOut", "c_cpu")
PARTITIONS = [
    # topic, partition, replicas, leader, disk, network_in, network_out, cpu, follower_cpu
    ("a", 0, [1, 2, 3], 1, 1000.0, 10.0, 20.0, 0.5, 0.1),
    ("a", 1, [2, 3], 3, 500.0, 4.0, 0.0, 0.2, 0.05),
    ("b", 0, [3], 3, 50.0, 1.0, 3.0, 0.1, 0.0),
]
MODEL_SCHEMA = (
    "topic string, partition int, replicas array<int>, leader int, disk double, network_in double, "
    "network_out double, cpu double, follower_cpu double"
)
TOPOLOGY_SCHEMA = (
    "broker int, rack string, active boolean, share double, cap_disk double, cap_networkIn double, "
    "cap_networkOut double, cap_cpu double"
)


def expected_loads() -> dict[int, list[float]]:
    """The load model of docs/design.md, written out anew: [disk, in, out, cpu, replicas, leaders]."""
    loads = {b: [0.0] * 6 for b in (1, 2, 3, 4)}
    for _, _, replicas, leader, disk, n_in, n_out, cpu, fcpu in PARTITIONS:
        for b in replicas:
            loads[b][0] += disk
            loads[b][1] += n_in
            loads[b][4] += 1
            if b == leader:
                loads[b][2] += n_out + n_in * (len(replicas) - 1)
                loads[b][3] += cpu
                loads[b][5] += 1
            else:
                loads[b][3] += fcpu
    return loads


def test_broker_loads_follow_the_load_model(spark: SparkSession) -> None:
    model = spark.createDataFrame(PARTITIONS, MODEL_SCHEMA)
    topology = spark.createDataFrame(
        [(b, "r", True, 1.0, 1e6, 1e3, 1e3, 8.0) for b in (1, 2, 3, 4)], TOPOLOGY_SCHEMA
    )
    got = transforms.broker_loads(transforms.replica_contributions(transforms.replica_rows(model)), topology)
    cols = ["load_disk", "load_networkIn", "load_networkOut", "load_cpu", "replicas", "leaders"]
    actual = {r["broker"]: [float(r[c]) for c in cols] for r in got.collect()}
    expected = expected_loads()
    assert actual.keys() == expected.keys()
    for b, values in expected.items():
        assert actual[b] == pytest.approx(values), b


def test_spark_contributions_are_the_planners_to_the_last_bit(spark: SparkSession) -> None:
    """Spark computes what ``model.math.replica_contribution`` computes for the planner; a different
    order of operations would change the broker loads' last bits and the scores with them."""
    rng = np.random.default_rng(5)
    n = 2000
    rows = {
        "broker": np.arange(n, dtype=np.int32),
        "is_leader": rng.random(n) < 0.4,
        "rf": rng.integers(1, 5, n).astype(np.int32),
        **{c: rng.lognormal(10, 3, n) for c in ("disk", "network_in", "network_out", "cpu", "follower_cpu")},
    }
    frame = spark.createDataFrame(pd.DataFrame(rows))
    got: pd.DataFrame = transforms.replica_contributions(frame).toPandas()
    want = math.replica_contribution(
        rows["disk"],
        rows["network_in"],
        rows["network_out"],
        rows["cpu"],
        rows["follower_cpu"],
        rows["rf"],
        rows["is_leader"],
    )
    np.testing.assert_array_equal(got.sort_values("broker")[list(CONTRIBUTIONS)].to_numpy(), want)


def test_scores_and_candidates_for_an_overloaded_broker(spark: SparkSession) -> None:
    # Two equal brokers; broker 1 holds 300 of 400 disk bytes. DiskDistribution ±10 %: mean
    # utilisation 400 / 2000 = 0.2, band 180 .. 220 per broker; broker 1 is 80 above (÷ 200).
    model = spark.createDataFrame(
        [
            ("t", 0, [1], 1, 200.0, 0.0, 0.0, 0.0, 0.0),
            ("t", 1, [1], 1, 100.0, 0.0, 0.0, 0.0, 0.0),
            ("t", 2, [2], 2, 100.0, 0.0, 0.0, 0.0, 0.0),
        ],
        MODEL_SCHEMA,
    )
    topology = spark.createDataFrame(
        [(b, "r", True, 1.0, 1000.0, 1e3, 1e3, 8.0) for b in (1, 2)], TOPOLOGY_SCHEMA
    )
    loads = transforms.broker_loads(
        transforms.replica_contributions(transforms.replica_rows(model)), topology
    )
    loads_pd = loads.toPandas()
    goal = GoalSpec.default(GoalType.DISK_DISTRIBUTION, threshold_percent=0)
    scores = {r["broker"]: r for r in scoring.score_brokers(loads_pd, [goal]).to_dict("records")}
    assert (scores[1]["lo"], scores[1]["hi"]) == (pytest.approx(180.0), pytest.approx(220.0))
    assert scores[1]["violation"] == pytest.approx(80.0 / 200.0)
    assert scores[2]["violation"] == pytest.approx(80.0 / 200.0)  # 100 is 80 below 180
    assert scores[1]["deviation"] == pytest.approx(0.5)
    found = scoring.candidates(model.toPandas(), loads_pd, [goal], top=5, violating=[1]).to_dict("records")
    # Moving t-1 (100 bytes) lands both brokers at 200: 0.4 + 0.4 gone. Moving t-0 (200)
    # overshoots: broker 1 at 100 (80 below) and broker 2 at 300 (80 above): no gain, not listed.
    assert [(r["action"], r["partition"], r["target_broker"]) for r in found] == [("move", 1, 2)]
    assert found[0]["improvement"] == pytest.approx(0.8)
    assert found[0]["bytes"] == 100.0
