"""Partition-seconds under min ISR while a broker is stopped mid-execution: the health gate's A/B.

    .venv/bin/python bench/bench_min_isr.py [--executor-root PATH ...] [--repeats 3] [--mib 16]
        [--throttle 1000000] [--max-moves 2] [--stop-after 20] [--down 45] [--rate 200]

    # issue 56's figure: today's executor against the one before the gate (3f0183b^)
    git worktree add /tmp/before-gate 3f0183b^
    .venv/bin/python bench/bench_min_isr.py --executor-root . --executor-root /tmp/before-gate

Starts a private 4-broker KafkaBed (racks a, b, c, a). Per run, a fresh topic of 12 partitions, RF
3, ``min.insync.replicas=2``, ``--mib`` MiB each, and a plan written here that moves one replica of
each: 6 moves keep broker 3 (the one stopped) and swap another replica, 3 take broker 3 away, 3 add
it. A producer writes ``--rate`` records/s throughout (acks=all, no retries: every error it meets is
counted, by Kafka's name). ``kafka-balancer execute`` runs from ``--executor-root`` (its
``operator/`` alone on PYTHONPATH) with ``--throttle`` and ``--max-moves``, so the plan takes
several batches; ``--stop-after`` s after it starts, broker 3 is stopped (controlled shutdown), kept
down ``--down`` s and started again (``--dead-broker-timeout 300`` on both sides: today's default,
so moves towards broker 3 outlast its outage). Every ``--sample-interval`` s the admin client reads
each partition's ISR and the topic's ``min.insync.replicas``; partition-seconds with the ISR below
it, and at it, are integrated from the execution's start until it has exited and every ISR is full
again, each also split into broker down / up. Then every acknowledged record is read back: ``lost``
counts those missing. The same plan file and scenario for every root; runs alternate between roots.

One JSON line per run, then one ``summary`` line per root: medians and [min, max] over the runs,
with the 1-minute load average before and after each run (the cores are shared).
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
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

STOPPED = 3
MIN_ISR = 2
# partition: (replicas at creation, the plan's replicas). Every move swaps one replica, the only kind
# RF 3 on 4 brokers allows; the first six keep broker 3, the next three take it away, the last
# three add it.
MOVES = (
    ([1, 2, 3], [1, 3, 4]),
    ([2, 3, 1], [2, 3, 4]),
    ([3, 1, 2], [3, 4, 2]),
    ([2, 3, 4], [1, 3, 4]),
    ([4, 3, 1], [4, 3, 2]),
    ([3, 4, 2], [3, 4, 1]),
    ([1, 3, 4], [1, 2, 4]),
    ([2, 1, 3], [2, 1, 4]),
    ([4, 2, 3], [4, 2, 1]),
    ([1, 2, 4], [1, 2, 3]),
    ([2, 4, 1], [2, 4, 3]),
    ([4, 1, 2], [4, 3, 2]),
)
FILL_RECORD = 64 * 1024
WRITE_RECORD = 512
GATE_WAIT = "the next batch waits for"  # the gated executor's line when a batch waits


@dataclass(frozen=True)
class Options:
    roots: tuple[Path, ...]
    repeats: int
    mib: int
    throttle: int
    max_moves: int
    stop_after_s: float
    down_s: float
    rate: int
    sample_interval_s: float


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--executor-root", action="append", type=Path, default=[],
        help="a checkout whose operator/ runs kafka-balancer execute; repeat for an A/B (default: this one)",
    )  # fmt: skip
    parser.add_argument("--repeats", type=int, default=3, help="runs per root")
    parser.add_argument("--mib", type=int, default=16, help="MiB written to each partition before the run")
    parser.add_argument("--throttle", type=int, default=1_000_000, help="execute --throttle, bytes/s")
    parser.add_argument("--max-moves", type=int, default=2, help="execute --max-moves: moves per batch")
    parser.add_argument("--stop-after", type=float, default=20.0, help="s from execute's start to the stop")
    parser.add_argument("--down", type=float, default=45.0, help="s broker 3 stays down")
    parser.add_argument("--rate", type=int, default=200, help="records/s the producer writes throughout")
    parser.add_argument("--sample-interval", type=float, default=0.5)
    args = parser.parse_args(argv)
    roots = args.executor_root or [Path(__file__).resolve().parent.parent]
    return Options(
        tuple(r.resolve() for r in roots),
        args.repeats,
        args.mib,
        args.throttle,
        args.max_moves,
        args.stop_after,
        args.down,
        args.rate,
        args.sample_interval,
    )


def describe_root(root: Path) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    cli = (root / "operator" / "kafka_balancer" / "cli.py").read_text(encoding="utf-8")
    return {"executor_root": str(root), "commit": commit, "health_gate": "--health-timeout" in cli}


def create_topic(admin: AdminClient, topic: str) -> None:
    new = NewTopic(
        topic,
        num_partitions=len(MOVES),
        replica_assignment=[before for before, _ in MOVES],
        config={"min.insync.replicas": str(MIN_ISR)},
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)

    def ready() -> bool:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
        return len(meta.partitions) == len(MOVES) and all(
            p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in meta.partitions.values()
        )

    wait_until(ready, timeout_s=60, what=f"{topic}: leaders and full ISRs")


def fill(bed: KafkaBed, topic: str, mib: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bed.bootstrap_servers,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )
    payload = os.urandom(FILL_RECORD)  # incompressible: the moves copy what is written
    for index in range(mib * 1024 * 1024 // FILL_RECORD * len(MOVES)):
        while True:
            try:
                producer.produce(topic, payload, partition=index % len(MOVES))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def end_offsets(bed: KafkaBed, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bed.bootstrap_servers, "group.id": "bench-min-isr"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(len(MOVES))
        }
    finally:
        consumer.close()


def write_plan(path: Path, topic: str) -> None:
    moves = [{"topic": topic, "partition": p, "replicas": after} for p, (_, after) in enumerate(MOVES)]
    path.write_text(json.dumps({"version": 1, "partitions": moves}), encoding="utf-8")


@dataclass(frozen=True)
class Sample:
    at: float
    below: int  # partitions whose ISR is smaller than their min.insync.replicas
    at_min: int  # partitions whose ISR is exactly their min.insync.replicas
    full: bool  # every partition's ISR holds all its replicas
    down: bool  # the stopped broker was down when the sample was taken


class Watcher(threading.Thread):
    """Samples every partition's ISR and the topic's min.insync.replicas until stopped."""

    def __init__(self, bed: KafkaBed, topic: str, interval_s: float, down: threading.Event) -> None:
        super().__init__(daemon=True)
        self.admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
        self.topic = topic
        self.interval_s = interval_s
        self.down = down
        self.done = threading.Event()
        self.samples: list[Sample] = []
        self.min_isr = MIN_ISR
        self.failed: Counter[str] = Counter()  # requests the admin client did not answer in time

    def run(self) -> None:
        while not self.done.is_set():
            started = time.monotonic()
            try:
                self.samples.append(self.sample())
            except Exception as err:  # a broker leaving mid-request: the gap counts as the last state
                self.failed[f"{type(err).__name__}: {str(err)[:80]}"] += 1
            self.done.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def sample(self) -> Sample:
        down = self.down.is_set()
        parts = self.admin.list_topics(topic=self.topic, timeout=2).topics[self.topic].partitions.values()
        try:
            [future] = self.admin.describe_configs(
                [ConfigResource("topic", self.topic)], request_timeout=2
            ).values()
            self.min_isr = int(future.result(timeout=2)["min.insync.replicas"].value)
        except Exception as err:  # the ISRs are this sample's point: the last value read stands in
            self.failed[f"min.insync.replicas {type(err).__name__}: {str(err)[:80]}"] += 1
        sizes = [len(p.isrs) for p in parts]
        return Sample(
            time.monotonic(),
            below=sum(s < self.min_isr for s in sizes),
            at_min=sum(s == self.min_isr for s in sizes),
            full=len(sizes) == len(MOVES) and all(len(p.isrs) >= len(p.replicas) for p in parts),
            down=down,
        )


class Writer(threading.Thread):
    """Writes ``rate`` records/s round the partitions, each carrying its sequence number."""

    def __init__(self, bed: KafkaBed, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": bed.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": False,
                "retries": 0,  # an error is reported, not retried away: the figure counts them
                "linger.ms": 5,
            }
        )
        self.topic = topic
        self.rate = rate
        self.done = threading.Event()
        self.sent = 0
        self.acked: set[int] = set()
        self.errors: Counter[str] = Counter()
        self.undelivered = 0

    def delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self.errors[err.name()] += 1
        else:
            self.acked.add(int(bytes(msg.key() or b"-1")))

    def run(self) -> None:
        tick = 0.1
        per_tick = max(1, round(self.rate * tick))
        padding = b"x" * WRITE_RECORD
        next_at = time.monotonic()
        while not self.done.is_set():
            for _ in range(per_tick):
                seq = self.sent
                key = str(seq).encode()
                try:
                    self.producer.produce(
                        self.topic, padding, key=key, partition=seq % len(MOVES), on_delivery=self.delivered
                    )
                except BufferError:
                    break  # the queue is full: this tick's rest is not written, the next tries again
                self.sent += 1
            self.producer.poll(0)
            next_at += tick
            time.sleep(max(0.0, next_at - time.monotonic()))
        self.undelivered = self.producer.flush(120)


def read_back(bed: KafkaBed, topic: str, start: dict[int, int]) -> set[int]:
    """The sequence numbers present in ``topic`` from ``start`` (the offsets before the writer began)."""
    consumer = Consumer(
        {"bootstrap.servers": bed.bootstrap_servers, "group.id": "bench-min-isr", "enable.auto.commit": False}
    )
    seen: set[int] = set()
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in start}
        consumer.assign([TopicPartition(topic, p, start[p]) for p in start])
        at = dict(start)
        deadline = time.monotonic() + 300
        while any(at[p] < ends[p] for p in start):
            if time.monotonic() > deadline:
                raise RuntimeError(f"read back of {topic} stalled at {at} of {ends}")
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error() is not None:
                    continue
                partition, offset = msg.partition(), msg.offset()
                if partition is not None and offset is not None:
                    at[partition] = offset + 1
                key = msg.key()
                if key is not None:
                    seen.add(int(bytes(key)))
    finally:
        consumer.close()
    return seen


@dataclass(frozen=True)
class Integrated:
    below_s: float
    below_down_s: float
    at_min_s: float
    at_min_down_s: float
    max_below: int
    max_gap_s: float


def integrate(samples: Sequence[Sample], until: float) -> Integrated:
    """Partition-seconds: each sample's counts hold until the next sample (the last until ``until``)."""
    below = below_down = at_min = at_min_down = gap = 0.0
    for here, after in zip(samples, [*samples[1:], None], strict=True):
        span = (after.at if after else until) - here.at
        gap = max(gap, span)
        below += here.below * span
        at_min += here.at_min * span
        if here.down:
            below_down += here.below * span
            at_min_down += here.at_min * span
    return Integrated(
        round(below, 1),
        round(below_down, 1),
        round(at_min, 1),
        round(at_min_down, 1),
        max((s.below for s in samples), default=0),
        round(gap, 2),
    )


def execute(
    root: Path, bed: KafkaBed, plan: Path, state: Path, log: Path, options: Options
) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "kafka_balancer.cli", "execute", "--plan", str(plan),
        "--bootstrap-server", bed.bootstrap_servers, "--state", str(state),
        "--throttle", str(options.throttle), "--max-moves", str(options.max_moves),
        "--poll-interval", "0.5", "--kafka-log", str(log.with_suffix(".kafka.log")),
        # Both sides alike: before 8bf895b the default was 30 s, and a move towards the stopped broker
        # failed during the outage, which is not the gate's doing.
        "--dead-broker-timeout", "300",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(root / "operator")}
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)


def one_run(bed: KafkaBed, root: Path, index: int, workdir: Path, options: Options) -> dict[str, Any]:
    topic = f"minisr-{index}"
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    create_topic(admin, topic)
    fill(bed, topic, options.mib)
    start = end_offsets(bed, topic)
    plan, state, log = (
        workdir / f"plan-{index}.json",
        workdir / f"state-{index}.json",
        workdir / f"execute-{index}.log",
    )
    write_plan(plan, topic)
    down = threading.Event()
    watcher = Watcher(bed, topic, options.sample_interval_s, down)
    writer = Writer(bed, topic, options.rate)
    load_before = os.getloadavg()[0]
    watcher.start()
    writer.start()
    began = time.monotonic()
    proc = execute(root, bed, plan, state, log, options)
    stopped_running = False
    try:
        time.sleep(max(0.0, began + options.stop_after_s - time.monotonic()))
        stopped_running = proc.poll() is None
        down.set()
        stop_at = time.monotonic()
        bed.stop_broker(STOPPED)
        time.sleep(max(0.0, stop_at + options.down_s - time.monotonic()))
        bed.restart_broker(STOPPED)
        down.clear()
        back_at = time.monotonic()
        exit_code = proc.wait(timeout=1800)
        ended = time.monotonic()
        wait_until(
            lambda: bool(watcher.samples) and watcher.samples[-1].full and watcher.samples[-1].at > ended,
            timeout_s=600,
            what=f"every ISR of {topic} full again",
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watcher.done.set()
        writer.done.set()
        watcher.join()
        writer.join()
    until = watcher.samples[-1].at
    figures = integrate([s for s in watcher.samples if s.at >= began], until)
    seen = read_back(bed, topic, start)
    text = log.read_text(encoding="utf-8", errors="replace")
    moves = json.loads(state.read_text(encoding="utf-8"))["moves"] if state.exists() else []
    admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=60)
    return {
        **describe_root(root),
        "run": index,
        "exit_code": exit_code,
        "execute_s": round(ended - began, 1),
        "window_s": round(until - began, 1),
        "broker_down_s": round(back_at - stop_at, 1),
        "stopped_while_executing": stopped_running,
        "below_min_isr_partition_s": figures.below_s,
        "below_min_isr_partition_s_broker_down": figures.below_down_s,
        "at_min_isr_partition_s": figures.at_min_s,
        "at_min_isr_partition_s_broker_down": figures.at_min_down_s,
        "at_min_isr_partition_s_broker_up": round(figures.at_min_s - figures.at_min_down_s, 1),
        # 9 (the partitions with a replica on the stopped broker) less those a move took above min.
        "at_min_isr_partitions_mean_broker_down": round(figures.at_min_down_s / (back_at - stop_at), 2),
        "max_partitions_below_min_isr": figures.max_below,
        "samples": len(watcher.samples),
        "samples_unanswered": dict(watcher.failed),
        "max_sample_gap_s": figures.max_gap_s,
        "records_sent": writer.sent,
        "records_acked": len(writer.acked),
        "produce_errors": dict(writer.errors),
        "records_lost": len(writer.acked - seen),
        "undelivered_at_exit": writer.undelivered,
        "batches": len({round(m["startedAt"]) for m in moves if m.get("startedAt") is not None}),
        "moves_failed": sum(m.get("status") == "failed" for m in moves),
        "gate_waits_logged": text.count(GATE_WAIT),
        "execute_error": text.strip().splitlines()[-1][:300] if exit_code and text.strip() else "",
        "load_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


SUMMARY_FIGURES = (
    "below_min_isr_partition_s",
    "at_min_isr_partition_s",
    "at_min_isr_partition_s_broker_down",
    "at_min_isr_partition_s_broker_up",
    "at_min_isr_partitions_mean_broker_down",
    "records_lost",
    "execute_s",
)


def summary(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    lines = []
    for root in dict.fromkeys(r["executor_root"] for r in results):
        runs = [r for r in results if r["executor_root"] == root]
        line: dict[str, Any] = {
            "summary": root,
            "commit": runs[0]["commit"],
            "health_gate": runs[0]["health_gate"],
        }
        line["runs"] = len(runs)
        for name in SUMMARY_FIGURES:
            values = [r[name] for r in runs]
            line[f"median_{name}"] = round(statistics.median(values), 1)
            line[f"range_{name}"] = [min(values), max(values)]
        errors = [sum(r["produce_errors"].values()) for r in runs]
        line["median_produce_errors"] = statistics.median(errors)
        line["range_produce_errors"] = [min(errors), max(errors)]
        line["load_1m_before_after"] = [r["load_1m_before_after"] for r in runs]
        lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    libs = provisioned_directory("kafka/provision.sh")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-min-isr-") as run:
        bed = KafkaBed(libs, Path(run) / "bed", brokers=4, racks=3)
        bed.start()
        try:
            print(json.dumps({"bed": bed.bootstrap_servers, "racks": bed.racks}), flush=True)
            index = 0
            for _ in range(options.repeats):
                for root in options.roots:
                    index += 1
                    results.append(one_run(bed, root, index, Path(run), options))
                    print(json.dumps(results[-1]), flush=True)
            for line in summary(results):
                print(json.dumps({**line, "cpus": os.cpu_count(), "machine": platform.machine()}), flush=True)
        finally:
            bed.stop()


if __name__ == "__main__":
    main()
