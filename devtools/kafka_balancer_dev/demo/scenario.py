"""``kafka-balancer demo``: the whole product on this machine, start to finish, then everything stopped.

Local Kafka (4 brokers, racks a, b, c, a) and a kube-apiserver from ``hack/``, the operator as a
child process (scoring with embedded Spark on a short window), a topic whose partitions all sit on
brokers 1 and 2 with a producer writing throughout; the pool (Auto mode) balances it, a fifth broker
joins and warms up, broker 4 is drained into its rack and stopped, the first plan is drawn against
the cluster before it, and every message is read back.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from confluent_kafka import cimpl
from confluent_kafka.admin import AdminClient

from kafka_balancer.kafka.client_log import clients_logging_to, log_handler, served, with_client_log
from kafka_balancer_dev.checkout import repo_root
from kafka_balancer_dev.demo import view
from kafka_balancer_dev.demo.traffic import Traffic, read_back
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.ports import answers_ok, free_ports

NAMESPACE, POOL, TOPIC, PEERING = "demo", "main", "orders", "kafka-balancer-demo"
# The Kafka clients' own log lines (librdkafka's), of the demo and of the commands it runs: kept off
# the terminal, where they would break into the story (a stopped broker makes every client complain).
KAFKA_CLIENTS_LOG = "kafka-clients.log"
PARTITIONS = 12
REFRESH_S = 3.0
# Embedded Spark scores the pool once 30 s of samples exist, then every minute (production: 5 min).
SCORING_ENV = {
    **os.environ,
    "KAFKA_BALANCER_SCORING_WINDOW_MS": "30000",
    "KAFKA_BALANCER_SCORING_WINDOWS": "1",
    "KAFKA_BALANCER_SCORING_INTERVAL_SECONDS": "60",
}
GOALS = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancerGoal
metadata: {name: rack-aware}
spec: {type: RackAware, poolRef: {name: main}}
---
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancerGoal
metadata: {name: replica-distribution}
spec: {type: ReplicaDistribution, rangePercent: 10, poolRef: {name: main}}
"""


@dataclass(frozen=True)
class DemoOptions:
    work_dir: Path
    fast: bool = False  # a shorter warm-up, for CI

    @property
    def warm_up(self) -> tuple[str, int]:
        return ("60s", 3) if self.fast else ("2m", 4)


class Demo:
    def __init__(self, options: DemoOptions, say: Callable[[str], None] = print) -> None:
        self.options = options
        self.work = options.work_dir.resolve()
        self.say = say
        self.kafka: KafkaBed | None = None
        self.kube: kube.KubeBed | None = None
        self.operator: subprocess.Popen[bytes] | None = None
        self.traffic: Traffic | None = None
        self.interrupted = False

    # -- the story ---------------------------------------------------------------------------------

    def run(self) -> None:
        """Everything, then stop everything it started (also on Ctrl-C and SIGTERM)."""
        previous = {sig: signal.signal(sig, self._interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._start_beds()
            self._start_operator()
            kafka_bed, kube_bed = self._beds()
            self._skewed_topic(kafka_bed)
            self.traffic = Traffic(kafka_bed.bootstrap_servers, TOPIC)
            self.traffic.write(5_000)
            self.traffic.start()
            self.say("a producer writes to 'orders' throughout; every message is checked at the end")
            before = self._snapshot(kafka_bed)
            self._apply_pool(kube_bed, kafka_bed)
            plan = self._balance(kube_bed, kafka_bed)
            self._scale_up(kube_bed, kafka_bed)
            self._scale_down(kube_bed, kafka_bed)
            self._report(before, plan)
            self._check_messages(kafka_bed)
            self.say(f"done: everything the demo started is stopped now; files in {self.work}")
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stop()

    def _interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        # Remembered: a library may turn the KeyboardInterrupt into its own error on the way up.
        self.interrupted = True
        raise KeyboardInterrupt

    def _start_beds(self) -> None:
        for stale in ("kafka", "kube", "operator"):
            shutil.rmtree(self.work / stale, ignore_errors=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.say("provisioning Kafka jars and Kubernetes binaries (cached after the first run)")
        libs = _kafka_libs()
        binaries = kube.provision()
        self.kafka = KafkaBed(libs, self.work / "kafka", brokers=4, racks=3)
        self.kafka.start()
        self._record_pids()
        self.say(f"Kafka up: brokers (id:rack) {_racks(self.kafka)} at {self.kafka.bootstrap_servers}")
        self.kube = kube.KubeBed(binaries, self.work / "kube")
        self.kube.start()
        self._record_pids()
        self.say(f"kube-apiserver up at {self.kube.server}; kubeconfig {self.kube.kubeconfig}")
        # Ours from crds/, kopf's peering CRDs from the chart's.
        ours, kopfs = repo_root() / "crds", repo_root() / "charts" / "kafka-balancer" / "crds"
        _ok(self.kube.kubectl("apply", "--server-side", "-f", str(ours), "-f", str(kopfs)))
        for crd in (
            "brokerpools.kafkabalancer.io",
            "balancergoals.kafkabalancer.io",
            "clusterkopfpeerings.kopf.dev",
        ):
            kube.wait_established(self.kube, crd)
        peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": PEERING}}
        _ok(self.kube.kubectl("apply", "-f", "-", stdin=json.dumps(peering)))
        _ok(self.kube.kubectl("create", "namespace", NAMESPACE))

    def _start_operator(self) -> None:
        _, kube_bed = self._beds()
        (port,) = free_ports(1)
        liveness = f"http://127.0.0.1:{port}/healthz"
        log = self.work / "operator" / "operator.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable, "-m", "kafka_balancer.cli", "run", "--kubeconfig", str(kube_bed.kubeconfig),
            "--peering", PEERING, "--state-dir", str(self.work / "operator" / "state"),
            "--liveness", liveness,
        ]  # fmt: skip
        with log.open("ab") as out:
            self.operator = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=SCORING_ENV)
        self._record_pids()
        operator = self.operator
        _wait(lambda: operator.poll() is not None or answers_ok(liveness), 90)
        if operator.poll() is not None:
            raise BedError(f"the operator exited with {operator.returncode}; see {log}")
        self.say(f"operator started (pid {operator.pid}); its log: {log}")
        self.say(f"the Kafka clients' own log lines (librdkafka's) go to {self.work / KAFKA_CLIENTS_LOG}")

    def _skewed_topic(self, bed: KafkaBed) -> None:
        assignment = [[1, 2] if p % 2 else [2, 1] for p in range(PARTITIONS)]
        admin = AdminClient(with_client_log({"bootstrap.servers": bed.bootstrap_servers}))
        new = cimpl.NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment)
        admin.create_topics([new], operation_timeout=30)[TOPIC].result(timeout=60)
        _wait(lambda: sum(view.replica_counts(bed.bootstrap_servers, TOPIC).values()) == 2 * PARTITIONS, 30)
        self.say(
            f"topic '{TOPIC}': {PARTITIONS} partitions x 2 replicas, all on brokers 1 and 2 (3 and 4 empty)"
        )

    def _snapshot(self, bed: KafkaBed) -> Path:
        path = self.work / "before.json"
        self.say("sampling the cluster for 10 s (the 'before' of the report)")
        _cli(
            "snapshot", "--bootstrap-server", bed.bootstrap_servers, "--window", "10s", "--interval", "5s",
            "--disk-capacity", "107374182400", "--network-capacity", "100000000", "--cpu-capacity", "4",
            "--output", str(path), "--kafka-log", str(self.work / KAFKA_CLIENTS_LOG),
        )  # fmt: skip
        return path

    def _apply_pool(self, kube_bed: kube.KubeBed, bed: KafkaBed) -> None:
        duration, steps = self.options.warm_up
        pool = {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BrokerPool",
            "metadata": {"name": POOL, "namespace": NAMESPACE},
            "spec": {
                "mode": "Auto",
                "detectionIntervalSeconds": 10,
                "kafka": {"bootstrapServers": bed.bootstrap_servers},
                "capacity": {"disk": "100Gi", "networkIn": "100M", "networkOut": "100M", "cpu": 4},
                "warmUp": {"duration": duration, "steps": steps},
                "execution": {"throttleBytesPerSecond": "10Mi", "maxMovesPerBroker": 2, "maxMoves": 4},
            },
        }
        goals = self.work / "goals.yaml"
        goals.write_text(GOALS)
        _ok(kube_bed.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(pool)))
        _ok(kube_bed.kubectl("apply", "-n", NAMESPACE, "-f", str(goals)))
        self.say(
            f"applied BrokerPool '{POOL}' (mode Auto, warm-up {duration} in {steps} steps) and its goals"
        )

    def _balance(self, kube_bed: kube.KubeBed, bed: KafkaBed) -> Path:
        self.say("== balancing the skewed topic")

        def executing() -> str | None:
            pool = view.read(kube_bed, NAMESPACE, "bp", POOL)
            planned = pool.get("status", {}).get("execution", {}).get("planId")
            return str(planned) if planned else None

        first = self._watch(kube_bed, bed, executing, 300)
        path = self.work / "plan.json"
        data = view.read(kube_bed, NAMESPACE, "configmap", f"{POOL}-plan").get("data", {})
        if data.get("plan.id") == first and "plan.json" in data:
            path.write_text(data["plan.json"])
        self._watch(kube_bed, bed, lambda: self._balanced(kube_bed), 300)
        self.say("balanced")
        return path

    def _scale_up(self, kube_bed: kube.KubeBed, bed: KafkaBed) -> None:
        self.say("== scale-up: a fifth broker joins rack b and warms up step by step")
        new = bed.add_broker("b")
        self._record_pids()

        def warm() -> bool:
            brokers = view.read(kube_bed, NAMESPACE, "bp", POOL).get("status", {}).get("brokers", [])
            state = next((b.get("state") for b in brokers if int(b["id"]) == new), None)
            return state == "Active" and self._balanced(kube_bed)

        self._watch(kube_bed, bed, warm, 600)
        self.say(f"broker {new} is fully warm and the pool is balanced")

    def _scale_down(self, kube_bed: kube.KubeBed, bed: KafkaBed) -> None:
        self.say("== scale-down: broker 4 (rack a) is drained; its replicas land on broker 1, its rack peer")
        holding = {p for p, r in _assignment(bed).items() if 4 in r}
        patch = json.dumps({"spec": {"drain": [4]}})
        _ok(kube_bed.kubectl("patch", "bp", POOL, "-n", NAMESPACE, "--type", "merge", "-p", patch))

        def drained() -> bool:
            brokers = view.read(kube_bed, NAMESPACE, "bp", POOL).get("status", {}).get("brokers", [])
            return any(int(b["id"]) == 4 and b.get("state") == "Drained" for b in brokers)

        self._watch(kube_bed, bed, drained, 300)
        after = _assignment(bed)
        for partition in sorted(holding):
            self.say(f"  {TOPIC}-{partition}: now on {after[partition]}")
        bed.stop_broker(4)
        self._record_pids()
        self.say("broker 4 is Drained and stopped; no partition lost a replica")

    def _report(self, before: Path, plan: Path) -> None:
        if not plan.exists():
            self.say("the first plan was replaced before it could be saved; no picture")
            return
        picture = self.work / "report.png"
        self.say("== the first plan, against the cluster before it")
        table = _cli(
            "report", "--snapshot", str(before), "--plan", str(plan),
            "--goals", str(self.work / "goals.yaml"), "--output", str(picture),
        )  # fmt: skip
        self.say(table.rstrip())
        self.say(f"picture: {picture}")

    def _check_messages(self, bed: KafkaBed) -> None:
        assert self.traffic is not None
        written = self.traffic.stop()
        sent = self.traffic.sent
        self.traffic = None
        got = read_back(bed.bootstrap_servers, TOPIC, sent)
        if got != written:
            differ = sorted(
                key for key in written[0].keys() | got[0].keys() if written[0][key] != got[0][key]
            )
            altered = sorted(
                key for key in written[1] if written[1][key] != got[1].get(key) and key not in differ
            )
            raise BedError(
                f"messages lost or altered: {sent} written, {sum(got[0].values())} read back; keys whose "
                f"counts differ: {differ[:5] or 'none'}, whose contents differ: {altered[:5] or 'none'}"
            )
        self.say(f"no message lost: all {sent} messages read back, per-key counts and SHA-256 equal")

    # -- plumbing ----------------------------------------------------------------------------------

    def _watch(self, kube_bed: kube.KubeBed, bed: KafkaBed, done: Callable[[], Any], timeout_s: float) -> Any:
        """Show the pool's progress until ``done()`` is truthy; its value."""
        deadline = time.monotonic() + timeout_s
        shown = ""
        while True:
            result = done()
            if result:
                return result
            line = view.status_line(
                view.read(kube_bed, NAMESPACE, "bp", POOL),
                view.replica_counts(bed.bootstrap_servers, TOPIC),
            )
            if line != shown:
                self.say(f"  {line}")
                shown = line
            if time.monotonic() > deadline:
                raise BedError(
                    f"the demo waited {timeout_s:.0f}s in vain; the operator's log is in {self.work}"
                )
            time.sleep(REFRESH_S)

    def _balanced(self, kube_bed: kube.KubeBed) -> bool:
        pool = view.read(kube_bed, NAMESPACE, "bp", POOL)
        return view.condition(pool, "Balanced").get("status") == "True"

    def _beds(self) -> tuple[KafkaBed, kube.KubeBed]:
        assert self.kafka is not None and self.kube is not None
        return self.kafka, self.kube

    def _record_pids(self) -> None:
        pids = {**(self.kafka.pids() if self.kafka else {}), **(self.kube.pids() if self.kube else {})}
        if self.operator is not None:
            pids["operator"] = self.operator.pid
        (self.work / "pids.json").write_text(json.dumps(pids, indent=1))

    def stop(self) -> None:
        """Stop the traffic, the operator, then both beds, each by PID; safe to call twice."""
        if self.traffic is not None:
            # Shutting down: undelivered messages no longer matter.
            with contextlib.suppress(BedError):
                self.traffic.stop()
            self.traffic = None
        if self.operator is not None and self.operator.poll() is None:
            self.operator.terminate()
            try:
                self.operator.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.operator.kill()
                self.operator.wait(timeout=10)
        if self.kube is not None:
            self.kube.stop()
        if self.kafka is not None:
            self.kafka.stop()


def run(options: DemoOptions) -> int:
    """``kafka-balancer demo``, printing as it goes: 0 when the story ran to its end, 1 when something
    failed (said in one line), 130 when interrupted; everything it started is stopped in every case."""
    demo = Demo(options, say=lambda line: print(line, flush=True))
    try:
        with clients_logging_to(log_handler(demo.work / KAFKA_CLIENTS_LOG)):
            demo.run()
    except BaseException as err:
        if demo.interrupted:
            print("interrupted: everything the demo started is stopped", file=sys.stderr, flush=True)
            return 130
        if not isinstance(err, BedError):
            raise
        print(f"kafka-balancer demo: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


def _kafka_libs() -> Path:
    script = repo_root() / "hack" / "kafka" / "provision.sh"
    done = subprocess.run([str(script)], stdout=subprocess.PIPE, text=True, timeout=900, check=False)
    if done.returncode != 0:
        raise BedError(f"{script} failed with exit code {done.returncode} (its messages are above)")
    return Path(done.stdout.strip().splitlines()[-1])


def _racks(bed: KafkaBed) -> str:
    return ", ".join(f"{broker}:{rack}" for broker, rack in sorted(bed.racks.items()))


def _assignment(bed: KafkaBed) -> dict[int, list[int]]:
    admin = AdminClient(with_client_log({"bootstrap.servers": bed.bootstrap_servers}))
    meta = served(admin).list_topics(topic=TOPIC, timeout=10)
    served(admin)  # what the call logged, before the client goes
    return {p: list(m.replicas) for p, m in meta.topics[TOPIC].partitions.items()}


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_balancer.cli", *args], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise BedError(f"kafka-balancer {args[0]} failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        raise BedError(f"kubectl failed: {done.stderr.strip()}")


def _wait(check: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise BedError(f"the demo's set-up did not come up within {timeout_s:.0f}s")
        time.sleep(0.5)
