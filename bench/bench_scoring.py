"""Scoring job benchmark: synthetic sample stores → the full scoring job, per Spark master.

    .venv/bin/python bench/bench_scoring.py --rows 10e6            # local[1] and local[2]
    .venv/bin/python bench/bench_scoring.py --rows 50e6            # ~1.7 GiB of Parquet under /tmp
    .venv/bin/python bench/bench_scoring.py --e2e [--plan]         # mid cluster, 12 samples/partition
    .venv/bin/python bench/bench_scoring.py --e2e --size large      # large cluster (430,000 partitions)

Samples are those of the mid cluster of ``bench_planner.py`` (200 brokers, 40,000 partitions,
seed 7; ``--size large``: its 270 brokers and 430,000 partitions), written the way the collector
writes them: one Parquet file per one-minute pass through ``SampleStore``, with the partition's
synthetic rates as bytes in/out, so the scored snapshot must give back the synthetic loads
(checked). ``--rows N`` writes N ÷ partitions passes and scores them all as one window (every
row is aggregated); ``--e2e`` writes 12 passes and scores two 5-minute windows, then ``--plan``
runs ``kafka-balancer plan`` on the scored snapshot.

Each master runs in a fresh process. Reported per run: Spark session start, job wall time,
rows/s over the job time, CPU seconds of the process tree during the job (less sensitive to
other jobs than wall time), the peak of the summed RSS of the process tree (driver, JVM, Python
workers; sampled every 500 ms) and the 1-minute load average before and after: the two cores
are shared with other jobs. Generated data is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench_planner import synthetic_spec
from kafka_balancer.formats.snapshot import cluster_to_snapshot, read_snapshot
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES

STEP_MS = 60_000
END_MS = 1_700_000_000_000
E2E_PASSES = 12
E2E_WINDOW_MS = 300_000
E2E_WINDOWS = 2


def synthetic_cluster(size: str) -> Cluster:
    from kafka_balancer_dev.synthetic import generate

    return generate(synthetic_spec(size))


def write_store(root: Path, cluster: Cluster, passes: int) -> int:
    """``passes`` one-minute passes ending at END_MS, one sample per partition each; returns rows."""
    parts = cluster.partitions
    n = len(parts)
    load = np.array([(p.load.disk, p.load.network_in, p.load.network_out) for p in parts])
    broker_cpu: dict[int, float] = {b.id: 0.0 for b in cluster.brokers}
    for p in parts:
        for r in p.replicas:
            broker_cpu[r] += p.load.cpu if r == p.leader else p.load.follower_cpu
    static = {
        "interval_ms": pa.array(np.full(n, STEP_MS), pa.int64()),
        "topic": pa.array([p.topic for p in parts]),
        "partition": pa.array([p.partition for p in parts], pa.int32()),
        "leader": pa.array([p.leader for p in parts], pa.int32()),
        "replicas": pa.array([list(p.replicas) for p in parts], pa.list_(pa.int32())),
        "size_bytes": pa.array(load[:, 0]),
        "bytes_in": pa.array(load[:, 1] * STEP_MS / 1000),
        "bytes_out": pa.array(load[:, 2] * STEP_MS / 1000),
        "messages_in": pa.array((load[:, 1] * STEP_MS / 1000 // 1000).astype(np.int64)),
    }
    brokers = sorted(broker_cpu)
    store = SampleStore(root)
    for k in range(passes):
        ts = END_MS - (passes - 1 - k) * STEP_MS
        partitions = pa.table(
            {"ts_ms": pa.array(np.full(n, ts), pa.int64()), **static}, schema=PARTITION_SAMPLES
        )
        broker_table = pa.Table.from_pylist(
            [
                {"ts_ms": ts, "interval_ms": STEP_MS, "broker": b, "rack": None, "cpu": broker_cpu[b]}
                for b in brokers
            ],
            schema=BROKER_SAMPLES,
        )
        store.append(ts, partitions, broker_table)
    return passes * n


def tree(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found += tree(int(child))
    return found


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("VmRSS")), 0)
    except FileNotFoundError:  # a worker that exited between listing and reading
        return 0


def tree_cpu_seconds() -> float:
    """User + system CPU of this process tree so far, including exited, reaped descendants."""
    total = 0
    for pid in tree(os.getpid()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


class PeakTreeRss:
    """Peak of the summed RSS of this process and all its descendants, sampled in a thread;
    ``cpu_s`` is the sampler's own CPU time, to take out of the tree's figure."""

    def __init__(self, period_s: float = 0.5) -> None:
        self.peak_kib = 0
        self.cpu_s = 0.0
        self._period = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.cpu_s = time.thread_time()
            try:
                pids = tree(os.getpid())
            except FileNotFoundError:
                pids = [os.getpid()]
            self.peak_kib = max(self.peak_kib, sum(rss_kib(p) for p in pids))
            self._stop.wait(self._period)

    def __enter__(self) -> PeakTreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def check_loads(expected: Cluster, scored_path: Path) -> float:
    """Worst relative error of the scored disk / networkIn / networkOut against the synthetic loads."""
    scored = {p.name: p.load for p in read_snapshot(scored_path).partitions}
    worst = 0.0
    for p in expected.partitions:
        got = scored[p.name]
        for want, have in (
            (p.load.disk, got.disk),
            (p.load.network_in, got.network_in),
            (p.load.network_out, got.network_out),
        ):
            worst = max(worst, abs(have - want) / max(abs(want), 1e-300))
    if len(scored) != len(expected.partitions):
        raise SystemExit(f"scored {len(scored)} partitions, expected {len(expected.partitions)}")
    return worst


def score(
    work: Path, size: str, master: str, window_ms: int, windows: int, min_samples: int
) -> dict[str, Any]:
    """One run of the full job in this process (the child side of ``--run``)."""
    from kafka_balancer.scoring import job
    from kafka_balancer.scoring.options import ScoreOptions
    from kafka_balancer.scoring.session import local_session

    before = load1()
    with PeakTreeRss() as rss:
        t0 = time.monotonic()
        spark = local_session(master, app_name="bench-scoring")
        t1 = time.monotonic()
        options = ScoreOptions(
            samples=str(work / "store"),
            topology=str(work / "topology.json"),
            goals=str(work / "goals.yaml"),
            out=str(work / f"out-{master}"),
            window_ms=window_ms,
            windows=windows,
            min_samples_per_window=min_samples,
            master=master,
        )
        cpu0 = tree_cpu_seconds() - rss.cpu_s
        manifest = job.run(options, spark)
        t2 = time.monotonic()
        cpu = tree_cpu_seconds() - rss.cpu_s - cpu0
        spark.stop()
    worst = check_loads(synthetic_cluster(size), work / f"out-{master}" / "snapshot.json")
    rows = manifest["rows"]["partitionSamplesInWindows"]
    return {
        "master": master,
        "rows": rows,
        "partitions": manifest["rows"]["partitions"],
        "candidates": manifest["rows"]["candidates"],
        "sessionStartSeconds": round(t1 - t0, 1),
        "jobSeconds": round(t2 - t1, 1),
        "rowsPerSecond": round(rows / (t2 - t1)),
        "jobCpuSeconds": round(cpu, 1),
        "rowsPerCpuSecond": round(rows / cpu),
        "peakTreeRssMiB": rss.peak_kib // 1024,
        "worstLoadError": worst,
        "load1Before": before,
        "load1After": load1(),
    }


def run_child(
    work: Path, size: str, master: str, window_ms: int, windows: int, min_samples: int
) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--run",
            str(work),
            "--size",
            size,
            "--master",
            master,
            "--window-ms",
            str(window_ms),
            "--windows",
            str(windows),
            "--min-samples",
            str(min_samples),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{master} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def plan(work: Path, master: str) -> dict[str, Any]:
    before = load1()
    t0 = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_balancer.cli",
            "plan",
            "--snapshot",
            str(work / f"out-{master}" / "snapshot.json"),
            "--goals",
            str(work / "goals.yaml"),
            "--output",
            str(work / "plan.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - t0
    moves = len(json.loads((work / "plan.json").read_text())["partitions"]) if done.returncode == 0 else None
    return {
        "plan": f"on {master}'s snapshot",
        "exitCode": done.returncode,
        "seconds": round(seconds, 1),
        "partitionsChanged": moves,
        "load1Before": before,
        "load1After": load1(),
    }


def prepare(work: Path, size: str, passes: int) -> int:
    cluster = synthetic_cluster(size)
    t0 = time.monotonic()
    rows = write_store(work / "store", cluster, passes)
    (work / "topology.json").write_text(json.dumps({"brokers": cluster_to_snapshot(cluster)["brokers"]}))
    (work / "goals.yaml").write_text("")  # the documented default goal set
    stored = sum(f.stat().st_size for f in (work / "store").rglob("*.parquet"))
    partitions = len(cluster.partitions)
    print(
        f"wrote {rows} rows ({passes} passes × {partitions} partitions, {stored / 2**20:.0f} MiB) "
        f"in {time.monotonic() - t0:.1f} s",
        file=sys.stderr,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=float, default=1e6, help="sample rows (1e6 default; 10e6, 50e6)")
    parser.add_argument("--e2e", action="store_true", help="12 passes, two 5-minute windows")
    parser.add_argument("--size", choices=["mid", "large"], default="mid", help="the synthetic cluster")
    parser.add_argument("--plan", action="store_true", help="with --e2e: kafka-balancer plan on the result")
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--tmp", default=tempfile.gettempdir(), help="where the sample store is written")
    parser.add_argument("--run", help=argparse.SUPPRESS)  # internal: one master in a fresh process
    parser.add_argument("--master", help=argparse.SUPPRESS)
    parser.add_argument("--window-ms", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--windows", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--min-samples", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        result = score(Path(args.run), args.size, args.master, args.window_ms, args.windows, args.min_samples)
        print(json.dumps(result))
        return
    partitions = synthetic_spec(args.size).partitions
    passes = E2E_PASSES if args.e2e else max(1, round(args.rows / partitions))
    work = Path(tempfile.mkdtemp(prefix="bench-scoring-", dir=args.tmp))
    try:
        prepare(work, args.size, passes)
        if args.e2e:
            window_ms, windows, min_samples = E2E_WINDOW_MS, E2E_WINDOWS, E2E_WINDOW_MS // STEP_MS
        else:  # one window over the whole history: every row is aggregated
            window_ms, windows, min_samples = passes * STEP_MS, 1, 1
        masters = args.masters.split(",")
        for master in masters:
            print(json.dumps(run_child(work, args.size, master, window_ms, windows, min_samples)), flush=True)
        if args.e2e and args.plan:
            print(json.dumps(plan(work, masters[-1])), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
