"""The scoring job: sample store → snapshot.json, broker_scores/, candidates/, manifest.json.

Run embedded (``kafka-balancer score``) or on a cluster::

    spark-submit --master k8s://… -m kafka_balancer.scoring.job --samples s3a://… --out s3a://…
    python -m kafka_balancer.scoring.job --samples DIR --topology FILE --goals FILE --out DIR

All reads and writes happen here; the transforms in :mod:`transforms` are pure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from kafka_balancer.errors import InputError, KafkaBalancerError, ScoringError
from kafka_balancer.formats.goals_file import goals_from_text, read_goals
from kafka_balancer.formats.json_text import document_text
from kafka_balancer.formats.snapshot import cluster_to_snapshot, json_from_text, load_json, parse_snapshot
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.samples.schema import BROKER_DIR, BROKER_SAMPLES, PARTITION_DIR, PARTITION_SAMPLES
from kafka_balancer.scoring import options as opts
from kafka_balancer.scoring import scores, storage, transforms
from kafka_balancer.scoring.manifest import WindowPlan, manifest_document, window_plan
from kafka_balancer.scoring.seal import seal
from kafka_balancer.scoring.session import local_session

SNAPSHOT = "snapshot.json"
MANIFEST = "manifest.json"
BROKER_SCORES = "broker_scores"
CANDIDATES = "candidates"
# The model's load columns and their names in the snapshot.
_LOADS = {
    "disk": "disk",
    "network_in": "networkIn",
    "network_out": "networkOut",
    "cpu": "cpu",
    "follower_cpu": "followerCpu",
}
# What transforms.broker_cpu gives, for a store without broker samples.
_BROKER_CPU = pa.schema([("broker", pa.int32()), ("broker_cpu", pa.float64()), ("samples", pa.int64())])


def read_topology(path: Path) -> Cluster:
    """The brokers of a topology file: the snapshot's ``brokers`` array, bare or as ``{"brokers": …}``."""
    return _topology(load_json(path, "topology"), str(path))


def _topology(data: Any, source: str) -> Cluster:
    brokers = data.get("brokers") if isinstance(data, dict) else data
    return parse_snapshot({"version": 1, "brokers": brokers, "partitions": []}, source.rsplit("/", 1)[-1])


def topology_frame(spark: SparkSession, topology: Cluster) -> DataFrame:
    """The brokers as an Arrow table handed to the JVM: a list of rows would go through a
    parallelized RDD that starts a Python worker to convert them."""
    brokers = topology.brokers
    columns = {
        "broker": pa.array([b.id for b in brokers], pa.int32()),
        "rack": pa.array([b.rack for b in brokers], pa.string()),
        "active": pa.array([b.active for b in brokers], pa.bool_()),
        "share": pa.array([b.warm_up_share for b in brokers], pa.float64()),
    } | {
        c: pa.array([b.capacity[i] for b in brokers], pa.float64())
        for i, c in enumerate(scores.CAPACITY_COLUMNS)
    }
    return spark.createDataFrame(pa.table(columns))


def snapshot_document(topology: Cluster, model: pd.DataFrame) -> dict[str, Any]:
    """The snapshot (docs/design.md) of the model; InputError names the first partition the format
    does not allow."""
    _check_model(topology, model)
    # Whole columns to Python objects at once: pandas rows one by one cost as much as the document.
    columns = [model[c].to_numpy().tolist() for c in ("topic", "partition", "leader", *_LOADS)]
    replicas = [r.tolist() for r in model["replicas"]]
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": members,
            "leader": leader,
            "load": dict(zip(_LOADS.values(), loads, strict=True)),
        }
        for (topic, partition, leader, *loads), members in zip(
            zip(*columns, strict=True), replicas, strict=True
        )
    ]
    return cluster_to_snapshot(topology) | {"partitions": partitions}


def _check_model(topology: Cluster, model: pd.DataFrame) -> None:
    """What ``parse_snapshot`` refuses in a partition, checked a column at a time rather than by
    parsing the whole document back, which was most of the driver's time on a large cluster. A
    partition is one row per topic and partition by construction, and its leader one of its
    replicas or, when it has none, missing."""
    n = len(model)
    # As floats, so that a missing broker id (a null in a sample's list) is NaN, not an error.
    lists = [np.asarray(r if r is not None else [], np.float64) for r in model["replicas"]]
    lengths = np.fromiter(map(len, lists), np.int64, count=n)
    owner = np.repeat(np.arange(n), lengths)
    flat = np.concatenate(lists) if n else np.zeros(0)
    known = np.array([b.id for b in topology.brokers], np.float64)
    order = np.lexsort((flat, owner))
    twice = (flat[order][1:] == flat[order][:-1]) & (owner[order][1:] == owner[order][:-1])
    topics, numbers = model["topic"], model["partition"]

    def name(i: int) -> str:
        return f"{topics.iat[i]}-{numbers.iat[i]}"

    def replicas(i: int) -> str:
        return f"{[None if np.isnan(b) else int(b) for b in lists[i]]} of {name(i)}"

    problems: list[tuple[np.ndarray[Any, Any], Callable[[int], str]]] = [
        (np.flatnonzero(topics.isna().to_numpy() | (topics == "").to_numpy()), lambda i: "topic: empty"),
        (
            np.flatnonzero(numbers.isna().to_numpy() | (numbers < 0).to_numpy()),
            lambda i: f"partition: {numbers.iat[i]} is not a partition number",
        ),
        (np.flatnonzero(lengths == 0), lambda i: f"replicas: {name(i)} has none"),
        (owner[~np.isin(flat, known)], lambda i: f"replicas: {replicas(i)} names a broker not in brokers"),
        (owner[order][1:][twice], lambda i: f"replicas: {replicas(i)} lists a broker twice"),
    ]

    def load(field: str, values: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], Callable[[int], str]]:
        bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
        return bad, lambda i: f"load.{field}: {values[i]} for {name(i)}, not a finite number >= 0"

    for column, field in _LOADS.items():
        problems.append(load(field, model[column].to_numpy(np.float64, na_value=np.nan)))
    found = [(int(rows.min()), describe) for rows, describe in problems if rows.size]
    if found:
        i, describe = min(found, key=lambda f: f[0])
        raise InputError(f"scored snapshot.partitions[{i}].{describe(i)}")


def _windows(samples: DataFrame, options: opts.ScoreOptions) -> tuple[WindowPlan, int]:
    """The windows to use and the number of stored samples, from one scan of two columns."""
    row = samples.agg(
        F.max("ts_ms").alias("newest"),
        F.min(F.col("ts_ms") - F.col("interval_ms")).alias("oldest"),
        F.count(F.lit(1)).alias("rows"),
    ).first()
    if row is None or row["newest"] is None:
        raise InputError(f"samples {options.samples}: no partition samples")
    plan = window_plan(options.window_ms, options.windows, int(row["newest"]), int(row["oldest"]))
    if plan.used == 0:
        raise ScoringError(
            f"samples {options.samples}: no complete window of {options.window_ms} ms yet "
            f"(history covers {plan.newest_ms - int(row['oldest'])} ms); the model is usable "
            "after the first complete window"
        )
    return plan, int(row["rows"])


def _used(samples: DataFrame, windows: WindowPlan) -> DataFrame:
    """The samples of the used windows, bucketed; older files are never read (see ``since``)."""
    start_ms = windows.newest_ms - windows.used * windows.length_ms
    bucketed = transforms.bucket(transforms.since(samples, start_ms), windows.length_ms, windows.newest_ms)
    return transforms.in_windows(bucketed, windows.used)


def run(options: opts.ScoreOptions, spark: SparkSession | None = None) -> dict[str, Any]:
    """Runs the job; returns the manifest it wrote."""
    started = time.monotonic()
    # Local inputs are read before Spark starts (bad input fails at once); remote ones (a run's inputs
    # in s3a:// storage, read by a driver pod) through the session's Hadoop FileSystem.
    local_goals, local_topology = storage.is_local(options.goals), storage.is_local(options.topology)
    goals = read_goals(storage.local_path(options.goals)) if local_goals else None
    topology = read_topology(storage.local_path(options.topology)) if local_topology else None
    spark = spark or local_session(options.master)
    if goals is None:
        goals = goals_from_text(storage.read_text(spark, options.goals), options.goals)
    if topology is None:
        text = storage.read_text(spark, options.topology)
        topology = _topology(json_from_text(text, "topology", options.topology), options.topology)
    partition_uri = storage.join(options.samples, PARTITION_DIR)
    if not storage.exists(spark, partition_uri):
        raise InputError(f"samples {options.samples}: no {PARTITION_DIR}/ directory")
    samples = spark.read.schema(from_arrow_schema(PARTITION_SAMPLES)).parquet(partition_uri)
    windows, stored = _windows(samples, options)

    # The only scan of the sample rows, rolled up and then aggregated to one row per partition.
    whole = transforms.partition_model(
        transforms.rollup(_used(samples, windows)), windows.used, options.min_samples_per_window
    ).cache()
    # Collected once for the manifest's completeness figures.
    complete_pd: pd.DataFrame = whole.select("topic", "partition", "complete", "samples").toPandas()
    is_complete = complete_pd["complete"].to_numpy(bool)
    short = complete_pd[~is_complete]
    incomplete = sorted(f"{t}-{p}" for t, p in zip(short["topic"], short["partition"], strict=True))
    model = (whole if is_complete.all() else whole.where("complete")).drop("complete", "samples")

    # One row per broker, collected once: the manifest's count and the cpu the model joins.
    broker_uri = storage.join(options.samples, BROKER_DIR)
    if storage.exists(spark, broker_uri):
        broker_samples = spark.read.schema(from_arrow_schema(BROKER_SAMPLES)).parquet(broker_uri)
        broker_cpu = transforms.broker_cpu(_used(broker_samples, windows)).toArrow()
    else:
        broker_cpu = _BROKER_CPU.empty_table()
    known_cpu = broker_cpu.filter(broker_cpu["broker_cpu"].is_valid())
    if known_cpu.num_rows > 0:
        cpu_source, cpu = "broker samples", spark.createDataFrame(known_cpu.select(["broker", "broker_cpu"]))
    else:
        # Not an empty Arrow table: Spark would see it is empty and drop the join, which changes
        # the order the model's rows (and so the broker loads' sums) come in.
        cpu_source, cpu = "none (cpu 0)", spark.createDataFrame([], "broker int, broker_cpu double")
    model = transforms.attribute_cpu(model, cpu).cache()
    model_pd: pd.DataFrame = model.select(
        "topic", "partition", "replicas", "leader", "disk", "network_in", "network_out", "cpu", "follower_cpu"
    ).toPandas()
    snapshot = snapshot_document(topology, model_pd)

    loads = transforms.broker_loads(
        transforms.replica_contributions(transforms.replica_rows(model)), topology_frame(spark, topology)
    )
    loads_pd: pd.DataFrame = loads.toPandas()
    scores_pd = scores.score_brokers(loads_pd, goals)
    over = scores_pd[(scores_pd["violation"] > 0) & (scores_pd["quantity"] > scores_pd["hi"])]
    violating = sorted({int(b) for b in over["broker"]})
    candidates_pd = scores.candidates(model_pd, loads_pd, goals, options.top, violating)

    outputs = {
        name: storage.join(options.out, name) for name in (SNAPSHOT, BROKER_SCORES, CANDIDATES, MANIFEST)
    }
    snapshot_text = document_text(snapshot)
    storage.write_text(spark, outputs[SNAPSHOT], snapshot_text)
    storage.write_parquet(spark, outputs[BROKER_SCORES], _table(scores_pd, scores.SCORE_SCHEMA))
    storage.write_parquet(spark, outputs[CANDIDATES], _table(candidates_pd, scores.CANDIDATE_SCHEMA))
    rows = {
        "partitionSamples": stored,
        "partitionSamplesInWindows": int(complete_pd["samples"].sum()),
        "brokerSamplesInWindows": int(pc.sum(broker_cpu["samples"]).as_py() or 0),
        "partitions": len(model_pd),
        "replicas": int(model_pd["replicas"].map(len).sum()),
        "brokers": len(loads_pd),
        "brokerScores": len(scores_pd),
        "candidates": len(candidates_pd),
    }
    manifest = manifest_document(
        windows=windows,
        min_samples=options.min_samples_per_window,
        rows=rows,
        incomplete=incomplete,
        complete=int(is_complete.sum()),
        cpu_source=cpu_source,
        follower_cpu_fraction=transforms.DEFAULT_FOLLOWER_CPU_FRACTION,
        inputs={"samples": options.samples, "topology": options.topology, "goals": options.goals},
        outputs=outputs,
        seconds=time.monotonic() - started,
    )
    manifest_text = json.dumps(manifest, indent=1)
    storage.write_text(spark, outputs[MANIFEST], manifest_text)
    if options.seal_file is not None:
        _write_seal(options.seal_file, seal(manifest_text.encode(), snapshot_text.encode()))
    for frame in (whole, model):
        frame.unpersist()
    return manifest


def _table(frame: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


def _write_seal(path: str, digests: str) -> None:
    try:
        Path(path).write_text(digests, encoding="utf-8")
    except OSError as err:
        raise ScoringError(f"cannot write the outputs' digests to {path}: {err.strerror}") from err


def summary(manifest: dict[str, Any]) -> str:
    rows, comp = manifest["rows"], manifest["completeness"]
    return (
        f"score: {rows['partitions']} partition(s) modelled from {manifest['windows']['used']} window(s), "
        f"{comp['incompleteCount']} incomplete excluded, {rows['candidates']} candidate action(s); "
        f"{manifest['durationSeconds']:.1f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka_balancer.scoring.job", description="Score a Kafka cluster.")
    opts.add_arguments(parser)
    parser.set_defaults(master=None)
    args = parser.parse_args(argv)
    try:
        manifest = run(opts.from_args(args))
    except InputError as exc:
        print(f"score: bad input: {exc}", file=sys.stderr)
        return 2
    except KafkaBalancerError as exc:
        print(f"score: {exc}", file=sys.stderr)
        return 1
    print(summary(manifest), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
