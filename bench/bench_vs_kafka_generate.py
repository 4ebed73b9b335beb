"""Our planner against Kafka's own ``kafka-reassign-partitions.sh --generate`` on a synthetic cluster.

    .venv/bin/python bench/bench_vs_kafka_generate.py [--size mid] [--kafka-runs 3] [--work-dir DIR]

It generates the cluster ``bench_planner.py`` uses for that size (same spec, seed 7), writes its
snapshot, plans it in-process (default goals without TopicReplicaDistribution, then all default
goals), and runs ``kafka_generate/KafkaGenerate.java`` (compiled here against the jars of
``hack/kafka/provision.sh``), which calls the placement step of Kafka 4.3.1's ``--generate``
over all active brokers with their racks. Kafka's placer draws from an unseeded ``Random``, so it
runs several times. Every plan is judged by the small load model below (the docs/design.md rules,
written again here so the planner's own arithmetic is not trusted): bytes moved, replica moves,
worst deviation from the mean per resource and count, RackAware violations. Prints a table,
then the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench_planner import SIZES, synthetic_spec

JAVA_SOURCE = Path(__file__).resolve().parent / "kafka_generate" / "KafkaGenerate.java"
Assignment = dict[tuple[str, int], tuple[int, ...]]
FloatArray = npt.NDArray[np.float64]

# Columns of the per-broker table the load model fills.
COLUMNS = ("disk", "networkIn", "networkOut", "cpu", "replicas", "leaders")
SHORT = {
    "disk": "disk",
    "networkIn": "netIn",
    "networkOut": "netOut",
    "cpu": "cpu",
    "replicas": "replicas",
    "leaders": "leaders",
}
RESOURCES = COLUMNS[:4]


class BenchError(Exception):
    """A step of the benchmark could not run; main() prints it as one line."""


# -- the inputs ---------------------------------------------------------------------------------


def cluster_snapshot(size: str) -> dict[str, Any]:
    """The snapshot document of the cluster ``bench_planner.py`` plans for ``size``."""
    from kafka_balancer.formats.snapshot import cluster_to_snapshot
    from kafka_balancer_dev.synthetic import generate

    spec = synthetic_spec(size)
    return cluster_to_snapshot(generate(spec))


def current_assignment(snapshot: dict[str, Any]) -> Assignment:
    return {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in snapshot["partitions"]}


def current_leaders(snapshot: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(p["topic"], p["partition"]): p["leader"] for p in snapshot["partitions"]}


# -- our planner --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    name: str
    seconds: float
    # CPU time (all threads) as well: wall time on a shared 2-core machine depends on the neighbours.
    cpu_seconds: float
    assignment: Assignment
    # Leaders after the plan where they differ from replicas[0] (never for a plan's listed partitions).
    leaders: dict[tuple[str, int], int]
    notes: dict[str, Any]


def run_ours(snapshot: dict[str, Any], name: str, without_topic_goal: bool) -> Run:
    from kafka_balancer.formats.snapshot import parse_snapshot
    from kafka_balancer.goals.spec import GoalType, default_goal_set
    from kafka_balancer.planner.optimizer import plan

    cluster = parse_snapshot(snapshot)
    goals = default_goal_set()
    if without_topic_goal:
        goals = tuple(g for g in goals if g.type is not GoalType.TOPIC_REPLICA_DISTRIBUTION)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = plan(cluster, goals)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assignment = current_assignment(snapshot)
    leaders = current_leaders(snapshot)
    for r in result.reassignments:
        assignment[(r.topic, r.partition)] = tuple(r.replicas)
        leaders[(r.topic, r.partition)] = r.replicas[0]
    unsatisfied = [g.label for g in result.goals if not g.after.satisfied]
    notes = {
        "planner_bytes_moved": result.figures.bytes_moved,
        "planner_replica_moves": result.figures.replica_moves,
        "unsatisfied_goals": unsatisfied,
    }
    return Run(name, seconds, cpu, assignment, leaders, notes)


# -- Kafka's --generate -------------------------------------------------------------------------


def compile_generator(libs: Path, classes: Path) -> None:
    done = subprocess.run(
        ["javac", "-d", str(classes), "-cp", f"{libs}/*", str(JAVA_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(f"javac {JAVA_SOURCE.name} failed: {done.stderr.strip()}")


def write_generator_input(snapshot: dict[str, Any], path: Path) -> None:
    """Brokers as ``--broker-list`` would name them (all active ones), then the current assignment."""
    lines = [f"broker\t{b['id']}\t{b['rack']}" for b in snapshot["brokers"] if b["state"] == "active"]
    lines += [
        f"partition\t{p['topic']}\t{p['partition']}\t{','.join(map(str, p['replicas']))}"
        for p in snapshot["partitions"]
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run_kafka(libs: Path, classes: Path, input_path: Path, output: Path, name: str) -> Run:
    started, cpu_started = time.perf_counter(), children_cpu()
    done = subprocess.run(
        ["java", "-cp", f"{classes}:{libs}/*", "KafkaGenerate", str(input_path), str(output)],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds, cpu = time.perf_counter() - started, children_cpu() - cpu_started
    if done.returncode != 0:
        raise BenchError(f"KafkaGenerate failed: {done.stderr.strip()}")
    placed = re.search(r"in ([0-9.]+) s", done.stderr)
    document = json.loads(output.read_text(encoding="utf-8"))
    assignment = {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in document["partitions"]}
    notes = {"placement_seconds": float(placed.group(1)) if placed else None}
    # Leaders: replicas[0], as the preferred-leader election after the reassignment makes them.
    return Run(name, seconds, cpu, assignment, {}, notes)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the independent load model -----------------------------------------------------------------


@dataclass(frozen=True)
class Brokers:
    index: dict[int, int]
    racks: list[str]
    capacity: FloatArray  # [broker, resource]
    share: FloatArray
    active: npt.NDArray[np.bool_]


def brokers_of(snapshot: dict[str, Any]) -> Brokers:
    bs = snapshot["brokers"]
    return Brokers(
        index={b["id"]: i for i, b in enumerate(bs)},
        racks=[b["rack"] for b in bs],
        capacity=np.array([[b["capacity"][r] for r in RESOURCES] for b in bs], dtype=np.float64),
        share=np.array([b.get("warmUpShare", 1.0) for b in bs], dtype=np.float64),
        active=np.array([b["state"] == "active" for b in bs]),
    )


def broker_table(
    snapshot: dict[str, Any], brokers: Brokers, assignment: Assignment, leaders: dict[tuple[str, int], int]
) -> FloatArray:
    """Per broker: disk, networkIn, networkOut, cpu, replicas, leaders (docs/design.md's load model)."""
    table = np.zeros((len(brokers.index), len(COLUMNS)))
    for p in snapshot["partitions"]:
        key = (p["topic"], p["partition"])
        replicas = assignment[key]
        leader = leaders.get(key, replicas[0])
        load = p["load"]
        rf = len(replicas)
        for broker_id in replicas:
            row = table[brokers.index[broker_id]]
            row[0] += load["disk"]
            row[1] += load["networkIn"]
            row[4] += 1
            if broker_id == leader:
                row[2] += load["networkOut"] + load["networkIn"] * (rf - 1)
                row[3] += load["cpu"]
                row[5] += 1
            else:
                row[3] += load.get("followerCpu", 0.0)
    return table


def worst_deviations(table: FloatArray, brokers: Brokers) -> dict[str, float]:
    """Worst |utilisation − mean| / mean over active brokers, in %; means capacity-weighted."""
    out: dict[str, float] = {}
    a = brokers.active
    for c, column in enumerate(COLUMNS):
        # Resources weigh by effective capacity, counts by share alone.
        weight = brokers.capacity[:, c] * brokers.share if c < len(RESOURCES) else brokers.share
        mean = table[:, c].sum() / weight[a].sum()
        utilisation = table[a, c] / weight[a]
        out[column] = round(float(100.0 * np.abs(utilisation - mean).max() / mean), 2) if mean > 0 else 0.0
    return out


def rack_violations(assignment: Assignment, brokers: Brokers) -> int:
    n_racks = len(set(brokers.racks))
    bad = 0
    for replicas in assignment.values():
        per_rack: dict[str, int] = {}
        for broker_id in replicas:
            rack = brokers.racks[brokers.index[broker_id]]
            per_rack[rack] = per_rack.get(rack, 0) + 1
        bad += max(per_rack.values()) > math.ceil(len(replicas) / n_racks)
    return bad


def judge(snapshot: dict[str, Any], brokers: Brokers, run: Run) -> dict[str, Any]:
    before = current_assignment(snapshot)
    before_leaders = current_leaders(snapshot)
    if set(run.assignment) != set(before):
        raise BenchError(f"{run.name}: the plan does not cover exactly the snapshot's partitions")
    disk = {(p["topic"], p["partition"]): p["load"]["disk"] for p in snapshot["partitions"]}
    stored = sum(disk[key] * len(replicas) for key, replicas in before.items())
    moves = 0
    moved = 0.0
    touched = 0
    leader_changes = 0
    for key, old in before.items():
        new = run.assignment[key]
        if len(new) != len(old) or len(set(new)) != len(new):
            raise BenchError(f"{run.name}: {key} gets replicas {list(new)} for {list(old)}")
        added = len(set(new) - set(old))
        moves += added
        moved += disk[key] * added
        touched += new != old
        leader_changes += run.leaders.get(key, new[0]) != before_leaders[key]
    table = broker_table(snapshot, brokers, run.assignment, run.leaders)
    return {
        "plan": run.name,
        "seconds": round(run.seconds, 2),
        "cpu_seconds": round(run.cpu_seconds, 2),
        "partitions_changed": touched,
        "replica_moves": moves,
        "bytes_moved": round(moved),
        "share_of_data_moved_percent": round(100.0 * moved / stored, 2),
        "leader_changes": leader_changes,
        "worst_deviation_percent": worst_deviations(table, brokers),
        "rack_aware_violations": rack_violations(run.assignment, brokers),
        **run.notes,
    }


# -- output -------------------------------------------------------------------------------------


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    head = (
        f"{'plan':<34}{'wall s':>8}{'cpu s':>8}{'moves':>8}{'TB moved':>10}{'% data':>8}{'ldr chg':>8}"
        + "".join(f"{SHORT[c]:>9}" for c in COLUMNS)
        + f"{'rack viol':>10}"
    )
    print("worst deviation from the mean, % (per column):")
    print(head)
    for r in rows:
        dev = r["worst_deviation_percent"]
        print(
            f"{r['plan']:<34}{r['seconds']:>8.2f}{r['cpu_seconds']:>8.2f}"
            f"{r['replica_moves']:>8}{r['bytes_moved'] / 1e12:>10.2f}"
            f"{r['share_of_data_moved_percent']:>8.2f}{r['leader_changes']:>8}"
            + "".join(f"{dev[c]:>9.1f}" for c in COLUMNS)
            + f"{r['rack_aware_violations']:>10}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--size",
        choices=sorted(s for s in SIZES if not {"grown_by", "big_rack"} & SIZES[s].keys()),
        default="mid",
    )
    parser.add_argument("--kafka-runs", type=int, default=3, help="placements by Kafka's (unseeded) placer")
    parser.add_argument("--work-dir", type=Path, help="keep snapshot, inputs and plans here")
    args = parser.parse_args()
    if args.kafka_runs < 1:
        parser.error("--kafka-runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-vs-kafka-") as tmp:
        work = args.work_dir or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        try:
            result = compare(args.size, args.kafka_runs, work)
        except BenchError as err:
            sys.exit(f"bench_vs_kafka_generate: {err}")
    print(f"{args.size}: {SIZES[args.size]}, machine: {result['machine']}")
    print_table(result["plans"])
    print(json.dumps(result))


def machine() -> dict[str, Any]:
    total = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text(encoding="utf-8"))
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(int(total.group(1)) / 2**20, 1) if total else None,
        "python": sys.version.split()[0],
        "java": java.stderr.splitlines()[0] if java.stderr else None,
    }


def compare(size: str, kafka_runs: int, work: Path) -> dict[str, Any]:
    snapshot = cluster_snapshot(size)
    (work / "snapshot.json").write_text(json.dumps(snapshot), encoding="utf-8")
    brokers = brokers_of(snapshot)
    before = Run("before (snapshot)", 0.0, 0.0, current_assignment(snapshot), current_leaders(snapshot), {})
    runs = [
        before,
        run_ours(snapshot, "ours: default − TopicReplicaDistr.", without_topic_goal=True),
        run_ours(snapshot, "ours: default goals", without_topic_goal=False),
    ]
    from kafka_balancer_dev.errors import BedError
    from kafka_balancer_dev.localbed.provisioning import provisioned_directory

    try:
        libs = provisioned_directory("kafka/provision.sh")
    except BedError as err:
        raise BenchError(str(err)) from err
    classes = work / "classes"
    started = time.perf_counter()
    compile_generator(libs, classes)
    compile_seconds = time.perf_counter() - started
    write_generator_input(snapshot, work / "generate-input.tsv")
    runs += [
        run_kafka(
            libs,
            classes,
            work / "generate-input.tsv",
            work / f"kafka-generate-{i}.json",
            f"kafka --generate #{i}",
        )
        for i in range(1, kafka_runs + 1)
    ]
    return {
        "size": size,
        **SIZES[size],
        "machine": machine(),
        "javac_seconds": round(compile_seconds, 2),
        "plans": [judge(snapshot, brokers, run) for run in runs],
    }


if __name__ == "__main__":
    main()
