"""One interface to run the scoring job, wherever Spark runs, and the embedded engine.

:class:`EmbeddedScorer` runs ``python -m kafka_balancer.scoring.job … --master local[*]`` in a child
process: the caller (the operator) never loads a JVM, and the job's memory is returned when it exits.
The SparkApplication engine (``k8s/spark_application.py``) has the same interface.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kafka_balancer.api import Scoring
from kafka_balancer.durations import age_text
from kafka_balancer.errors import ScoringError
from kafka_balancer.scoring import remote
from kafka_balancer.scoring.seal import seal

# The job's output names (job.py's constants, repeated here so the operator need not import pyspark).
MANIFEST = "manifest.json"
SNAPSHOT = "snapshot.json"
EMBEDDED_MASTER = "local[*]"
# Spark's own log line at level ERROR ("26/11/25 05:52:30 ERROR Logger: message"): what Spark gave up
# on (an executor failure limit, a lost driver) when the job itself printed nothing.
SPARK_ERROR = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ERROR (.+)$")


@dataclass(frozen=True)
class ScoringRequest:
    """One run: a pool's sample store, its brokers (snapshot ``brokers``) and goals (a ``v1`` List)."""

    namespace: str
    pool: str
    pool_uid: str
    run: str  # the same run key means the same inputs: a rerun reuses what it can
    samples: Path
    topology: Mapping[str, Any]
    goals: Mapping[str, Any]
    window_ms: int
    windows: int
    spec: Scoring


@dataclass(frozen=True)
class ScoringResult:
    manifest: Mapping[str, Any]
    snapshot: Mapping[str, Any]
    seconds: float  # submission to outputs read


class Scorer(Protocol):
    engine: str

    def score(self, request: ScoringRequest) -> ScoringResult:
        """Blocking; raises ScoringError with the job's own message when it fails."""
        ...


def job_arguments(request: ScoringRequest, samples: str, topology: str, goals: str, out: str) -> list[str]:
    return [
        "--samples", samples,
        "--topology", topology,
        "--goals", goals,
        "--out", out,
        "--window-ms", str(request.window_ms),
        "--windows", str(request.windows),
    ]  # fmt: skip


def read_outputs(out: str, started: float, sealed: str | None = None) -> ScoringResult:
    """The run's outputs; with ``sealed`` (what the job's driver reported, :mod:`seal`) only if they
    are the bytes it wrote."""
    manifest_uri, snapshot_uri = remote.join(out, MANIFEST), remote.join(out, SNAPSHOT)
    manifest_bytes, snapshot_bytes = remote.read_bytes(manifest_uri), remote.read_bytes(snapshot_uri)
    if sealed is not None and seal(manifest_bytes, snapshot_bytes) != sealed.strip():
        raise ScoringError(
            f"scoring outputs under {out} are not the ones the run's driver wrote (their SHA-256 differs "
            "from its report): refused; another writer of the shared storage changed them"
        )
    manifest = remote.parse_json(manifest_uri, manifest_bytes)
    snapshot = remote.parse_json(snapshot_uri, snapshot_bytes)
    if not isinstance(manifest, dict) or not isinstance(snapshot, dict):
        raise ScoringError(f"scoring outputs under {out} are not JSON objects")
    return ScoringResult(manifest, snapshot, time.monotonic() - started)


def _die_with_parent() -> None:
    """In the child: SIGTERM when the thread that started it goes (operator exit, even SIGKILL), so
    no Spark job outlives the operator. The job's JVM exits with its Python driver."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def error_line(stderr: str) -> str:
    """The job's own message (``score: …``), else Spark's first ERROR line (the cause; later ones tell
    of the shutdown it led to), else the last line it printed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    ours = [line for line in lines if line.startswith("score:")]
    if ours:
        return ours[-1]
    spark = [found.group(1) for line in lines if (found := SPARK_ERROR.match(line))]
    return spark[0] if spark else (lines or ["no output"])[-1]


class EmbeddedScorer:
    """Local Spark in a child process; inputs and outputs under ``work_dir/<namespace>.<pool>/``."""

    engine = "Embedded"

    def __init__(self, work_dir: Path, timeout_s: float = 1800.0, keep_runs: int = 2, jobs: int = 1) -> None:
        self.work_dir = work_dir
        self.timeout_s = timeout_s
        self.keep_runs = keep_runs
        # Each run is a JVM in the operator's pod: at most ``jobs`` at once, the others wait their turn.
        self._jobs = threading.BoundedSemaphore(jobs)

    def score(self, request: ScoringRequest) -> ScoringResult:
        started = time.monotonic()
        runs = self.work_dir / f"{request.namespace}.{request.pool}"
        run_dir = runs / request.run
        out = run_dir / "out"
        if (out / MANIFEST).exists():  # this run already finished
            return read_outputs(str(out), started)
        run_dir.mkdir(parents=True, exist_ok=True)
        topology, goals = run_dir / "topology.json", run_dir / "goals.json"
        topology.write_text(json.dumps(request.topology), encoding="utf-8")
        goals.write_text(json.dumps(request.goals), encoding="utf-8")
        argv = [
            sys.executable,
            "-m",
            "kafka_balancer.scoring.job",
            *job_arguments(request, str(request.samples), str(topology), str(goals), str(out)),
            "--master",
            EMBEDDED_MASTER,
        ]
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        try:
            with self._jobs:
                done = subprocess.run(
                    argv,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout_s,
                    check=False,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                )
        except subprocess.TimeoutExpired as err:
            raise ScoringError(
                f"the embedded scoring job did not finish within {age_text(self.timeout_s)}"
            ) from err
        if done.returncode != 0:
            raise ScoringError(f"the embedded scoring job failed: {error_line(done.stderr)}")
        result = read_outputs(str(out), started)
        remote.keep_newest(str(runs), self.keep_runs)
        return result
