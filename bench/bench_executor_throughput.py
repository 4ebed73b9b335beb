"""Executor benchmark: achieved replication throughput against the configured throttle.

    .venv/bin/python bench/bench_executor_throughput.py [--throttles 2000000,5000000] [--seconds 20]
        [--runs 3] [--batch-bytes 200000] [--no-control] [--broker-config replica.fetch.backoff.ms=100 ...]
    .venv/bin/python bench/bench_executor_throughput.py --model   # the quota model alone (bench/README.md)

Starts a private 4-broker KafkaBed, and per throttle T creates a topic of 4 partitions laid out as
a ring ([1,2] [2,3] [3,4] [4,1]) so every partition has its own leader, fills each with
T x --seconds bytes (incompressible, uncompressed), waits until both replicas hold it all, then
runs ``kafka-balancer execute`` moving the leader's replica of each partition to the next broker
but one ([1,2] -> [2,3], …). Every move has a distinct source (leader) and destination broker,
so the ceiling is T x 4: each leader may send T (leader throttle), each destination receive T
(follower throttle). Nothing writes to the topic during the move.

One JSON line per throttle: the copy-phase rate from the state file (bytes ÷ (last move finished
− first move submitted)), the rate seen by polling describe_log_dirs every --probe-interval
(bytes on the new replicas over time, and the steady slope between 10 % and 90 %), the whole-run
rate (process start to exit), the ceiling and each rate as a percentage of it, and the machine.
After each executor run, the same moves on a fresh topic by Kafka's own reassignment tool with the
same ``--throttle`` (the control: what Kafka's throttle itself achieves on this bed). With ``--runs N``
everything repeats N times on the same bed (fresh topics), then one ``"summary"`` line gives the
medians per run kind and throttle, with every run's 1-minute load average (the cores are shared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer.errors import ExecutionError
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kafka_config
from kafka_balancer_dev.localbed.kafka import REASSIGN_PARTITIONS, KafkaBed
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

BROKERS = (1, 2, 3, 4)
# Partition p starts on [b, b+1] (leader b) and moves to [b+1, b+2]: the leader's replica leaves.
LAYOUT = {p: [BROKERS[p], BROKERS[(p + 1) % 4]] for p in range(4)}
TARGETS = {p: [BROKERS[(p + 1) % 4], BROKERS[(p + 2) % 4]] for p in range(4)}
MESSAGE_BYTES = 100_000


@dataclass(frozen=True)
class Sample:
    at: float
    copied: dict[int, int]  # destination broker → bytes of its new replica

    @property
    def total(self) -> int:
        return sum(self.copied.values())


def wait_until(check: Any, timeout_s: float, what: str, every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise BedError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(every_s)


def create_topic(bed: KafkaBed, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    assignment = [LAYOUT[p] for p in sorted(LAYOUT)]
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)

    def ready() -> bool:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
        return len(meta.partitions) == len(LAYOUT) and all(m.leader >= 0 for m in meta.partitions.values())

    wait_until(ready, 60, f"{topic} leaders")


def fill(bed: KafkaBed, topic: str, per_partition: int, batch_bytes: int) -> None:
    """Write ``per_partition`` bytes of random values into each partition, uncompressed, in batches of at
    most ``batch_bytes`` (whole 100 kB messages)."""
    producer = Producer(
        {
            "bootstrap.servers": bed.bootstrap_servers,
            "acks": "all",
            "compression.type": "none",
            "linger.ms": 20,
            "batch.size": batch_bytes,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )
    value = os.urandom(MESSAGE_BYTES)
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for _ in range(per_partition // MESSAGE_BYTES):
        for partition in LAYOUT:
            while True:
                try:
                    producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
                    break
                except BufferError:  # local queue full: let deliveries drain it
                    producer.poll(0.1)
            producer.poll(0)
    if producer.flush(300) != 0 or failures:
        raise BedError(f"writing {topic} failed: {failures[:3] or 'messages undelivered after 300s'}")


def replica_sizes(admin: KafkaAdmin, topic: str) -> dict[tuple[int, int], int]:
    """(partition, broker) → bytes on that broker."""
    sizes = admin.partition_sizes([(topic, p) for p in LAYOUT])
    return {(p, b): size for (_, p, b), size in sizes.items()}


def await_replicated(admin: KafkaAdmin, topic: str) -> dict[int, int]:
    """Wait until every replica of every partition holds the same bytes; return partition → bytes."""
    found: dict[int, int] = {}

    def even() -> bool:
        sizes = replica_sizes(admin, topic)
        per = {p: {sizes.get((p, b), -1) for b in LAYOUT[p]} for p in LAYOUT}
        found.update({p: next(iter(s)) for p, s in per.items() if len(s) == 1})
        return all(len(s) == 1 for s in per.values())

    wait_until(even, 120, f"{topic} replicas to hold the same bytes")
    return found


def write_plan(path: Path, topic: str) -> None:
    moves = [{"topic": topic, "partition": p, "replicas": r} for p, r in TARGETS.items()]
    path.write_text(json.dumps({"version": 1, "partitions": moves}))


def probe(admin: KafkaAdmin, topic: str) -> Sample:
    sizes = replica_sizes(admin, topic)
    adding = {p: next(b for b in TARGETS[p] if b not in LAYOUT[p]) for p in LAYOUT}
    return Sample(time.time(), {adding[p]: sizes.get((p, adding[p]), 0) for p in LAYOUT})


def slope(samples: Sequence[Sample], total: int) -> float | None:
    """Least-squares bytes/s over the samples between 10 % and 90 % of ``total``."""
    points = [(s.at, s.total) for s in samples if 0.1 * total <= s.total <= 0.9 * total]
    if len(points) < 3:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_b = sum(b for _, b in points) / len(points)
    var = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (b - mean_b) for t, b in points) / var if var else None


def per_destination(samples: Sequence[Sample], sizes: dict[int, int]) -> dict[str, float | None]:
    """Each destination's rate from its first growing sample to the sample where it was complete."""
    rates: dict[str, float | None] = {}
    for broker, size in sizes.items():
        growing = [s for s in samples if s.copied.get(broker, 0) > 0]
        full = [s for s in growing if s.copied[broker] >= size]
        rates[str(broker)] = (
            round(size / (full[0].at - growing[0].at)) if growing and full and full[0] != growing[0] else None
        )
    return rates


def prepare(
    bed: KafkaBed, admin: KafkaAdmin, topic: str, per_partition: int, batch_bytes: int
) -> dict[int, int]:
    """Create and fill ``topic``; return destination broker → bytes its new replica must receive."""
    create_topic(bed, topic)
    fill(bed, topic, per_partition, batch_bytes)
    partition_bytes = await_replicated(admin, topic)
    return {TARGETS[p][1]: partition_bytes[p] for p in LAYOUT}


def broker_throttles(admin: KafkaAdmin) -> dict[str, dict[str, str]]:
    """The replication rates set on each broker right now (proof of what the executor configured)."""
    configs = admin.dynamic_configs("broker", [str(b) for b in BROKERS])
    return {
        b: {k: v for k, v in c.items() if k.endswith("replication.throttled.rate")}
        for b, c in configs.items()
    }


def watch(admin: KafkaAdmin, topic: str, running: Callable[[], bool], probe_s: float) -> Watched:
    samples: list[Sample] = []
    throttles: dict[str, dict[str, str]] = {}
    while running():
        samples.append(probe(admin, topic))
        if not throttles and samples[-1].total > 0:
            throttles = broker_throttles(admin)
        time.sleep(probe_s)
    return Watched(samples, throttles)


@dataclass(frozen=True)
class Watched:
    samples: list[Sample]
    throttles: dict[str, dict[str, str]]


def run_executor(
    bed: KafkaBed, workdir: Path, throttle: int, seconds: float, probe_s: float, batch_bytes: int
) -> dict[str, Any]:
    topic = f"bench-{throttle}-{workdir.name}"
    admin = KafkaAdmin(bed.bootstrap_servers)
    try:
        sizes = prepare(bed, admin, topic, int(throttle * seconds), batch_bytes)
        plan = workdir / f"plan-{throttle}.json"
        state_path = workdir / f"state-{throttle}.json"
        write_plan(plan, topic)
        argv = [
            sys.executable, "-m", "kafka_balancer.cli", "execute", "--plan", str(plan),
            "--bootstrap-server", bed.bootstrap_servers, "--state", str(state_path),
            "--throttle", str(throttle), "--max-moves-per-broker", "16", "--max-moves", "16",
            "--poll-interval", "0.5",
        ]  # fmt: skip
        load_before = os.getloadavg()[0]
        began = time.time()
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            watched = watch(admin, topic, lambda: proc.poll() is None, probe_s)
            output = proc.stdout.read() if proc.stdout else ""
        ended = time.time()
        if proc.returncode != 0:
            raise ExecutionError(f"execute exited {proc.returncode}:\n{output[-3000:]}")
    finally:
        admin.close()
    (workdir / f"execute-{throttle}.log").write_text(output)
    state = json.loads(state_path.read_text())
    moves = state["moves"]
    total = int(state["bytesTotal"])
    submitted = min(m["startedAt"] for m in moves)
    finished = max(m["finishedAt"] for m in moves)
    figures = Figures(throttle, sizes, watched, submitted)
    state_rate = total / (finished - submitted)
    whole = total / (ended - began)
    return {
        "run": "kafka-balancer execute",
        **figures.common(),
        "copy_phase_s_state": round(finished - submitted, 2),
        "copy_rate_state": round(state_rate),
        "copy_rate_state_pct": figures.pct(state_rate),
        "whole_run_s": round(ended - began, 2),
        "whole_run_rate": round(whole),
        "whole_run_rate_pct": figures.pct(whole),
        "process_start_to_first_submit_s": round(submitted - began, 2),
        "submit_spread_s": round(max(m["startedAt"] for m in moves) - submitted, 2),
        "finish_spread_s": round(finished - min(m["finishedAt"] for m in moves), 2),
        "last_finish_to_exit_s": round(ended - finished, 2),
        "loadavg_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def run_kafka_tool(
    bed: KafkaBed, workdir: Path, throttle: int, seconds: float, probe_s: float, batch_bytes: int
) -> dict[str, Any]:
    """The control: the same moves by Kafka's own reassignment tool with the same ``--throttle``."""
    topic = f"control-{throttle}-{workdir.name}"
    admin = KafkaAdmin(bed.bootstrap_servers)
    try:
        sizes = prepare(bed, admin, topic, int(throttle * seconds), batch_bytes)
        plan = workdir / f"control-plan-{throttle}.json"
        write_plan(plan, topic)
        load_before = os.getloadavg()[0]
        submitted = time.time()
        done = bed.run_tool(
            REASSIGN_PARTITIONS,
            ["--execute", "--reassignment-json-file", str(plan), "--throttle", str(throttle)],
        )
        if done.returncode != 0:
            raise ExecutionError(f"Kafka's reassignment tool failed: {done.stderr[-2000:]}")
        total = sum(sizes.values())
        watched = watch(admin, topic, lambda: probe(admin, topic).total < total, probe_s)
        watched.samples.append(probe(admin, topic))
        # --verify once complete also removes the throttles the tool set.
        wait_until(
            lambda: (
                "is completed"
                in bed.run_tool(
                    REASSIGN_PARTITIONS, ["--verify", "--reassignment-json-file", str(plan)]
                ).stdout
            ),
            120,
            "Kafka's reassignment to verify",
        )
    finally:
        admin.close()
    figures = Figures(throttle, sizes, watched, submitted)
    return {
        "run": "kafka-reassign-partitions --throttle (control)",
        **figures.common(),
        "tool_submit_s": round(watched.samples[0].at - submitted, 2),
        "loadavg_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


@dataclass(frozen=True)
class Figures:
    """The figures both runs share, from the describe_log_dirs samples."""

    throttle: int
    sizes: dict[int, int]
    watched: Watched
    submitted: float

    @property
    def ceiling(self) -> int:
        sources = {LAYOUT[p][0] for p in LAYOUT}
        return self.throttle * min(len(sources), len(self.sizes))

    def pct(self, rate: float | None) -> float | None:
        return round(100 * rate / self.ceiling, 1) if rate is not None else None

    def common(self) -> dict[str, Any]:
        samples = self.watched.samples
        total = sum(self.sizes.values())
        complete = [s for s in samples if s.total >= total]
        growing = [s for s in samples if s.total > 0]
        probe_rate = total / (complete[0].at - self.submitted) if complete else None
        from_bytes = total / (complete[0].at - growing[0].at) if complete and growing else None
        steady = slope(samples, total)
        return {
            "throttle_bytes_per_s": self.throttle,
            "source_brokers": sorted({LAYOUT[p][0] for p in LAYOUT}),
            "destination_brokers": sorted(self.sizes),
            "ceiling_bytes_per_s": self.ceiling,
            "bytes_to_move": total,
            "copy_rate_probe": round(probe_rate) if probe_rate else None,
            "copy_rate_probe_pct": self.pct(probe_rate),
            "copy_rate_probe_from_first_bytes": round(from_bytes) if from_bytes else None,
            "copy_rate_probe_from_first_bytes_pct": self.pct(from_bytes),
            "steady_slope_probe": round(steady) if steady else None,
            "steady_slope_probe_pct": self.pct(steady),
            "per_destination_rate_probe": per_destination(samples, self.sizes),
            "first_submit_to_first_bytes_s": first_growth(samples, self.submitted),
            "broker_throttles_seen": self.watched.throttles,
            "probe_samples": len(samples),
            "timeline_s_mb": [[round(s.at - self.submitted, 1), round(s.total / 1e6, 1)] for s in samples],
            "machine": machine(),
        }


def first_growth(samples: Sequence[Sample], submitted: float) -> float | None:
    growing = [s for s in samples if s.total > 0]
    return round(growing[0].at - submitted, 2) if growing else None


def machine() -> dict[str, Any]:
    return {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}


def quota_model(
    chunk: int,
    backoff_s: float,
    *,
    quota: float = 2e6,
    samples: int = 11,
    window_s: float = 1.0,
    rtt_s: float = 0.01,
    seconds: float = 300.0,
) -> float:
    """Share of a replication quota that a follower gets when it takes ``chunk`` bytes whenever the
    quota's rate allows and otherwise sleeps ``backoff_s`` (``replica.fetch.backoff.ms``).

    The rate follows Kafka's ``SimpleRate`` over a ``SampledStat``: ``samples`` + 1 slots, a new
    window starts at the first record ``window_s`` after the current one began, a window expires
    ``samples`` × ``window_s`` after its last record, and the rate is the sum over the elapsed time
    since the oldest window began (at least one window).
    """
    windows: list[list[float]] = []  # [start, last record, bytes]
    current = 0

    def rate(now: float) -> float:
        for w in windows:
            if now - w[1] >= samples * window_s:
                w[:] = [now, now, 0.0]
        oldest = min((w[0] for w in windows), default=now)
        return sum(w[2] for w in windows) / max(now - oldest, window_s)

    def record(now: float, size: float) -> None:
        nonlocal current
        if not windows:
            windows.append([now, now, 0.0])
        if now - windows[current][0] >= window_s:
            current = (current + 1) % (samples + 1)
            if current == len(windows):
                windows.append([now, now, 0.0])
            windows[current][:] = [now, now, 0.0]
        windows[current][1] = now
        windows[current][2] += size

    now, moved = 0.0, 0.0
    while now < seconds:
        if rate(now) <= quota:
            now += rtt_s
            record(now, chunk)
            moved += chunk
        else:
            now += backoff_s
    return moved / seconds / quota


@dataclass(frozen=True)
class Options:
    throttles: tuple[int, ...]
    seconds: float
    probe_interval_s: float
    control: bool
    broker_config: dict[str, str]
    runs: int
    batch_bytes: int
    model: bool


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--throttles", default="2000000,5000000", help="bytes/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=20.0, help="copy time at the ceiling (sizes data)")
    parser.add_argument("--probe-interval", type=float, default=0.5)
    parser.add_argument("--no-control", action="store_true", help="skip Kafka's own tool as a control")
    parser.add_argument("--runs", type=int, default=1, help="repeat everything; then print medians")
    parser.add_argument(
        "--model", action="store_true",
        help="print the quota model's share for 1 MiB fetches at 1 s and 100 ms backoff; start no bed",
    )  # fmt: skip
    parser.add_argument(
        "--batch-bytes", type=int, default=1_000_000,
        help="producer batch.size: the default packs 9 messages (0.9 MB) per batch",
    )  # fmt: skip
    parser.add_argument(
        "--broker-config", action="append", default=[], metavar="KEY=VALUE",
        help="extra static broker property for an experiment (e.g. replica.fetch.backoff.ms=100)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    throttles = tuple(int(t) for t in args.throttles.split(","))
    extra = dict(item.split("=", 1) for item in args.broker_config)
    return Options(
        throttles,
        args.seconds,
        args.probe_interval,
        not args.no_control,
        extra,
        args.runs,
        args.batch_bytes,
        args.model,
    )


# The figures a summary reports as medians over runs (percent of the ceiling).
SUMMARY_FIGURES = ("copy_rate_state_pct", "copy_rate_probe_pct", "steady_slope_probe_pct")


def summary(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians per (run kind, throttle) over the runs, with each run's load before and after."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        groups.setdefault(f"{result['run']} @ {result['throttle_bytes_per_s']}", []).append(result)
    medians: dict[str, Any] = {}
    for key, group in groups.items():
        figures: dict[str, Any] = {"runs": len(group)}
        for name in SUMMARY_FIGURES:
            values = [r[name] for r in group if r.get(name) is not None]
            if values:
                figures[f"median_{name}"] = round(statistics.median(values), 1)
                figures[name] = values
        figures["loadavg_1m_before_after"] = [r["loadavg_1m_before_after"] for r in group]
        medians[key] = figures
    return {"summary": medians}


def with_broker_config(extra: dict[str, str]) -> None:
    """Add ``extra`` to every broker's properties of beds started by this process (experiments only)."""
    render = kafka_config.broker_properties

    def rendered(**kwargs: Any) -> dict[str, str]:
        return {**render(**kwargs), **extra}

    kafka_config.broker_properties = rendered


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    if options.model:
        shares = {
            f"{throttle}@backoff_{backoff_ms}ms": round(
                100 * quota_model(2**20, backoff_ms / 1000, quota=throttle), 1
            )
            for throttle in options.throttles
            for backoff_ms in (1000, 100)
        }
        print(json.dumps({"quota_model_pct": shares}))
        return
    libs = provisioned_directory("kafka/provision.sh")
    if options.broker_config:
        with_broker_config(options.broker_config)
    with tempfile.TemporaryDirectory(prefix="bench-executor-") as tmp:
        bed = KafkaBed(libs, Path(tmp) / "bed")
        results: list[dict[str, Any]] = []
        try:
            bed.start()
            print(json.dumps({"bed": bed.bootstrap_servers, "options": asdict(options)}), flush=True)
            for index in range(options.runs):
                workdir = Path(tmp) / f"run{index + 1}"
                workdir.mkdir()
                for throttle in options.throttles:
                    for run in (run_executor, run_kafka_tool) if options.control else (run_executor,):
                        results.append(
                            run(
                                bed, workdir, throttle, options.seconds, options.probe_interval_s,
                                options.batch_bytes,
                            )
                        )  # fmt: skip
                        print(json.dumps(results[-1]), flush=True)
            print(json.dumps(summary(results)), flush=True)
        finally:
            bed.stop()


if __name__ == "__main__":
    main()
