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
:func:`rollup` then folds each partition's samples of a window into one row shaped like a sample
(sums, the newest state, a ``samples`` count) in a hash aggregation, so the model (with each
partition's completeness) aggregates partitions × windows rows instead of every sample; it
accepts bucketed raw samples too.

The job collects the model once (one row per partition); cpu shares, broker loads, bands,
violations and candidates are computed on the driver from it
(:mod:`kafka_balancer.scoring.model_loads` and :mod:`kafka_balancer.scoring.scores`, which call
:mod:`kafka_balancer.model.math`): no Python UDF runs, so no Python worker starts.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
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


def rollup(used: DataFrame) -> DataFrame:
    """One row per partition, window and replica list (one list per window unless a
    reassignment happened in it), with the sample columns the model reads: the newest
    sample's ``ts_ms``, ``leader`` and ``size_bytes``, summed ``bytes_in``, ``bytes_out`` and
    ``interval_ms``, and ``samples``, how many samples it stands for.

    ``replicas`` is a grouping key, not an aggregate: an aggregation buffer holding an array is
    not fixed-width, which makes Spark sort every sample (SortAggregate) instead of hashing them
    (HashAggregate); the newest row of the newest group still carries the newest replicas."""
    return used.groupBy(*PARTITION_KEY, "window", "replicas").agg(
        F.max("ts_ms").alias("ts_ms"),
        F.max_by("leader", "ts_ms").alias("leader"),
        F.max_by("size_bytes", "ts_ms").alias("size_bytes"),
        F.sum("bytes_in").alias("bytes_in"),
        F.sum("bytes_out").alias("bytes_out"),
        F.sum("interval_ms").alias("interval_ms"),
        F.count(F.lit(1)).alias("samples"),
    )


def _sample_count(frame: DataFrame) -> Column:
    """Samples a row stands for: its ``samples`` after :func:`rollup`, else one."""
    return F.col("samples") if "samples" in frame.columns else F.lit(1)


def partition_model(used: DataFrame, windows: int, min_samples: int) -> DataFrame:
    """One row per partition: newest replicas/leader/size, windowed network averages, ``samples``
    in all used windows, and ``complete`` when every one of the ``windows`` used windows holds at
    least ``min_samples`` samples (``used``: bucketed samples or their :func:`rollup`; sums of sums
    and the newest of the newest agree). One aggregation: the used windows are few, so each
    window's sample count is a column of it, not a grouping of its own."""
    count = _sample_count(used)
    per_window = [
        F.coalesce(F.sum(F.when(F.col("window") == F.lit(k), count)), F.lit(0)) >= F.lit(min_samples)
        for k in range(windows)
    ]
    newest = F.struct("ts_ms", "replicas", "leader", "size_bytes")
    agg = used.groupBy(*PARTITION_KEY).agg(
        F.max_by(newest, F.col("ts_ms")).alias("newest"),
        F.sum("bytes_in").alias("bytes_in"),
        F.sum("bytes_out").alias("bytes_out"),
        (F.sum("interval_ms") / F.lit(1000.0)).alias("seconds"),
        F.sum(count).alias("samples"),
        reduce(lambda a, b: a & b, per_window, F.lit(True)).alias("complete"),
    )
    replicas = F.col("newest.replicas")
    leader = F.col("newest.leader")
    return agg.select(
        *PARTITION_KEY,
        replicas.alias("replicas"),
        F.when(F.array_contains(replicas, leader), leader).otherwise(replicas[0]).alias("leader"),
        F.col("newest.size_bytes").alias("disk"),
        (F.col("bytes_in") / F.col("seconds")).alias("network_in"),
        (F.col("bytes_out") / F.col("seconds")).alias("network_out"),
        F.col("bytes_in"),
        "samples",
        "complete",
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
