"""Scoring in the background: per pool at most one Spark run at a time, at most once per interval.

The reconcile never waits for Spark: it asks for the newest scored per-partition loads, and until a run
has completed (or when the newest one is older than the sample retention) it gets None and uses the
loads of the last two collector passes instead.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_balancer.api import Scoring
from kafka_balancer.errors import KafkaBalancerError, ScoringError
from kafka_balancer.kafka.sample_store import SUFFIX
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.samples.schema import BROKER_DIR, PARTITION_DIR
from kafka_balancer.scoring.launch import Scorer, ScoringRequest

Loads = dict[tuple[str, int], PartitionLoad]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoringSchedule:
    """No BrokerPool field sets these yet; the environment can (``KAFKA_BALANCER_SCORING_*``, read by
    k8s/settings.py).

    A Spark run costs a JVM and tens of seconds of CPU, so pools are scored at most every
    ``interval_s`` (default 5 minutes); the job averages the newest ``windows`` complete windows of
    ``window_ms``, and samples older than ``windows + 1`` windows (one window of margin) are pruned.
    """

    interval_s: float = 300.0
    window_ms: int = 300_000
    windows: int = 3

    @property
    def retention_ms(self) -> int:
        return (self.windows + 1) * self.window_ms

    @property
    def max_age_ms(self) -> int:
        """Scored loads are used while their newest sample is this recent: two failed runs in a row
        (or a run slower than the windows) do not throw them away, a long outage does."""
        return self.retention_ms + int(2 * self.interval_s * 1000)


def pass_times(store: Path) -> list[int]:
    """The ``ts_ms`` of every stored pass, oldest first (sample files are named ``<ts_ms>-<id>.parquet``)."""
    directory = store / PARTITION_DIR
    if not directory.is_dir():
        return []
    heads = (p.name.split("-", 1)[0] for p in directory.glob(f"*{SUFFIX}") if not p.name.startswith("."))
    return sorted(int(h) for h in heads if h.isdigit())


def prune(store: Path, older_than_ms: int) -> int:
    """Delete the passes stored before ``older_than_ms``; returns how many files went."""
    removed = 0
    for directory in (store / PARTITION_DIR, store / BROKER_DIR):
        if not directory.is_dir():
            continue
        for path in directory.glob(f"*{SUFFIX}"):
            head = path.name.split("-", 1)[0]
            if head.isdigit() and int(head) < older_than_ms:
                path.unlink(missing_ok=True)
                removed += 1
    return removed


LOAD_FIELDS = ("disk", "networkIn", "networkOut", "cpu", "followerCpu")


def loads_of(snapshot: Mapping[str, Any]) -> Loads:
    """The per-partition loads of a scoring run's snapshot. The job's output is input like any other
    (a pool may name its own scoring image): a load that is not a finite, non-negative number is
    refused (:class:`ScoringError`), and the pool plans on the collector's loads instead."""
    loads: Loads = {}
    for p in snapshot.get("partitions", []):
        load = p["load"]
        values = [
            float(load.get(name, 0.0)) if name == "followerCpu" else float(load[name]) for name in LOAD_FIELDS
        ]
        for name, value in zip(LOAD_FIELDS, values, strict=True):
            if not math.isfinite(value) or value < 0:
                raise ScoringError(
                    f"scored load of {p['topic']}-{p['partition']}: {name} is {value}, not a finite "
                    "non-negative number; the scoring run's output is refused"
                )
        loads[(str(p["topic"]), int(p["partition"]))] = PartitionLoad(*values)
    return loads


@dataclass(frozen=True)
class Scored:
    loads: Loads
    newest_sample_ms: int
    engine: str  # the Scorer's: where the job ran


class BackgroundScoring:
    """Thread-safe; one worker thread per running scoring run."""

    def __init__(
        self,
        scorer_for: Callable[[Scoring], Scorer],
        schedule: ScoringSchedule,
        clock: Callable[[], float] = time.monotonic,
        # (pool, engine, result, seconds) of every run: the operator's scoring_seconds histogram.
        observe: Callable[[str, str, str, float], None] = lambda *_: None,
    ) -> None:
        self._scorer_for = scorer_for
        self._observe = observe
        self.schedule = schedule
        self._clock = clock
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}
        self._started: dict[str, float] = {}
        self._scored: dict[str, Scored] = {}
        self.last_error: dict[str, str] = {}

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._running

    def due(self, key: str) -> bool:
        with self._lock:
            if key in self._running:
                return False
            started = self._started.get(key)
            return started is None or self._clock() - started >= self.schedule.interval_s

    def submit(self, key: str, engine: str, request: ScoringRequest) -> bool:
        """Start a run unless one is running or the last started less than an interval ago."""
        if not self.due(key):
            return False
        with self._lock:
            self._started[key] = self._clock()
            worker = threading.Thread(
                target=self._run, args=(key, engine, request), name=f"scoring {key}", daemon=True
            )
            self._running[key] = worker
        worker.start()
        return True

    def latest(self, key: str, now_ms: int) -> Scored | None:
        """The newest scored loads, unless their samples are older than ``max_age_ms``."""
        with self._lock:
            scored = self._scored.get(key)
        if scored is None or now_ms - scored.newest_sample_ms > self.schedule.max_age_ms:
            return None
        return scored

    def error(self, key: str) -> str | None:
        """Why the pool's latest run failed; None once a run succeeds."""
        with self._lock:
            return self.last_error.get(key)

    def wait(self, key: str, timeout_s: float) -> None:
        """Block until the pool's running run (if any) is over; for tests and shutdown."""
        with self._lock:
            worker = self._running.get(key)
        if worker is not None:
            worker.join(timeout_s)

    def forget(self, key: str) -> None:
        with self._lock:
            self._started.pop(key, None)
            self._scored.pop(key, None)
            self.last_error.pop(key, None)

    def _run(self, key: str, engine: str, request: ScoringRequest) -> None:
        started = self._clock()
        result = "failed"
        try:
            scorer = self._scorer_for(request.spec)
            scored = scorer.score(request)
            newest = int(scored.manifest["windows"]["newestSampleMs"])
            with self._lock:
                self._scored[key] = Scored(loads_of(scored.snapshot), newest, scorer.engine)
                self.last_error.pop(key, None)
            result = "succeeded"
            log.info("pool %s scored by %s in %.1f s", key, engine, scored.seconds)
        except (KafkaBalancerError, KeyError, TypeError, ValueError) as err:
            # The reconcile goes on with the collector's loads; the next interval tries again.
            with self._lock:
                self.last_error[key] = str(err)
            log.warning("pool %s: scoring with %s failed: %s", key, engine, err)
        finally:
            self._observe(key, engine, result, self._clock() - started)
            with self._lock:
                self._running.pop(key, None)
