"""Execution makespan against its bound: a scale-out, a drain and a mixed rebalance on a real Kafka bed.

    KB_BED_PORTS=2/4 .venv/bin/python bench/bench_makespan.py [--throttle 500000]
        [--orders plan,smallest-first] [--scenarios scale-out,drain,mixed,drain-rf3]
        [--produce-rate 20000]
        [--operator PATH]   # run `execute` from another checkout's operator/ (e.g. main's: before)

Starts a private 6-broker KafkaBed. Per scenario and order, a fresh topic is laid out and filled
(incompressible 100 kB records, uncompressed), every replica is waited for, and ``kafka-balancer
execute`` runs the scenario's plan with only ``--throttle`` and ``--order`` given (every other setting
at its default: 5 moves per broker, 50 in all), while a producer writes ``--produce-rate`` bytes/s
into the topic throughout. The plans, seeded so every run moves the same bytes:

- scale-out: 24 partitions on brokers 1-4, replication factor 2; 16 replicas move to the two
  new brokers 5 and 6 (eight each);
- drain: 60 partitions on brokers 1-6, replication factor 2; every replica of broker 1 moves to a
  broker of 2-6 the partition is not on;
- mixed: 44 partitions on brokers 1-6, replication factor 2, each giving one replica to another
  broker;
- drain-rf3: the drain with 48 partitions of replication factor 3.

Sizes are uneven (0.25 to 6 MB). One JSON line per run: the makespan (first move submitted to last
move done, from the state file), the bound (``kafka_balancer.planner.makespan`` on the replicas,
ISR and sizes measured before the run), their ratio, the whole run's wall time, the CPU seconds of
the execute process, the 1-minute load average before and after, and the bytes the producer wrote
meanwhile. A last ``"summary"`` line lists the ratio per scenario and order.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer.errors import ExecutionError
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.planner.makespan import Copying, makespan_bound
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

BROKERS = 6
MESSAGE_BYTES = 100_000
SIZES_MB = (0.25, 0.5, 1, 2, 4, 6)


@dataclass(frozen=True)
class Scenario:
    name: str
    layout: dict[int, tuple[int, ...]]  # partition -> replicas before
    targets: dict[int, tuple[int, ...]]  # partition -> replicas planned (moving partitions only)
    sizes: dict[int, int]  # partition -> bytes written before the run


def _size(rng: random.Random) -> int:
    return int(rng.choice(SIZES_MB) * 1_000_000) // MESSAGE_BYTES * MESSAGE_BYTES


def scale_out(rng: random.Random) -> Scenario:
    layout = {p: tuple(rng.sample(range(1, 5), 2)) for p in range(24)}
    movers = rng.sample(sorted(layout), 16)
    targets = {}
    for i, p in enumerate(movers):
        replicas = list(layout[p])
        replicas[rng.randrange(2)] = 5 if i % 2 else 6
        targets[p] = tuple(replicas)
    return Scenario("scale-out", layout, targets, {p: _size(rng) for p in layout})


def drain(rng: random.Random, partitions: int = 60, factor: int = 2, name: str = "drain") -> Scenario:
    layout = {p: tuple(rng.sample(range(1, BROKERS + 1), factor)) for p in range(partitions)}
    targets = {
        p: tuple(rng.choice([b for b in range(2, BROKERS + 1) if b not in r]) if x == 1 else x for x in r)
        for p, r in layout.items()
        if 1 in r
    }
    return Scenario(name, layout, targets, {p: _size(rng) for p in layout})


def drain_rf3(rng: random.Random) -> Scenario:
    return drain(rng, partitions=48, factor=3, name="drain-rf3")


def mixed(rng: random.Random) -> Scenario:
    layout = {p: tuple(rng.sample(range(1, BROKERS + 1), 2)) for p in range(44)}
    targets = {}
    for p, r in layout.items():
        replicas = list(r)
        replicas[rng.randrange(2)] = rng.choice([b for b in range(1, BROKERS + 1) if b not in r])
        targets[p] = tuple(replicas)
    return Scenario("mixed", layout, targets, {p: _size(rng) for p in layout})


SCENARIOS = {"scale-out": scale_out, "drain": drain, "mixed": mixed, "drain-rf3": drain_rf3}


def wait_until(check: Any, timeout_s: float, what: str, every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise BedError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(every_s)


def create_topic(bed: KafkaBed, topic: str, scenario: Scenario) -> None:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    assignment = [list(scenario.layout[p]) for p in sorted(scenario.layout)]
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)

    def ready() -> bool:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
        leaders = [m.leader for m in meta.partitions.values()]
        return len(leaders) == len(assignment) and all(leader >= 0 for leader in leaders)

    wait_until(ready, 60, f"{topic} leaders")


def _producer(bed: KafkaBed, batch_bytes: int) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bed.bootstrap_servers,
            "acks": "all",
            "compression.type": "none",
            "linger.ms": 20,
            "batch.size": batch_bytes,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )


def fill(bed: KafkaBed, topic: str, scenario: Scenario, batch_bytes: int) -> None:
    producer = _producer(bed, batch_bytes)
    value = os.urandom(MESSAGE_BYTES)
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for partition, size in scenario.sizes.items():
        for _ in range(size // MESSAGE_BYTES):
            while True:
                try:
                    producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
                    break
                except BufferError:  # local queue full: let deliveries drain it
                    producer.poll(0.1)
            producer.poll(0)
    if producer.flush(300) != 0 or failures:
        raise BedError(f"writing {topic} failed: {failures[:3] or 'messages undelivered after 300s'}")


class Writer(threading.Thread):
    """Writes ``rate`` bytes/s of 1 kB records round-robin over the topic's partitions until stopped."""

    def __init__(self, bed: KafkaBed, topic: str, partitions: int, rate: int) -> None:
        super().__init__(daemon=True)
        self.producer = _producer(bed, 16_384)
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.stopping = threading.Event()
        self.written = 0

    def run(self) -> None:
        value = os.urandom(1000)
        began = time.monotonic()
        while not self.stopping.is_set():
            due = int(self.rate * (time.monotonic() - began))
            while self.written + len(value) <= due:
                partition = (self.written // len(value)) % self.partitions
                self.producer.produce(self.topic, value=value, partition=partition)
                self.written += len(value)
            self.producer.poll(0.05)
        self.producer.flush(60)


def await_replicated(admin: KafkaAdmin, topic: str, scenario: Scenario) -> dict[int, int]:
    """Wait until every replica of every partition holds the same bytes; return partition → bytes."""
    found: dict[int, int] = {}

    def even() -> bool:
        sizes = admin.partition_sizes([(topic, p) for p in scenario.layout])
        per = {p: {sizes.get((topic, p, b), -1) for b in scenario.layout[p]} for p in scenario.layout}
        found.update({p: next(iter(s)) for p, s in per.items() if len(s) == 1})
        return all(len(s) == 1 for s in per.values())

    wait_until(even, 180, f"{topic} replicas to hold the same bytes")
    return found


def run(bed: KafkaBed, workdir: Path, scenario: Scenario, order: str, options: Options) -> dict[str, Any]:
    topic = f"{scenario.name}-{order}"
    admin = KafkaAdmin(bed.bootstrap_servers)
    try:
        create_topic(bed, topic, scenario)
        fill(bed, topic, scenario, options.batch_bytes)
        sizes = await_replicated(admin, topic, scenario)
        parts = admin.partitions({topic})
        copies = [
            Copying(sizes[p], parts[(topic, p)].replicas, target, frozenset(parts[(topic, p)].isr))
            for p, target in scenario.targets.items()
        ]
        bound = makespan_bound(copies, options.throttle)
        plan = workdir / f"plan-{topic}.json"
        state_path = workdir / f"state-{topic}.json"
        moves = [{"topic": topic, "partition": p, "replicas": list(r)} for p, r in scenario.targets.items()]
        plan.write_text(json.dumps({"version": 1, "partitions": moves}))
        argv = [
            sys.executable, "-m", "kafka_balancer.cli", "execute", "--plan", str(plan),
            "--bootstrap-server", bed.bootstrap_servers, "--state", str(state_path),
            "--throttle", str(options.throttle), "--order", order,
        ]  # fmt: skip
        env = dict(os.environ)
        if options.operator is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(options.operator), env.get("PYTHONPATH", "")])
        writer = Writer(bed, topic, len(scenario.layout), options.produce_rate)
        writer.start()
        load_before = os.getloadavg()[0]
        cpu_before = _children_cpu()
        began = time.time()
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        ended = time.time()
        cpu = _children_cpu() - cpu_before
        writer.stopping.set()
        writer.join()
        (workdir / f"execute-{topic}.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise ExecutionError(f"execute exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    finally:
        admin.close()
    state = json.loads(state_path.read_text())
    submitted = min(m["startedAt"] for m in state["moves"] if m.get("startedAt"))
    finished = max(m["finishedAt"] for m in state["moves"])
    makespan = finished - submitted
    return {
        "scenario": scenario.name,
        "order": order,
        "operator": str(options.operator or "this checkout"),
        "moves": len(scenario.targets),
        "bytes": sum(c.size * len(c.adding) for c in copies),
        "throttle": options.throttle,
        "makespan_s": round(makespan, 1),
        "bound_s": round(bound.seconds, 1),
        "ratio": round(makespan / bound.seconds, 3),
        "bound_spread_sources_s": round(bound.spread_seconds, 1),
        "largest_copy_s": round(bound.largest_copy / options.throttle, 1),
        "whole_run_s": round(ended - began, 1),
        "execute_cpu_s": round(cpu, 2),
        "produced_bytes": writer.written,
        "loadavg_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Options:
    throttle: int
    orders: tuple[str, ...]
    scenarios: tuple[str, ...]
    produce_rate: int
    batch_bytes: int
    operator: Path | None


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--throttle", type=int, default=500_000, help="bytes/s per broker and direction")
    parser.add_argument("--orders", default="plan", help="execute --order values")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated")
    parser.add_argument("--produce-rate", type=int, default=20_000, help="bytes/s written during a run")
    parser.add_argument(
        "--batch-bytes", type=int, default=200_000,
        help="producer batch.size of the fill: two 100 kB records per batch",
    )  # fmt: skip
    parser.add_argument("--operator", type=Path, help="an operator/ directory to run `execute` from")
    args = parser.parse_args(argv)
    return Options(
        args.throttle,
        tuple(args.orders.split(",")),
        tuple(args.scenarios.split(",")),
        args.produce_rate,
        args.batch_bytes,
        args.operator,
    )


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    libs = provisioned_directory("kafka/provision.sh")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-makespan-") as tmp:
        bed = KafkaBed(libs, Path(tmp) / "bed", brokers=BROKERS)
        try:
            bed.start()
            print(json.dumps({"bed": bed.bootstrap_servers, "options": str(options)}), flush=True)
            for name in options.scenarios:
                scenario = SCENARIOS[name](random.Random(name))
                for order in options.orders:
                    results.append(run(bed, Path(tmp), scenario, order, options))
                    print(json.dumps(results[-1]), flush=True)
        finally:
            bed.stop()
    print(json.dumps({"summary": {f"{r['scenario']} {r['order']}": r["ratio"] for r in results}}))


if __name__ == "__main__":
    main()
