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
from kafka_balancer.scoring import model_loads, model_rows, scores, storage, transforms
from kafka_balancer.scoring import options as opts
from kafka_balancer.scoring.manifest import WindowPlan, manifest_document, window_plan
from kafka_balancer.scoring.model_loads import ReplicaLists
from kafka_balancer.scoring.seal import seal
from kafka_balancer.scoring.session import local_session

SNAPSHOT = "snapshot.json"
MANIFEST = "manifest.json"
BROKER_SCORES = "broker_scores"
CANDIDATES = "candidates"
# The model's load columns and their names in the snapshot.
_SNAPSHOT_LOADS = ("disk", "networkIn", "networkOut", "cpu", "followerCpu")
_LOADS = dict(zip(model_loads.LOAD_COLUMNS, _SNAPSHOT_LOADS, strict=True))
# What transforms.broker_cpu gives, for a store without broker samples.
_BROKER_CPU = pa.schema([("broker", pa.int32()), ("broker_cpu", pa.float64()), ("samples", pa.int64())])


def read_topology(path: Path) -> Cluster:
    """The brokers of a topology file: the snapshot's ``brokers`` array, bare or as ``{"brokers": …}``."""
    return _topology(load_json(path, "topology"), str(path))


def _topology(data: Any, source: str) -> Cluster:
    brokers = data.get("brokers") if isinstance(data, dict) else data
    return parse_snapshot({"version": 1, "brokers": brokers, "partitions": []}, source.rsplit("/", 1)[-1])


def snapshot_document(topology: Cluster, model: pd.DataFrame, replicas: ReplicaLists) -> dict[str, Any]:
    """The snapshot (docs/design.md) of the model (one row per partition, its replica lists
    apart); InputError names the first partition the format does not allow."""
    _check_model(topology, model, replicas)
    # Whole columns to Python objects at once: pandas rows one by one cost as much as the document.
    columns = [model[c].to_numpy().tolist() for c in ("topic", "partition", "leader", *_LOADS)]
    # The load's keys written out (they are _LOADS' values): a dict display costs half of
    # dict(zip(...)) once per partition.
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": members,
            "leader": leader,
            "load": {"disk": disk, "networkIn": n_in, "networkOut": n_out, "cpu": cpu, "followerCpu": f_cpu},
        }
        for topic, partition, leader, disk, n_in, n_out, cpu, f_cpu, members in zip(
            *columns, replicas.as_lists(), strict=True
        )
    ]
    return cluster_to_snapshot(topology) | {"partitions": partitions}


def _check_model(topology: Cluster, model: pd.DataFrame, replicas: ReplicaLists) -> None:
    """What ``parse_snapshot`` refuses in a partition, checked a column at a time rather than by
    parsing the whole document back, which was most of the driver's time on a large cluster. A
    partition is one row per topic and partition by construction, and its leader one of its
    replicas or, when it has none, missing."""
    lengths, owner, flat = replicas.lengths, replicas.owner, replicas.brokers
    known = np.array([b.id for b in topology.brokers], np.float64)
    order = np.lexsort((flat, owner))
    twice = (flat[order][1:] == flat[order][:-1]) & (owner[order][1:] == owner[order][:-1])
    topics, numbers = model["topic"], model["partition"]

    def name(i: int) -> str:
        return f"{topics.iat[i]}-{numbers.iat[i]}"

    def members(i: int) -> str:
        listed = flat[replicas.starts[i] : replicas.starts[i + 1]]
        return f"{[None if np.isnan(b) else int(b) for b in listed]} of {name(i)}"

    problems: list[tuple[np.ndarray[Any, Any], Callable[[int], str]]] = [
        (np.flatnonzero(topics.isna().to_numpy() | (topics == "").to_numpy()), lambda i: "topic: empty"),
        (
            np.flatnonzero(numbers.isna().to_numpy() | (numbers < 0).to_numpy()),
            lambda i: f"partition: {numbers.iat[i]} is not a partition number",
        ),
        (np.flatnonzero(lengths == 0), lambda i: f"replicas: {name(i)} has none"),
        (owner[~np.isin(flat, known)], lambda i: f"replicas: {members(i)} names a broker not in brokers"),
        (owner[order][1:][twice], lambda i: f"replicas: {members(i)} lists a broker twice"),
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


def _replica_lists(column: pa.ChunkedArray) -> ReplicaLists:
    lists = column.combine_chunks()
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy().astype(np.int64)
    flat = pc.list_flatten(lists).to_numpy(zero_copy_only=False).astype(np.float64)
    return ReplicaLists(flat, np.concatenate(([0], np.cumsum(lengths))))


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

    # The only scan of the sample rows, rolled up and collected once; the rest is computed on
    # the driver, from one row per partition in topic and partition order.
    rows = model_rows.partition_model(
        transforms.rollup(_used(samples, windows), windows.used).toArrow(),
        windows.used,
        options.min_samples_per_window,
    )
    is_complete = rows["complete"].to_numpy()
    short = rows.filter(pc.invert(rows["complete"]))
    names = zip(short["topic"].to_pylist(), short["partition"].to_pylist(), strict=True)
    incomplete = sorted(f"{t}-{p}" for t, p in names)
    complete = rows.filter(rows["complete"])
    replicas = _replica_lists(complete["replicas"])
    model_pd: pd.DataFrame = complete.drop_columns(["replicas", "complete", "samples"]).to_pandas()

    # One row per broker, collected once: the manifest's count and the cpu the model shares.
    broker_uri = storage.join(options.samples, BROKER_DIR)
    if storage.exists(spark, broker_uri):
        broker_samples = spark.read.schema(from_arrow_schema(BROKER_SAMPLES)).parquet(broker_uri)
        broker_cpu = transforms.broker_cpu(_used(broker_samples, windows)).toArrow()
    else:
        broker_cpu = _BROKER_CPU.empty_table()
    known_cpu = broker_cpu.filter(broker_cpu["broker_cpu"].is_valid())
    cpu_source = "broker samples" if known_cpu.num_rows > 0 else "none (cpu 0)"
    # A partition with no replicas has no leader; the snapshot's check refuses it below.
    leader = model_pd["leader"].to_numpy(np.float64, na_value=-1.0).astype(np.int64)
    model_pd["cpu"], model_pd["follower_cpu"] = model_loads.attribute_cpu(
        leader,
        model_pd["bytes_in"].to_numpy(np.float64),
        known_cpu["broker"].to_numpy().astype(np.int64),
        known_cpu["broker_cpu"].to_numpy(),
    )
    snapshot = snapshot_document(topology, model_pd, replicas)
    loads_pd = model_loads.broker_loads(topology, model_pd, replicas)
    scores_pd = scores.score_brokers(loads_pd, goals)
    over = scores_pd[(scores_pd["violation"] > 0) & (scores_pd["quantity"] > scores_pd["hi"])]
    violating = sorted({int(b) for b in over["broker"]})
    model_pd["replicas"] = [partition["replicas"] for partition in snapshot["partitions"]]
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
        "partitionSamplesInWindows": int(pc.sum(rows["samples"]).as_py() or 0),
        "brokerSamplesInWindows": int(pc.sum(broker_cpu["samples"]).as_py() or 0),
        "partitions": len(model_pd),
        "replicas": len(replicas.brokers),
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
        follower_cpu_fraction=model_loads.DEFAULT_FOLLOWER_CPU_FRACTION,
        inputs={"samples": options.samples, "topology": options.topology, "goals": options.goals},
        outputs=outputs,
        seconds=time.monotonic() - started,
    )
    manifest_text = json.dumps(manifest, indent=1)
    storage.write_text(spark, outputs[MANIFEST], manifest_text)
    if options.seal_file is not None:
        _write_seal(options.seal_file, seal(manifest_text.encode(), snapshot_text.encode()))
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
