"""The node tier's shared objects: the chart installed once with the image built here, and a Kafka bed
that pods reach on the node's bridge."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.kafka_config import new_cluster_id
from kafka_balancer_dev.localbed.kafka_statefulset import KafkaPods
from tests.e2e.conftest import wait_for
from tests.e2e.objects import apply, goal, pool
from tests.e2e.test_lifecycle import BALANCE_TIMEOUT_S, SLOW, half_done
from tests.node.kafka_statefulset import KafkaStatefulSet

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
OPERATOR_NAMESPACE = "kafka-balancer"
RELEASE = "kb"
# Goals of the pools that test executions: the spread of the pool's own topic and rack awareness.
# The pods' Kafka bed is shared by the tier, so a replica count over all topics would also measure
# other tests' topics and __consumer_offsets, which the pools may not move.
OWN_TOPIC_GOALS = (
    ("spread", {"type": "TopicReplicaDistribution", "rangePercent": 10}),
    ("racks", {"type": "RackAware"}),
)


def kubectl_json(bed: node.NodeBed, *args: str) -> dict[str, Any]:
    """``kubectl <args> -o json`` on the node's apiserver, parsed."""
    done = bed.kubectl(*args, "-o", "json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.fixture(scope="session")
def operator_release(node_bed: node.NodeBed) -> float:
    """``helm install`` of the chart with its default values (its default image is the one
    hack/image/build.sh builds) but clusterWide, as the tests' pools are in namespaces of their own;
    returns the seconds from install to a Ready operator."""
    started = time.monotonic()
    installed = node_bed.helm(
        "install",
        RELEASE,
        str(CHART),
        "-n",
        OPERATOR_NAMESPACE,
        "--create-namespace",
        "--set",
        "clusterWide=true",
        "--wait",
        "--timeout",
        "5m",
    )
    ready_after_s = time.monotonic() - started
    assert installed.returncode == 0, installed.stderr
    return ready_after_s


@pytest.fixture(scope="session")
def pod_kafka(
    node_bed: node.NodeBed, kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBed]:
    """4 brokers in racks a, b, c, a that also listen on the node's address, where pods connect."""
    bed = KafkaBed(kafka_libs, tmp_path_factory.mktemp("pod-kafka"), pod_host=node.NODE_IP)
    try:
        bed.start()
    except BedError as err:
        pytest.fail(f"the Kafka bed for pods did not start: {err}", pytrace=False)
    try:
        yield bed
    finally:
        bed.stop()


SELECTOR = "app.kubernetes.io/name=kafka-balancer"
# Kubelet's liveness probe (period 20 s, 3 failures) plus the 30 s grace of a hung process, a restart
# and the readiness probe, with room for a loaded machine.
RESTART_TIMEOUT_S = 300.0


class OperatorPods:
    """The chart's operator pods; ``tail`` shows their logs when a wait times out."""

    def __init__(self, bed: node.NodeBed) -> None:
        self.bed = bed

    def live(self) -> list[dict[str, Any]]:
        """The pods not being deleted, oldest first."""
        found = kubectl_json(self.bed, "get", "pods", "-n", OPERATOR_NAMESPACE, "-l", SELECTOR)["items"]
        pods = [p for p in found if "deletionTimestamp" not in p["metadata"]]
        return sorted(pods, key=lambda p: str(p["metadata"]["creationTimestamp"]))

    def ready(self, count: int) -> list[dict[str, Any]] | None:
        pods = self.live()
        statuses = [p["status"].get("containerStatuses", [{}])[0] for p in pods]
        return pods if len(pods) == count and all(s.get("ready") for s in statuses) else None

    def log(self, name: str) -> str:
        shown = self.bed.kubectl("logs", "-n", OPERATOR_NAMESPACE, name)
        return shown.stdout if shown.returncode == 0 else ""

    def tail(self, lines: int = 40) -> str:
        shown = self.bed.kubectl(
            "logs", "-n", OPERATOR_NAMESPACE, "-l", SELECTOR, "--prefix", f"--tail={lines}"
        )
        return shown.stdout + shown.stderr


@pytest.fixture
def pods(node_bed: node.NodeBed, operator_release: float) -> OperatorPods:
    return OperatorPods(node_bed)


@contextmanager
def namespace_of(bed: node.NodeBed, name: str) -> Iterator[str]:
    """A namespace for a test's pools; they are deleted at the end, so the operator forgets them."""
    created = bed.kubectl("create", "namespace", name)
    assert created.returncode == 0, created.stderr
    try:
        yield name
    finally:
        bed.kubectl("delete", "bp", "--all", "-n", name, "--timeout=180s", timeout_s=200.0)


def container_pids(container_id: str) -> list[int]:
    """The host PIDs of a container's processes, found by the container's id in their cgroup."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cgroups = (entry / "cgroup").read_text()
        except OSError:  # exited meanwhile
            continue
        if container_id in cgroups:
            found.append(int(entry.name))
    return found


class KeptLogs:
    """Operator pods' container logs, hard-linked from kubelet's pod log directory: a deleted pod's
    log stays readable, whole, after kubelet removed its directory (no API stream that may end)."""

    def __init__(self, bed: node.NodeBed, directory: Path) -> None:
        self.bed = bed
        self.directory = directory

    def keep(self, name: str) -> None:
        uid = kubectl_json(self.bed, "get", "pod", name, "-n", OPERATOR_NAMESPACE)["metadata"]["uid"]
        written = self.bed.pod_logs / f"{OPERATOR_NAMESPACE}_{name}_{uid}" / "operator" / "0.log"
        os.link(written, self.directory / f"{name}.log")

    def text(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(errors="replace")


@pytest.fixture
def kept_logs(node_bed: node.NodeBed, tmp_path: Path) -> KeptLogs:
    return KeptLogs(node_bed, tmp_path)


def upgrade(bed: node.NodeBed, **values: int | str) -> None:
    """``helm upgrade`` of the release with its values and ``values`` set over them; waits for the rollout."""
    settings = [item for key, value in values.items() for item in ("--set", f"{key}={value}")]
    upgraded = bed.helm(
        "upgrade",
        RELEASE,
        str(CHART),
        "-n",
        OPERATOR_NAMESPACE,
        "--reuse-values",
        *settings,
        "--wait",
        "--timeout",
        "5m",
    )
    assert upgraded.returncode == 0, upgraded.stderr


def apply_pool(
    bed: node.NodeBed, kafka: KafkaBed, namespace: str, topic: str, **execution: str | int
) -> None:
    """An Auto pool ``main`` of ``topic`` on the pods' Kafka, executing slowly (SLOW, then ``execution``)."""
    apply(
        bed.api,
        namespace,
        pool("main", kafka.pod_bootstrap_servers, "Auto", topic, execution={**SLOW, **execution}),
        *(goal(name, "main", **g) for name, g in OWN_TOPIC_GOALS),
    )


def half_done_pool(
    bed: node.NodeBed, pods: OperatorPods, kafka: KafkaBed, namespace: str, topic: str
) -> dict[str, Any]:
    """Apply the pool; return its plan status once some moves are done and others are copying.

    At half SLOW's rate: each of the ≈ 2 MB moves copies for seconds, one at a time, so a poll that
    itself takes seconds under load still lands between the first move done and the last one."""
    apply_pool(bed, kafka, namespace, topic, throttleBytesPerSecond="256Ki")
    plan: dict[str, Any] = wait_for(
        half_done(bed.api, kafka, namespace, topic), BALANCE_TIMEOUT_S, "moves in flight", pods
    )
    return plan


@pytest.fixture(scope="session")
def kafka_image() -> node.LocalImage:
    """The Kafka image, built as the operator's (cached by the hash of its inputs)."""
    try:
        return node.build_kafka_image()
    except BedError as err:
        pytest.fail(f"the Kafka image could not be built: {err}", pytrace=False)


@pytest.fixture(scope="session")
def kafka_statefulset(
    node_bed: node.NodeBed, kafka_image: node.LocalImage, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaStatefulSet]:
    """One KRaft controller and a broker StatefulSet ``kafka`` of 4 (ids 100-103, racks a, b, c, a) in
    namespace ``kafka``, shared by the tier: tests that scale it up scale it back to 4."""
    started = time.monotonic()
    node_bed.load_image(kafka_image.archive)
    loaded = time.monotonic()
    spec = KafkaPods(namespace="kafka", image=kafka_image.name, cluster_id=new_cluster_id())
    pods = KafkaStatefulSet(node_bed, spec, tmp_path_factory.mktemp("kafka-volumes"))
    try:
        pods.start()
    except BedError as err:
        pods.stop()
        pytest.fail(f"Kafka's StatefulSet did not start: {err}", pytrace=False)
    print(
        f"Kafka image loaded: {loaded - started:.1f}s; "
        f"{spec.brokers} brokers registered: {time.monotonic() - loaded:.1f}s later"
    )
    try:
        yield pods
    finally:
        pods.stop()
