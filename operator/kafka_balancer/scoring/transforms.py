"""Pure DataFrame → DataFrame transforms of the scoring job (no I/O, no actions).

Windows: samples are bucketed by ``ts_ms`` (the end of their interval) into windows of
``window_ms`` ending at the newest sample: window 0 is ``(newest − w, newest]``, window 1 the
one before, and so on.

Load model rules (the snapshot's per-partition ``load``):
- disk: the newest ``size_bytes``; networkIn/Out: Σ bytes ÷ Σ interval seconds over the used
  windows (a time-weighted average); replicas and leader: the newest sample's (a leader that
  is not a replica, e.g. -1 while offline, is taken to be the preferred leader, ``replicas[0]``).
- cpu: a broker's average cpu over the used windows (time-weighted, null samples ignored,
  :func:`broker_cpu`), which the driver shares among the partitions it leads
  (:mod:`kafka_balancer.scoring.model_loads`).

Performance: the job reads the samples once. :func:`since` prunes Parquet files and row groups
older than the used windows (the collector writes one file per pass, named and sorted by time);
:func:`rollup` then folds each partition's samples into one row per replica list in a hash
aggregation, and the job collects those rows once. Each partition's model row (newest state,
windowed averages, completeness), cpu shares, broker loads, bands, violations and candidates are
computed on the driver from them (:mod:`kafka_balancer.scoring.model_rows`,
:mod:`kafka_balancer.scoring.model_loads` and :mod:`kafka_balancer.scoring.scores`, which call
:mod:`kafka_balancer.model.math`): no Python UDF runs, so no Python worker starts.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PARTITION_KEY = ("topic", "partition")


def bucket(samples: DataFrame, window_ms: int, newest_ms: int) -> DataFrame:
    """Adds ``window``: 0 for the newest window, 1 for the one before, …"""
    return samples.withColumn(
        "window", F.floor((F.lit(newest_ms) - F.col("ts_ms")) / F.lit(window_ms)).cast("int")
    )


def since(samples: DataFrame, start_ms: int) -> DataFrame:
    """Samples with ``ts_ms`` > ``start_ms``: a plain column comparison, so Parquet skips older
    files and row groups by their statistics (``window`` is computed and cannot be pushed down)."""
    return samples.where(F.col("ts_ms") > F.lit(start_ms))


def in_windows(bucketed: DataFrame, windows: int) -> DataFrame:
    """Keeps the newest ``windows`` windows."""
    return bucketed.where((F.col("window") >= 0) & (F.col("window") < windows))


def window_samples(k: int) -> str:
    """The column of :func:`rollup` that counts a row's samples in window ``k``."""
    return f"samples_{k}"


def rollup(used: DataFrame, windows: int) -> DataFrame:
    """One row per partition and replica list (one list unless a reassignment happened in the
    used windows) with the sample columns the model reads: the newest sample's ``ts_ms``,
    ``leader`` and ``size_bytes``, summed ``bytes_in``, ``bytes_out`` and ``interval_ms``, and
    per used window ``k`` its sample count (:func:`window_samples`). The driver folds a
    partition's rows into its model row (:mod:`kafka_balancer.scoring.model_rows`).

    ``replicas`` is a grouping key, not an aggregate: an aggregation buffer holding an array is
    not fixed-width, which makes Spark sort every row (SortAggregate) instead of hashing them
    (HashAggregate); so is an aggregation by partition alone that keeps the newest list, which
    is why the newest row of a partition is found on the driver."""
    in_window = (F.count(F.when(F.col("window") == F.lit(k), True)) for k in range(windows))
    return used.groupBy(*PARTITION_KEY, "replicas").agg(
        F.max("ts_ms").alias("ts_ms"),
        F.max_by("leader", "ts_ms").alias("leader"),
        F.max_by("size_bytes", "ts_ms").alias("size_bytes"),
        F.sum("bytes_in").alias("bytes_in"),
        F.sum("bytes_out").alias("bytes_out"),
        F.sum("interval_ms").alias("interval_ms"),
        *(count.alias(window_samples(k)) for k, count in enumerate(in_window)),
    )


def broker_cpu(broker_samples_used: DataFrame) -> DataFrame:
    """Per broker: time-weighted average cores used over the used windows (null samples ignored;
    null when it has no cpu sample), and ``samples``, its samples in the used windows."""
    known = F.col("cpu").isNotNull()
    return broker_samples_used.groupBy("broker").agg(
        (
            F.sum(F.when(known, F.col("cpu") * F.col("interval_ms")))
            / F.sum(F.when(known, F.col("interval_ms")))
        ).alias("broker_cpu"),
        F.count(F.lit(1)).alias("samples"),
    )
