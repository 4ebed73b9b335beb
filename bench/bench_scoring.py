"""Scoring aggregation benchmark: N synthetic partition samples → the per-partition load model.

    .venv/bin/python bench/bench_scoring.py            # 1e6 rows (default)
    .venv/bin/python bench/bench_scoring.py --rows 10e6
    .venv/bin/python bench/bench_scoring.py --rows 50e6  # ~3 GB of Parquet; needs disk and time

Generates the rows once (pyarrow, schema of ``samples.schema``), then for each master
(``local[1]``, ``local[2]``) runs, in a fresh process, the job's aggregation (windows,
completeness, partition model) and prints rows/s and the peak RSS of the driver and its JVM.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_balancer.samples.schema import PARTITION_DIR, PARTITION_SAMPLES

STEP_MS = 60_000
WINDOW_MS = 300_000
CHUNK = 2_000_000


def generate(root: Path, rows: int, partitions: int) -> None:
    """``rows`` samples: one per partition per minute, newest last; RF 3 over 30 brokers."""
    rng = np.random.default_rng(7)
    out = root / PARTITION_DIR
    out.mkdir(parents=True)
    pid = np.arange(partitions)
    replicas = pa.array(
        [[int(p % 30), int((p + 1) % 30), int((p + 2) % 30)] for p in pid], pa.list_(pa.int32())
    )
    topics = pa.array([f"topic-{p // 100}" for p in pid])
    for start in range(0, rows, CHUNK):
        idx = np.arange(start, min(start + CHUNK, rows))
        part = idx % partitions
        minute = idx // partitions
        n = len(idx)
        table = pa.table(
            {
                "ts_ms": 1_700_000_000_000 + minute * STEP_MS,
                "interval_ms": np.full(n, STEP_MS),
                "topic": topics.take(part),
                "partition": (part % 100).astype(np.int32),
                "leader": (part % 30).astype(np.int32),
                "replicas": replicas.take(part),
                "size_bytes": rng.uniform(1e8, 1e10, n),
                "bytes_in": rng.uniform(0, 1e7, n),
                "bytes_out": rng.uniform(0, 2e7, n),
                "messages_in": rng.integers(0, 10_000, n),
            },
            schema=PARTITION_SAMPLES,
        )
        pq.write_table(table, out / f"part-{start // CHUNK:05d}.parquet")


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(c) for c in text]
    return found + [g for c in found for g in children(c)]


def aggregate(root: Path, master: str) -> dict[str, object]:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafka_balancer.scoring import transforms
    from kafka_balancer.scoring.session import local_session

    spark = local_session(master, app_name="bench-scoring")
    started = time.monotonic()
    samples = spark.read.schema(from_arrow_schema(PARTITION_SAMPLES)).parquet(str(root / PARTITION_DIR))
    newest = int(samples.agg(F.max("ts_ms")).first()[0])  # type: ignore[index]
    rows = samples.count()
    used = transforms.in_windows(transforms.bucket(samples, WINDOW_MS, newest), 1)
    complete = transforms.completeness(used, 1, 1).cache()
    model = transforms.partition_model(transforms.complete_only(used, complete))
    partitions = model.count()
    seconds = time.monotonic() - started
    rss = {"driverPeakRssMiB": peak_rss_kib(os.getpid()) // 1024}
    rss["jvmPeakRssMiB"] = sum(peak_rss_kib(c) for c in children(os.getpid())) // 1024
    spark.stop()
    return {
        "master": master,
        "rows": rows,
        "partitions": partitions,
        "seconds": round(seconds, 2),
        "rowsPerSecond": round(rows / seconds),
        **rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=float, default=1e6, help="sample rows (1e6 default; 10e6, 50e6)")
    parser.add_argument("--partitions", type=int, default=20_000, help="distinct partitions")
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # internal: aggregate one store with --master
    parser.add_argument("--master", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(aggregate(Path(args.run), args.master)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        t0 = time.monotonic()
        generate(Path(tmp), int(args.rows), args.partitions)
        print(f"generated {int(args.rows)} rows in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        for master in args.masters.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--run", tmp, "--master", master],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(out.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
