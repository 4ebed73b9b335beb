"""Pure DataFrame → DataFrame transforms of the scoring job (no I/O, no actions).

Windows: samples are bucketed by ``ts_ms`` (the end of their interval) into windows of
``window_ms`` ending at the newest sample: window 0 is ``(newest − w, newest]``, window 1 the
one before, and so on.

Load model rules (the snapshot's per-partition ``load``):
- disk: the newest ``size_bytes``; networkIn/Out: Σ bytes ÷ Σ interval seconds over the used
  windows (a time-weighted average); replicas and leader: the newest sample's (a leader that
  is not a replica, e.g. -1 while offline, is taken to be the preferred leader, ``replicas[0]``).
- cpu: a broker's average cpu over the used windows (time-weighted, null samples ignored) is
  attributed to the partitions it leads in proportion to their bytes in (evenly when none has
  any). Partitions whose leader has no cpu samples get 0.
- followerCpu: ``follower_fraction`` × cpu, a fixed estimate (followers fetch and append what the
  leader receives but serve no consumers).

Performance: the job reads the samples once. :func:`since` prunes Parquet files and row groups
older than the used windows (the collector writes one file per pass, named and sorted by time);
:func:`rollup` then folds each partition's samples of a window into one row shaped like a sample
(sums, the newest state, a ``samples`` count) in a hash aggregation, so the model (with each
partition's completeness) aggregates partitions × windows rows instead of every sample; it
accepts bucketed raw samples too.

Broker loads are summed here; bands, violations and candidates are computed on the driver from
the collected broker loads and model (:mod:`kafka_balancer.scoring.scores`, which calls
:mod:`kafka_balancer.model.math`): no Python UDF runs, so no Python worker starts.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_balancer.scoring import scores

DEFAULT_FOLLOWER_CPU_FRACTION = 0.2
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


def attribute_cpu(
    partitions: DataFrame, cpu: DataFrame, follower_fraction: float = DEFAULT_FOLLOWER_CPU_FRACTION
) -> DataFrame:
    """Adds ``cpu`` and ``follower_cpu``: each leader's cpu shared by bytes in (see module doc)."""
    led = Window.partitionBy("leader")
    with_cpu = partitions.join(cpu.withColumnRenamed("broker", "leader"), "leader", "left")
    total_in = F.sum("bytes_in").over(led)
    share = F.when(total_in > 0, F.col("bytes_in") / total_in).otherwise(1.0 / F.count(F.lit(1)).over(led))
    part_cpu = F.coalesce(F.col("broker_cpu") * share, F.lit(0.0))
    return (
        with_cpu.withColumn("cpu", part_cpu)
        .withColumn("follower_cpu", F.col("cpu") * F.lit(follower_fraction))
        .drop("broker_cpu")
    )


def replica_rows(partitions: DataFrame) -> DataFrame:
    """One row per replica: its broker, whether it leads, the partition's RF and load."""
    return partitions.select(
        *PARTITION_KEY,
        "replicas",
        F.size("replicas").alias("rf"),
        F.explode("replicas").alias("broker"),
        "leader",
        "disk",
        "network_in",
        "network_out",
        "cpu",
        "follower_cpu",
    ).withColumn("is_leader", F.col("broker") == F.col("leader"))


def replica_contributions(replicas: DataFrame) -> DataFrame:
    """Per replica: the load it adds to its broker, ``model.math.replica_contribution`` in Spark's
    own expressions (no Python worker): the same IEEE operations in the same order, so the same
    bits (tests/spark/test_transforms.py compares them)."""
    leads = F.col("is_leader")
    network_out = F.col("network_out") + F.col("network_in") * (F.col("rf").cast("double") - F.lit(1.0))
    loads = (
        F.col("disk"),
        F.col("network_in"),
        F.when(leads, network_out).otherwise(F.lit(0.0)),
        F.when(leads, F.col("cpu")).otherwise(F.col("follower_cpu")),
    )
    return replicas.select(
        "broker",
        "is_leader",
        *(load.alias(name) for load, name in zip(loads, scores.CONTRIBUTION_COLUMNS, strict=True)),
    )


def broker_loads(contributions: DataFrame, topology: DataFrame) -> DataFrame:
    """Per broker of the topology: summed loads, replica and leader counts, capacity, state."""
    sums = contributions.groupBy("broker").agg(
        *(
            F.sum(c).alias(load)
            for c, load in zip(scores.CONTRIBUTION_COLUMNS, scores.LOAD_COLUMNS, strict=True)
        ),
        F.count(F.lit(1)).alias("replicas"),
        F.sum(F.col("is_leader").cast("long")).alias("leaders"),
    )
    zero: dict[str, bool | float | int | str] = {c: 0.0 for c in scores.LOAD_COLUMNS}
    zero |= {"replicas": 0, "leaders": 0}
    return topology.join(sums, "broker", "left").fillna(zero)
