"""Time to balanced, end to end (issue 60): a scale-out and a drain on real beds, broken into parts.

    KB_BED_PORTS=2/4 .venv/bin/python bench/bench_time_to_balanced.py [--runs 1]
        [--detection-interval 10] [--warm-up 0s] [--warm-up-steps 1] [--partition-mb 8]
        [--produce-rate 20000] [--settle-passes 3] [--stagger] [--keep DIR]

Starts a private Kafka bed (a controller and brokers 1-3 in racks a, b, c), a private Kubernetes API
bed (etcd + kube-apiserver, the chart's CRDs) and the operator as a process (``kafka-balancer run``,
as tests/e2e/conftest.py does), all from this checkout. One topic of 12 partitions (RF 2, 8 replicas
on each broker, ``--partition-mb`` MB each) gets ``--produce-rate`` bytes/s of 1 kB records
throughout. One Auto pool ``main`` keeps to that topic (``excludedTopics`` as tests/e2e/objects.py
does) with the goals of tests/e2e/test_lifecycle.py (ReplicaDistribution ±10 %, RackAware), the
e2e capacities, ``execution`` at its defaults (50Mi/s throttle, 5 moves per broker, 50 in all),
``warmUp`` from ``--warm-up`` / ``--warm-up-steps`` (0s: none) and ``detectionIntervalSeconds``
from ``--detection-interval`` (10 on the bed, as the e2e tests; the default is 60). Once the pool is
Balanced and has stored ``--settle-passes`` collector passes (rates exist from the second pass),
each run is:

1. **scale-out**: one more broker in rack a (``KafkaBed.add_broker``) → the pool ``Balanced=True``
   with that broker ``Active``; ``--stagger`` adds it a random 0..interval s (seeded by the run)
   after the pass before it, otherwise at once (the pool's look at the live brokers, every 5 s
   between passes, then sees it);
2. **drain**: ``spec.drain`` names that broker → its ``status.brokers`` state ``Drained``; then it is
   stopped (it stays in ``spec.drain``, so the pool reports it ``Removed``) before the next run.

Parts, from what the operator exposes: pass times are the collector's sample files
(``<state-dir>/samples/``, named by the observation's ms timestamp; the file's mtime ends the read),
pass ends the ``pool ... reconciled`` log lines, planning each pass's own
``kafka_balancer_plan_seconds`` (scraped at every status poll), the moves the execution state files
(``<state-dir>/executions/``), an execution's end its ``ExecutionFinished`` Event, scoring
``kafka_balancer_scoring_seconds``, the end this script's poll of the pool's status (``--poll``):

- register: ``add_broker`` called → returned (the broker unfenced; Kafka's, not the operator's);
- detection: the broker registered, or the drain patched → the observation of the first pass that
  acts on it;
- collection: that pass's read (observation → samples written);
- planning: that pass's plan_seconds; pass writes: the rest of the pass (ConfigMaps, statuses, cordon);
- to first move: the pass's end → the first move submitted (leases, throttles, state mirror);
- execution: first move submitted → last move done, beside ``makespan_bound`` of those moves (sizes
  as the executor recorded them, at its throttle); finish: → ``ExecutionFinished``;
- warm-up wait: between one step's ``ExecutionFinished`` and the next step's first move;
- confirmation: the last ``ExecutionFinished`` → the next pass's observation (the daemon runs it
  once its view shows the plan executed) → the status showing the end.

One JSON line per scenario and run (seconds; CPU seconds of the operator process and of this one;
1-minute load before and after), and a ``"summary"`` line with the median of each part.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from prometheus_client.parser import text_string_to_metric_families

from kafka_balancer.planner.makespan import Copying, makespan_bound
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import answers_ok, free_ports
from kafka_balancer_dev.localbed.procs import wait_until
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

ROOT = Path(__file__).resolve().parents[1]
CRD_DIRS = (
    ROOT / "charts" / "kafka-balancer" / "crds",
    ROOT / "charts" / "kafka-balancer" / "files" / "crds",
)
PEERING = "kafka-balancer-bench"
NAMESPACE = "bench"
POOL = "main"
TOPIC = "ttb"
PARTITIONS = 12
RECORD = 100_000
DEFAULT_THROTTLE = 50 * 1024 * 1024  # execution.throttleBytesPerSecond's default, 50Mi
GOALS = (("replicas", {"type": "ReplicaDistribution", "rangePercent": 10}), ("racks", {"type": "RackAware"}))
GROUP, VERSION = "kafkabalancer.io", "v1alpha1"


@dataclass(frozen=True)
class Options:
    runs: int
    detection_interval: int
    warm_up: str
    warm_up_steps: int
    partition_mb: float
    produce_rate: int
    settle_passes: int
    stagger: bool
    poll: float
    timeout: float
    keep: Path | None


def parse(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1, help="scale-out + drain pairs")
    parser.add_argument("--detection-interval", type=int, default=10, help="spec.detectionIntervalSeconds")
    parser.add_argument("--warm-up", default="0s", help="spec.warmUp.duration (0s: none)")
    parser.add_argument("--warm-up-steps", type=int, default=1, help="spec.warmUp.steps")
    parser.add_argument("--partition-mb", type=float, default=8.0, help="MB written to each partition first")
    parser.add_argument("--produce-rate", type=int, default=20_000, help="bytes/s written throughout")
    parser.add_argument("--settle-passes", type=int, default=3, help="passes stored before the first run")
    parser.add_argument(
        "--stagger",
        action="store_true",
        help="add each broker after a random 0..interval s (seeded by the run), not just after a pass",
    )
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between status polls")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a scenario may take")
    parser.add_argument("--keep", type=Path, help="copy the operator's log and state here at the end")
    args = parser.parse_args(argv)
    return Options(
        args.runs,
        args.detection_interval,
        args.warm_up,
        args.warm_up_steps,
        args.partition_mb,
        args.produce_rate,
        args.settle_passes,
        args.stagger,
        args.poll,
        args.timeout,
        args.keep,
    )


# -- the beds and the operator ------------------------------------------------------------------------


class Operator:
    """``kafka-balancer run`` against the bed's apiserver, with its own state dir, log and ports."""

    def __init__(self, kube_bed: kube.KubeBed, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        liveness, metrics = free_ports(2)
        self.state_dir = run_dir / "state"
        self.log = run_dir / "operator.log"
        self.liveness = f"http://127.0.0.1:{liveness}/healthz"
        self.metrics = f"http://127.0.0.1:{metrics}/"
        self.argv = [
            str(Path(sys.executable).with_name("kafka-balancer")), "run",
            "--kubeconfig", str(kube_bed.kubeconfig), "--peering", PEERING,
            "--state-dir", str(self.state_dir), "--liveness", self.liveness,
            "--metrics-port", str(metrics),
        ]  # fmt: skip
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT)
        process = self.process
        wait_until(
            lambda: process.poll() is not None or answers_ok(self.liveness),
            timeout_s=90,
            what="the operator's liveness endpoint",
        )
        if process.poll() is not None:
            raise BedError(f"the operator exited with {process.returncode}: see {self.log}")

    def cpu_seconds(self) -> float:
        """User + system CPU of the operator process (and its children: the scoring JVM), from /proc."""
        if self.process is None:
            return 0.0
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(f) for f in fields[11:15]) / ticks  # utime, stime, cutime, cstime

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def kubectl(bed: kube.KubeBed, *args: str, stdin: str | None = None) -> str:
    done = bed.kubectl(*args, stdin=stdin)
    if done.returncode != 0:
        raise BedError(f"kubectl {' '.join(args)}: {done.stderr}")
    return done.stdout


def install(bed: kube.KubeBed) -> None:
    """The chart's CRDs and the peering object, as tests/e2e/conftest.py installs them."""
    kubectl(bed, "apply", "--server-side", *(a for d in CRD_DIRS for a in ("-f", str(d))))
    for crd in (
        "brokerpools.kafkabalancer.io",
        "balancergoals.kafkabalancer.io",
        "clusterkopfpeerings.kopf.dev",
    ):
        kube.wait_established(bed, crd)
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": PEERING}}
    kubectl(bed, "apply", "-f", "-", stdin=json.dumps(peering))
    kubectl(bed, "create", "namespace", NAMESPACE)


def apply_pool(bed: kube.KubeBed, kafka: KafkaBed, options: Options) -> None:
    pool = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BrokerPool",
        "metadata": {"name": POOL, "namespace": NAMESPACE},
        "spec": {
            "mode": "Auto",
            "detectionIntervalSeconds": options.detection_interval,
            "kafka": {"bootstrapServers": kafka.bootstrap_servers},
            "capacity": {"disk": "100Gi", "networkIn": "100M", "networkOut": "100M", "cpu": 4},
            "warmUp": {"duration": options.warm_up, "steps": options.warm_up_steps},
            "excludedTopics": [f"(?!{TOPIC}$).*"],
        },
    }
    goals = [
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "BalancerGoal",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {**spec, "poolRef": {"name": POOL}},
        }
        for name, spec in GOALS
    ]
    kubectl(
        bed,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [pool, *goals]}),
    )


# -- Kafka: the topic, its data, its traffic ------------------------------------------------------------


def _producer(kafka: KafkaBed, batch: int) -> Producer:
    return Producer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "acks": "all",
            "compression.type": "none",
            "linger.ms": 20,
            "batch.size": batch,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )


def create_and_fill(kafka: KafkaBed, mb: float) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    layout = [[p % 3 + 1, (p + 1) % 3 + 1] for p in range(PARTITIONS)]
    new = NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=layout)
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(timeout=60)

    def ready() -> bool:
        parts = admin.list_topics(topic=TOPIC, timeout=10).topics[TOPIC].partitions
        return len(parts) == PARTITIONS and all(p.leader >= 0 for p in parts.values())

    wait_until(ready, timeout_s=60, what=f"{TOPIC} leaders")
    producer = _producer(kafka, 2 * RECORD)
    value = os.urandom(RECORD)
    for partition in range(PARTITIONS):
        for _ in range(int(mb * 1_000_000) // RECORD):
            while True:
                try:
                    producer.produce(TOPIC, value=value, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
    if producer.flush(300) != 0:
        raise BedError(f"writing {TOPIC}: messages undelivered after 300 s")


class Writer(threading.Thread):
    """``rate`` bytes/s of 1 kB records round-robin over the topic's partitions until stopped."""

    def __init__(self, kafka: KafkaBed, rate: int) -> None:
        super().__init__(daemon=True)
        self.producer = _producer(kafka, 16_384)
        self.rate = rate
        self.stopping = threading.Event()
        self.written = 0

    def run(self) -> None:
        value = os.urandom(1000)
        began = time.monotonic()
        while not self.stopping.is_set():
            due = int(self.rate * (time.monotonic() - began))
            while self.written + len(value) <= due:
                partition = (self.written // len(value)) % PARTITIONS
                try:
                    self.producer.produce(TOPIC, value=value, partition=partition)
                except BufferError:
                    break
                self.written += len(value)
            self.producer.poll(0.05)
        self.producer.flush(60)


# -- what the operator exposes ----------------------------------------------------------------------


class Watch:
    """Reads of the pool (status, Events), the operator's metrics and its state dir."""

    def __init__(self, kube_bed: kube.KubeBed, operator: Operator) -> None:
        api = k8s_config.new_client_from_config(config_file=str(kube_bed.kubeconfig))  # type: ignore[no-untyped-call]
        self.custom = k8s_client.CustomObjectsApi(api)
        self.core = k8s_client.CoreV1Api(api)
        self.operator = operator

    def pool(self) -> dict[str, Any]:
        found: Any = self.custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, "brokerpools", POOL)
        return dict(found)

    def patch_spec(self, spec: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, "brokerpools", POOL, {"spec": spec}
        )

    def events(self) -> list[dict[str, Any]]:
        items = self.core.list_namespaced_event(NAMESPACE).items
        found = []
        for e in items:
            when = e.event_time or e.last_timestamp or e.first_timestamp
            found.append({"reason": e.reason, "message": e.message, "at": when.timestamp() if when else 0.0})
        return sorted(found, key=lambda e: float(e["at"]))

    def plan_configmap(self) -> dict[str, Any]:
        found: Any = self.core.read_namespaced_config_map(f"{POOL}-plan", NAMESPACE)
        return dict(json.loads(found.data["plan.json"]))

    def metrics(self) -> dict[str, float]:
        """plan_seconds and scoring_seconds sums and counts of the pool."""
        with urllib.request.urlopen(self.operator.metrics, timeout=10) as response:
            text = response.read().decode()
        wanted: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in (
                    "kafka_balancer_plan_seconds_sum",
                    "kafka_balancer_plan_seconds_count",
                    "kafka_balancer_scoring_seconds_sum",
                    "kafka_balancer_scoring_seconds_count",
                ):
                    wanted[sample.name] = wanted.get(sample.name, 0.0) + sample.value
        return wanted

    def pass_times(self) -> list[tuple[float, float]]:
        """Every stored collector pass, oldest first (the second pass on): its observation time (the
        file's name, ms) and when its samples were written (the file's mtime), seconds since the epoch."""
        folder = self.operator.state_dir / "samples" / f"{NAMESPACE}.{POOL}" / "partition_samples"
        if not folder.is_dir():
            return []
        found = []
        for path in folder.glob("*.parquet"):
            head = path.name.split("-", 1)[0]
            if head.isdigit():
                found.append((int(head) / 1000, path.stat().st_mtime))
        return sorted(found)

    def executions(self) -> list[dict[str, Any]]:
        """The pool's execution state files: plan id, first submit, last done, moves."""
        found = []
        for path in sorted((self.operator.state_dir / "executions").glob(f"{NAMESPACE}.{POOL}.*.json")):
            try:
                state = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            moves = state.get("moves", [])
            started = [m["startedAt"] for m in moves if m.get("startedAt")]
            done = [m["finishedAt"] for m in moves if m.get("finishedAt")]
            found.append(
                {
                    "file": path.name,
                    "moves": moves,
                    "first_submit": min(started) if started else None,
                    "last_done": max(done) if len(done) == len(moves) and done else None,
                    "throttle": state.get("throttleRate"),
                }
            )
        return found


def condition(pool: dict[str, Any], kind: str) -> dict[str, Any]:
    conditions = pool.get("status", {}).get("conditions") or []
    return dict(next((c for c in conditions if c.get("type") == kind), {}))


def broker_state(pool: dict[str, Any], broker: int) -> dict[str, Any]:
    return dict(next((b for b in pool.get("status", {}).get("brokers") or [] if b.get("id") == broker), {}))


def parse_time(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


@dataclass
class Trace:
    """What the polls saw, each with this process's clock."""

    polls: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    scrapes: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    phases: list[tuple[float, str, str]] = field(default_factory=list)  # (seen, plan, phase)

    def first(self, check: Callable[[dict[str, Any]], bool]) -> float | None:
        return next((t for t, p in self.polls if check(p)), None)


def follow(watch: Watch, done: Callable[[dict[str, Any]], bool], options: Options) -> Trace:
    trace = Trace()
    deadline = time.monotonic() + options.timeout
    while True:
        now = time.time()
        pool = watch.pool()
        trace.polls.append((now, pool))
        trace.scrapes.append((now, watch.metrics()))
        execution = pool.get("status", {}).get("execution") or {}
        key = (str(execution.get("planId")), str(execution.get("phase")))
        if execution and (not trace.phases or trace.phases[-1][1:] != key):
            trace.phases.append((now, *key))
        if done(pool):
            return trace
        if time.monotonic() > deadline:
            raise BedError(f"timed out after {options.timeout:.0f} s; last status {pool.get('status')}")
        time.sleep(options.poll)


def plan_seconds_after(trace: Trace, at: float) -> tuple[float | None, float | None]:
    """The plan_seconds of the first pass that ended after ``at`` (its own sum delta) and when it was
    scraped; None if the polls saw more than one pass end between two scrapes."""
    previous: dict[str, float] | None = None
    for when, sample in trace.scrapes:
        if previous is not None and when >= at:
            count = sample.get("kafka_balancer_plan_seconds_count", 0) - previous.get(
                "kafka_balancer_plan_seconds_count", 0
            )
            if count >= 1:
                spent = (
                    sample["kafka_balancer_plan_seconds_sum"] - previous["kafka_balancer_plan_seconds_sum"]
                )
                return (round(spent, 3) if count == 1 else None), when
        previous = sample
    return None, None


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def reconciled_times(log: Path) -> list[float]:
    """When each pass of the pool ended: its "pool ... reconciled" log line (local time, ms)."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        if f"pool {NAMESPACE}/{POOL} reconciled" in line and line.startswith("["):
            stamp = line[1 : line.index("]")]
            found.append(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp())
    return found


def bound_of(execution: dict[str, Any]) -> dict[str, Any]:
    """makespan_bound of an execution's moves (sizes as the executor recorded them) at its throttle,
    every current replica taken as in sync (the topic is fully replicated before each change)."""
    copies = [
        Copying(int(m["size"]), tuple(m["source"]), tuple(m["target"]), frozenset(m["source"]))
        for m in execution["moves"]
    ]
    bound = makespan_bound(copies, float(execution["throttle"] or DEFAULT_THROTTLE))
    return {
        "bound_s": round(bound.seconds, 2),
        "bytes_moved": sum(c.size * len(c.adding) for c in copies),
        "replica_moves": sum(len(c.adding) for c in copies),
    }


def parts(
    trace: Trace,
    watch: Watch,
    changed: float,
    acting: Callable[[list[float]], float | None],
    ended: float,
    known_files: set[str],
) -> dict[str, Any]:
    """The parts of one scenario from ``changed`` (the change done) to ``ended`` (status showed the
    end). ``acting`` picks, from the stored passes' observation times, the pass that acted on it."""
    passes = watch.pass_times()
    times = [t for t, _ in passes]
    acted = acting(times)
    if acted is None:
        return {"error": "no pass acted on the change"}
    written = dict(passes)[acted]
    reconciled = reconciled_times(watch.operator.log)
    pass_end = min((t for t in reconciled if t >= written), default=None)
    out: dict[str, Any] = {
        "detection_s": round(acted - changed, 2),
        "collection_s": round(written - acted, 2),
    }
    planning, _ = plan_seconds_after(trace, changed)
    out["planning_s"] = planning
    if pass_end is not None:
        out["pass_writes_s"] = round(pass_end - written - (planning or 0.0), 2)
    executions = [e for e in watch.executions() if e["file"] not in known_files]
    done = sorted(
        (e for e in executions if e["first_submit"] is not None and e["last_done"] is not None),
        key=lambda e: float(e["first_submit"]),
    )
    out["executions"] = len(done)
    events = [e for e in watch.events() if e["at"] >= changed - 1]
    if done:
        if pass_end is not None:
            out["to_first_move_s"] = round(done[0]["first_submit"] - pass_end, 2)
        out["execution_s"] = [round(e["last_done"] - e["first_submit"], 2) for e in done]
        out["moves"] = [len(e["moves"]) for e in done]
        bounds = [bound_of(e) for e in done]
        out["bound_s"] = [b["bound_s"] for b in bounds]
        out["bytes_moved"] = [b["bytes_moved"] for b in bounds]
        finished = [e["at"] for e in events if e["reason"] == "ExecutionFinished"]
        finish = [next((t for t in finished if t >= e["last_done"]), None) for e in done]
        out["finish_s"] = [
            round(f - e["last_done"], 2) if f else None for f, e in zip(finish, done, strict=True)
        ]
        gaps = [
            b["first_submit"] - (f or a["last_done"])
            for (a, b), f in zip(itertools.pairwise(done), finish, strict=False)
        ]
        out["warm_up_wait_s"] = round(sum(gaps), 2)
        last_end = finish[-1] or done[-1]["last_done"]
        confirming = min((t for t in times if t >= last_end), default=None)
        if confirming is not None:
            out["confirmation_wait_s"] = round(confirming - last_end, 2)
            out["confirmation_pass_s"] = round(ended - confirming, 2)
        out["confirmation_s"] = round(ended - last_end, 2)
    out["passes_during"] = sum(1 for t in times if changed <= t <= ended)
    out["passes_rel_s"] = [round(t - changed, 2) for t in times if changed - 1 <= t <= ended + 1]
    out["events_rel_s"] = [[e["reason"], round(e["at"] - changed, 2)] for e in events]
    return out


def scale_out(kafka: KafkaBed, watch: Watch, options: Options, run: int) -> dict[str, Any]:
    stagger = random.Random(run).uniform(0, options.detection_interval) if options.stagger else 0.0
    time.sleep(stagger)
    known = {e["file"] for e in watch.executions()}
    load_before, cpu_op, cpu_me = os.getloadavg()[0], watch.operator.cpu_seconds(), cpu_self()
    scoring_before = watch.metrics()
    asked = time.time()
    new = kafka.add_broker("a")
    registered = time.time()

    def finished(pool: dict[str, Any]) -> bool:
        return (
            broker_state(pool, new).get("state") == "Active"
            and condition(pool, "Balanced").get("status") == "True"
        )

    trace = follow(watch, finished, options)
    ended = trace.polls[-1][0]
    first_seen = next(
        parse_time(s["firstSeen"]) for _, p in trace.polls if "firstSeen" in (s := broker_state(p, new))
    )

    def acting(times: list[float]) -> float | None:
        # The pass whose `now` (firstSeen, whole seconds) first showed the broker.
        return max((t for t in times if t <= first_seen + 1.0), default=None)

    result = {
        "scenario": "scale-out",
        "run": run,
        "broker": new,
        "stagger_s": round(stagger, 2),
        "register_s": round(registered - asked, 2),
        "total_s": round(ended - registered, 2),
        **parts(trace, watch, registered, acting, ended, known),
    }
    return finish_line(result, watch, load_before, cpu_op, cpu_me, scoring_before)


def drain(kafka: KafkaBed, watch: Watch, options: Options, run: int, drained: list[int]) -> dict[str, Any]:
    broker = max(kafka.racks)
    known = {e["file"] for e in watch.executions()}
    load_before, cpu_op, cpu_me = os.getloadavg()[0], watch.operator.cpu_seconds(), cpu_self()
    scoring_before = watch.metrics()
    asked = time.time()
    watch.patch_spec({"drain": [*drained, broker]})

    def finished(pool: dict[str, Any]) -> bool:
        return broker_state(pool, broker).get("state") == "Drained"

    def acting(times: list[float]) -> float | None:
        # The spec change wakes the daemon: the first pass observed after the patch acts on it.
        return min((t for t in times if t >= asked), default=None)

    trace = follow(watch, finished, options)
    ended = trace.polls[-1][0]
    result = {
        "scenario": "drain",
        "run": run,
        "broker": broker,
        "total_s": round(ended - asked, 2),
        **parts(trace, watch, asked, acting, ended, known),
    }
    finish_line(result, watch, load_before, cpu_op, cpu_me, scoring_before)
    drained.append(broker)
    kafka.stop_broker(broker)
    return result


def finish_line(
    result: dict[str, Any], watch: Watch, load: float, cpu_op: float, cpu_me: float, before: dict[str, float]
) -> dict[str, Any]:
    after = watch.metrics()
    result["scoring_runs"] = after.get("kafka_balancer_scoring_seconds_count", 0) - before.get(
        "kafka_balancer_scoring_seconds_count", 0
    )
    result["scoring_s"] = round(
        after.get("kafka_balancer_scoring_seconds_sum", 0)
        - before.get("kafka_balancer_scoring_seconds_sum", 0),
        2,
    )
    result["operator_cpu_s"] = round(watch.operator.cpu_seconds() - cpu_op, 2)
    result["bench_cpu_s"] = round(cpu_self() - cpu_me, 2)
    result["loadavg_1m_before_after"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return result


SUMMED = (
    "total_s", "detection_s", "collection_s", "planning_s", "pass_writes_s", "to_first_move_s",
    "warm_up_wait_s", "confirmation_wait_s", "confirmation_pass_s", "confirmation_s",
)  # fmt: skip


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for scenario in ("scale-out", "drain"):
        rows = [r for r in results if r["scenario"] == scenario]
        if not rows:
            continue
        medians: dict[str, Any] = {"runs": len(rows)}
        for key in (*SUMMED, "execution_s", "bound_s", "finish_s"):
            values = [
                sum(v for v in r[key] if v is not None) if isinstance(r.get(key), list) else r.get(key)
                for r in rows
            ]
            numbers = [float(v) for v in values if v is not None]
            if numbers:
                medians[key] = round(statistics.median(numbers), 2)
        out[scenario] = medians
    return out


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    libs = provisioned_directory("kafka/provision.sh")
    binaries = kube.provision()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ttb-") as tmp:
        work = Path(tmp)
        kafka = KafkaBed(libs, work / "kafka", brokers=3, racks=3)
        kube_bed = kube.KubeBed(binaries, work / "kube")
        operator = Operator(kube_bed, work / "operator")
        writer: Writer | None = None
        try:
            kafka.start()
            kube_bed.start()
            install(kube_bed)
            operator.start()
            create_and_fill(kafka, options.partition_mb)
            writer = Writer(kafka, options.produce_rate)
            writer.start()
            watch = Watch(kube_bed, operator)
            apply_pool(kube_bed, kafka, options)
            began = time.time()
            wait_until(
                lambda: (
                    condition(watch.pool(), "Balanced").get("status") == "True"
                    and len(watch.pass_times()) >= options.settle_passes
                ),
                timeout_s=options.timeout,
                what="the 3-broker pool Balanced after its first passes",
                interval_s=1.0,
            )
            print(json.dumps({"bed": kafka.bootstrap_servers, "options": str(options),
                              "balanced_after_s": round(time.time() - began, 1)}), flush=True)  # fmt: skip
            drained: list[int] = []
            for run in range(1, options.runs + 1):
                wait_until(
                    lambda: condition(watch.pool(), "Balanced").get("status") == "True",
                    timeout_s=options.timeout,
                    what="the pool Balanced before the run",
                    interval_s=1.0,
                )
                results.append(scale_out(kafka, watch, options, run))
                print(json.dumps(results[-1]), flush=True)
                results.append(drain(kafka, watch, options, run, drained))
                print(json.dumps(results[-1]), flush=True)
        finally:
            if writer is not None:
                writer.stopping.set()
                writer.join(timeout=60)
            operator.stop()
            if options.keep is not None:
                options.keep.mkdir(parents=True, exist_ok=True)
                subprocess.run(["cp", "-r", str(work / "operator"), str(options.keep)], check=False)
            kube_bed.stop()
            kafka.stop()
    print(json.dumps({"summary": summary(results)}), flush=True)


if __name__ == "__main__":
    main()
