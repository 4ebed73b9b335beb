"""Scoring as users run it on Kubernetes: a pool with ``scoring.engine: SparkOnKubernetes`` is scored by
Spark's own Kubernetes scheduler, the in-cluster operator running ``spark-submit``, the job in a driver
pod and an executor pod of the operator image, samples and outputs on a PersistentVolume the operator
and the Spark pods share, or in a MinIO the pods reach on the node's bridge. The release is upgraded
for it once for the module (and back to the chart's defaults at its end); the failure and object-store
tests upgrade it again, each from the chart's defaults with its own storage or Spark settings."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
import yaml

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.minio import MinioBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import apply, condition, get, pool
from tests.support.kafka_checks import create_topic

from .conftest import CHART, OPERATOR_NAMESPACE, RELEASE, RESTART_TIMEOUT_S, OperatorPods, kubectl_json

CLAIM = "kb-scoring"
DRIVERS = "kafkabalancer.io/pool=main,spark-role=driver"
EXECUTORS = "kafkabalancer.io/pool=main,spark-role=executor"
# A run: spark-submit's JVM, the driver's and the executor's JVMs, on 2 shared cores.
SCORED_TIMEOUT_S = 600.0
SPARK_VALUES = {
    "scoring.sparkSubmit.enabled": "true",
    "scoring.volume.claimName": CLAIM,
    # A run every 120 s on 10 s windows: the first one starts 10 s after the pool's second pass, and
    # its loads are used while their newest sample is under 260 s old (a slow run on a busy node).
    "scoring.intervalSeconds": "120",
    "scoring.windowSeconds": "10",
    "scoring.windows": "1",
}
# A driver the kubelet kills for memory: its whole heap is touched at start (-Xms as large as Spark's
# -Xmx, pre-touched) in a pod whose limit Spark makes 1 MiB above the heap (an explicit overhead goes
# over Spark's 384 MiB minimum). The pool's own scoring.resources cannot do it: Spark refuses a heap
# under 450 MiB before the JVM grows, and adds at least 384 MiB to whatever the pool asks.
OOM_CONF = {
    "spark.driver.memoryOverhead": "1m",
    "spark.driver.extraJavaOptions": "-Xms512m -XX:+AlwaysPreTouch",
}
# Executors the kubelet kills for memory the same way, while the driver runs: Spark replaces a failed
# executor and gives up once spark.executor.maxNumFailures have failed (3 with one executor).
EXECUTOR_OOM_CONF = {
    "spark.executor.memoryOverhead": "1m",
    "spark.executor.extraJavaOptions": "-Xms512m -XX:+AlwaysPreTouch",
}
STORAGE_SECRET = "kb-scoring-storage"


def chart_spark_conf(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` as values of the chart's ``scoring.sparkConf`` (helm's --set splits keys on dots)."""
    return {"scoring.sparkConf." + key.replace(".", "\\."): value for key, value in conf.items()}


def upgrade(bed: node.NodeBed, values: dict[str, str]) -> None:
    """The release with the chart's defaults and ``values`` (as installed, then ``values``): no earlier
    test's settings are left over."""
    values = {"clusterWide": "true", **values}  # as installed (conftest.operator_release)
    settings = [item for key, value in values.items() for item in ("--set", f"{key}={value}")]
    upgraded = bed.helm(
        "upgrade", RELEASE, str(CHART), "-n", OPERATOR_NAMESPACE, "--reset-values", *settings,
        "--wait", "--timeout", "5m",
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr


def shared_volume(path: Path) -> str:
    """A hostPath PersistentVolume and its claim in the operator's namespace (one node: both mount it)."""
    return yaml.safe_dump_all(
        [
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{CLAIM}-node"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "hostPath": {"path": str(path), "type": "Directory"},
                },
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": CLAIM, "namespace": OPERATOR_NAMESPACE},
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "",
                    "volumeName": f"{CLAIM}-node",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        ]
    )


@pytest.fixture(scope="module")
def spark_release(node_bed: node.NodeBed, operator_release: float) -> Iterator[Path]:
    """The release with spark-submit scoring on a shared volume; returns the volume's directory."""
    # Not under pytest's 0700 temporary directories: the pods' user (65532) must reach it.
    storage = Path(f"/tmp/kb-node-spark-{time.time_ns()}")
    storage.mkdir(mode=0o777)
    storage.chmod(0o777)
    created = node_bed.kubectl("apply", "-f", "-", stdin=shared_volume(storage))
    assert created.returncode == 0, created.stderr
    upgrade(node_bed, SPARK_VALUES)
    try:
        yield storage
    finally:
        node_bed.kubectl(
            "delete", "bp", "main", "-n", OPERATOR_NAMESPACE, "--ignore-not-found", timeout_s=200.0
        )
        upgrade(node_bed, {})
        node_bed.kubectl("delete", "pvc", CLAIM, "-n", OPERATOR_NAMESPACE, "--wait=false")
        node_bed.kubectl("delete", "pv", f"{CLAIM}-node", "--wait=false")
        shutil.rmtree(storage, ignore_errors=True)


def spark_pool(kafka: KafkaBed, topic: str, image: str) -> dict[str, Any]:
    # 250m per Spark pod: the driver and the executor fit beside the operator on the node's 2 cores.
    scoring = {
        "engine": "SparkOnKubernetes",
        "image": image,
        "executors": 1,
        "resources": {"cpu": "250m", "memory": "512Mi"},
    }
    return pool("main", kafka.pod_bootstrap_servers, "DryRun", topic, scoring=scoring)


def operator_image(bed: node.NodeBed) -> str:
    deployment = kubectl_json(
        bed, "get", "deployment", "-n", OPERATOR_NAMESPACE, "-l", "app.kubernetes.io/name=kafka-balancer"
    )
    image: str = deployment["items"][0]["spec"]["template"]["spec"]["containers"][0]["image"]
    return image


class SparkPods:
    """Every driver and executor pod of the pool seen while polling, by uid (pods are deleted once
    read: the last document seen of each is kept)."""

    def __init__(self, bed: node.NodeBed) -> None:
        self.bed = bed
        self.seen: dict[str, dict[str, Any]] = {}

    def look(self) -> list[dict[str, Any]]:
        found = []
        for selector in (DRIVERS, EXECUTORS):
            found += kubectl_json(self.bed, "get", "pods", "-n", OPERATOR_NAMESPACE, "-l", selector)["items"]
        for pod in found:
            self.seen[pod["metadata"]["uid"]] = pod
        return found

    def drivers(self, run: str | None = None) -> list[dict[str, Any]]:
        return [
            p
            for p in self.seen.values()
            if p["metadata"]["labels"].get("spark-role") == "driver"
            and run in (None, p["metadata"]["labels"]["kafkabalancer.io/scoring-run"])
        ]

    def executors(self) -> list[dict[str, Any]]:
        return [p for p in self.seen.values() if p["metadata"]["labels"].get("spark-role") == "executor"]


def loads_scored(bed: node.NodeBed, spark: SparkPods) -> dict[str, Any] | None:
    spark.look()
    found = condition(get(bed.api, OPERATOR_NAMESPACE, "bp", "main"), "LoadsScored")
    return found if found.get("status") == "True" else None


def _at(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _started(pod: dict[str, Any]) -> float | None:
    for status in pod["status"].get("containerStatuses") or []:
        state = status.get("state", {})
        running = state.get("running") or state.get("terminated")
        if running and running.get("startedAt"):
            return _at(running["startedAt"])
    return None


def _finished(pod: dict[str, Any]) -> float | None:
    for status in pod["status"].get("containerStatuses") or []:
        terminated = status.get("state", {}).get("terminated")
        if terminated and terminated.get("finishedAt"):
            return _at(terminated["finishedAt"])
    return None


def _loads_written(bed: node.NodeBed) -> str:
    return str(get(bed.api, OPERATOR_NAMESPACE, "configmap", "main-loads")["metadata"]["resourceVersion"])


def test_a_pool_is_scored_by_spark_driver_and_executor_pods_and_a_restart_follows_the_same_driver(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    topic = create_topic(pod_kafka, "node-spark", [[1, 2], [2, 3], [3, 4], [4, 1]])
    (operator_pod,) = wait_for(lambda: pods.ready(1), RESTART_TIMEOUT_S, "one Ready operator pod", pods)
    apply(node_bed.api, OPERATOR_NAMESPACE, spark_pool(pod_kafka, topic, operator_image(node_bed)))
    pool_uid = get(node_bed.api, OPERATOR_NAMESPACE, "bp", "main")["metadata"]["uid"]
    spark = SparkPods(node_bed)

    # The first run's driver runs, submitted by this operator pod; the pod goes, the next one follows.
    def driver_running() -> dict[str, Any] | None:
        running = [p for p in spark.look() if p["metadata"]["labels"].get("spark-role") == "driver"]
        return next((p for p in running if p["status"].get("phase") == "Running"), None)

    first = wait_for(driver_running, SCORED_TIMEOUT_S, "the first run's driver to run", pods)
    name, run = first["metadata"]["name"], first["metadata"]["labels"]["kafkabalancer.io/scoring-run"]
    deleted = node_bed.kubectl(
        "delete", "pod", operator_pod["metadata"]["name"], "-n", OPERATOR_NAMESPACE, "--wait=false"
    )
    assert deleted.returncode == 0, deleted.stderr

    def followed() -> bool:
        spark.look()
        others = [p for p in pods.live() if p["metadata"]["name"] != operator_pod["metadata"]["name"]]
        return any(
            f"following its earlier Spark driver {name}" in pods.log(p["metadata"]["name"]) for p in others
        )

    wait_for(followed, SCORED_TIMEOUT_S, "the next operator pod to follow the running driver", pods)
    scored = wait_for(lambda: loads_scored(node_bed, spark), SCORED_TIMEOUT_S, "LoadsScored=True", pods)
    assert "SparkOnKubernetes (spark-submit)" in scored["message"], scored

    # Neither duplicated nor lost: one driver pod ever for that run, read and deleted by the next pod.
    (driver,) = spark.drivers(run)
    assert driver["metadata"]["name"] == name
    wait_for(lambda: not spark.look(), 120, "the read driver's pods to be deleted", pods)
    executors = spark.executors()
    assert executors, "no executor pod was seen"
    owner = driver["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("BrokerPool", "main", pool_uid)
    for executor in executors:
        (owned_by,) = executor["metadata"]["ownerReferences"]
        assert (owned_by["kind"], owned_by["uid"]) == ("Pod", driver["metadata"]["uid"])
    # The pool plans on what the run scored: its loads are written again after the condition turned.
    written = _loads_written(node_bed)
    wait_for(lambda: _loads_written(node_bed) != written, 60, "a pass planning on the scored loads", pods)
    assert condition(get(node_bed.api, OPERATOR_NAMESPACE, "bp", "main"), "PlanReady")["status"] == "True"

    created = _at(driver["metadata"]["creationTimestamp"])
    driver_started, finished = _started(driver), _finished(driver)
    executor_started = min(s for e in executors if (s := _started(e)) is not None)
    assert driver_started is not None and finished is not None
    turned = _at(scored["lastTransitionTime"])
    print(
        f"\ndriver pod created → driver running {driver_started - created:.0f}s → executor running "
        f"{executor_started - created:.0f}s → driver succeeded {finished - created:.0f}s → "
        f"LoadsScored=True {turned - created:.0f}s (1 s resolution)"
    )
    log = "\n".join(pods.log(p["metadata"]["name"]) for p in pods.live())
    print("\n".join(line for line in log.splitlines() if "Spark driver" in line or "scored by" in line))


def test_a_missing_image_fails_scoring_with_its_pull_reason_while_the_pool_plans_on(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    topic = create_topic(pod_kafka, "node-spark-missing", [[1, 2], [2, 3], [3, 4], [4, 1]])
    # Nothing listens on port 1 of the node: the pull fails at once, as for an image that is not there.
    apply(
        node_bed.api,
        OPERATOR_NAMESPACE,
        spark_pool(pod_kafka, topic, f"{node.NODE_IP}:1/kafka-balancer/missing:0"),
    )

    def failed() -> dict[str, Any] | None:
        found = condition(get(node_bed.api, OPERATOR_NAMESPACE, "bp", "main"), "LoadsScored")
        return found if found.get("reason") == "ScoringFailed" else None

    reported = wait_for(failed, SCORED_TIMEOUT_S, "LoadsScored=False for the missing image", pods)
    assert reported["status"] == "False"
    assert "ErrImagePull" in reported["message"] or "ImagePullBackOff" in reported["message"], reported
    plans_on(node_bed, pods)
    print(f"LoadsScored with a missing image: {reported['message']}")


def test_deleting_the_pool_removes_its_driver_and_executor_pods(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    topic = create_topic(pod_kafka, "node-spark-delete", [[1, 2], [2, 3], [3, 4], [4, 1]])
    apply(node_bed.api, OPERATOR_NAMESPACE, spark_pool(pod_kafka, topic, operator_image(node_bed)))
    spark = SparkPods(node_bed)

    def executor_running() -> bool:
        return any(
            p["metadata"]["labels"].get("spark-role") == "executor" and p["status"].get("phase") == "Running"
            for p in spark.look()
        )

    wait_for(executor_running, SCORED_TIMEOUT_S, "a run's executor to run", pods)
    deleted = node_bed.kubectl("delete", "bp", "main", "-n", OPERATOR_NAMESPACE, "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    gone_at = time.monotonic()
    wait_for(lambda: not spark.look(), 180, "the pool's driver and executor pods to be deleted", pods)
    print(f"pool deleted → its Spark pods gone: {time.monotonic() - gone_at:.1f}s")


def storage_secret(bed: node.NodeBed, credentials: dict[str, str]) -> None:
    """The Secret the chart's ``scoring.storageSecret`` names: env of the operator and the Spark pods."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": STORAGE_SECRET, "namespace": OPERATOR_NAMESPACE},
        "stringData": credentials,
    }
    applied = bed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(secret))
    assert applied.returncode == 0, applied.stderr


def scoring_failed(bed: node.NodeBed, naming: str) -> dict[str, Any] | None:
    """LoadsScored once it reports a failed run naming ``naming`` (an earlier test's failure stays in
    the condition until this pool's first run ends)."""
    found = condition(get(bed.api, OPERATOR_NAMESPACE, "bp", "main"), "LoadsScored")
    return found if found.get("reason") == "ScoringFailed" and naming in found.get("message", "") else None


def _passes(pods: OperatorPods) -> int:
    """Passes of pool ``main`` the live operator pods have logged as reconciled with a plan."""
    line = f"pool {OPERATOR_NAMESPACE}/main reconciled: plan "
    return sum(pods.log(p["metadata"]["name"]).count(line) for p in pods.live())


def plans_on(bed: node.NodeBed, pods: OperatorPods) -> None:
    """The pool's next pass plans: one more pass is logged reconciled with a plan, and PlanReady is
    True. Not its loads ConfigMap: collected loads of an idle topic are the same pass after pass,
    and the apiserver keeps the resourceVersion of a replace that changes nothing (a CI run waited
    60 s for it while the pool planned every 10 s)."""
    done = _passes(pods)
    wait_for(lambda: _passes(pods) > done, 60, "a pass planning on collected loads", pods)
    assert condition(get(bed.api, OPERATOR_NAMESPACE, "bp", "main"), "PlanReady")["status"] == "True"


def oom_killed_scoring(
    bed: node.NodeBed, pods: OperatorPods, kafka: KafkaBed, conf: dict[str, str], topic: str, naming: str
) -> str:
    """A pool scored with ``conf`` in the chart's sparkConf, once LoadsScored reports a failed run
    naming ``naming``: its message (the seconds since the pool are printed)."""
    upgrade(bed, {**SPARK_VALUES, **chart_spark_conf(conf)})
    created = create_topic(kafka, topic, [[1, 2], [2, 3], [3, 4], [4, 1]])
    apply(bed.api, OPERATOR_NAMESPACE, spark_pool(kafka, created, operator_image(bed)))
    started = time.monotonic()
    reported = wait_for(
        lambda: scoring_failed(bed, naming), SCORED_TIMEOUT_S, f"LoadsScored=False naming {naming}", pods
    )
    assert reported["status"] == "False"
    print(f"LoadsScored {time.monotonic() - started:.0f}s after the pool: {reported['message']}")
    message: str = reported["message"]
    return message


def test_an_oom_killed_driver_fails_scoring_with_its_reason_while_the_pool_plans_on(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    message = oom_killed_scoring(node_bed, pods, pod_kafka, OOM_CONF, "node-spark-oom", "OOMKilled")
    assert "Spark driver pod" in message, message
    plans_on(node_bed, pods)


def test_an_oom_killed_executor_fails_scoring_naming_the_executor_while_the_pool_plans_on(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    message = oom_killed_scoring(
        node_bed,
        pods,
        pod_kafka,
        EXECUTOR_OOM_CONF,
        "node-spark-executor-oom",
        "ended: OOMKilled (exit code 137)",
    )
    driver_part, executor_part = message.split(", after executor pod ", 1)
    assert "Spark driver pod" in driver_part and "OOMKilled" not in driver_part, message
    assert re.fullmatch(r"\S+-exec-\d+", executor_part.split(" ended: ", 1)[0]), message
    # The driver's reason is Spark's: its own limit on failed executors.
    assert "Max number of executor failures" in executor_part, message
    plans_on(node_bed, pods)


def test_unreachable_storage_fails_scoring_naming_the_storage_while_the_pool_plans_on(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed
) -> None:
    # Nothing listens on port 1 of the node: every request of the operator's S3 client is refused.
    storage = "s3a://kb-unreachable/kafka-balancer"
    storage_secret(node_bed, {"AWS_ACCESS_KEY_ID": "kb-test", "AWS_SECRET_ACCESS_KEY": "kb-test-secret"})
    upgrade(
        node_bed,
        {
            **SPARK_VALUES,
            "scoring.storage": storage,
            "scoring.s3.endpoint": f"http://{node.NODE_IP}:1",
            "scoring.storageSecret": STORAGE_SECRET,
        },
    )
    topic = create_topic(pod_kafka, "node-spark-unreachable", [[1, 2], [2, 3], [3, 4], [4, 1]])
    apply(node_bed.api, OPERATOR_NAMESPACE, spark_pool(pod_kafka, topic, operator_image(node_bed)))
    started = time.monotonic()
    reported = wait_for(
        lambda: scoring_failed(node_bed, storage),
        SCORED_TIMEOUT_S,
        f"LoadsScored=False naming {storage}",
        pods,
    )
    assert reported["status"] == "False"
    assert "kb-test-secret" not in reported["message"]
    plans_on(node_bed, pods)
    print(f"LoadsScored {time.monotonic() - started:.0f}s after the pool: {reported['message']}")


@pytest.fixture
def pod_minio(node_bed: node.NodeBed, minio_binary: Path, tmp_path: Path) -> Iterator[MinioBed]:
    """MinIO on the node's bridge address, where the operator and the Spark pods reach it."""
    bed = MinioBed(minio_binary, tmp_path / "minio", host=node.NODE_IP)
    try:
        try:
            bed.start()
        except BedError as err:
            pytest.fail(f"MinIO on the node's bridge did not start: {err}", pytrace=False)
        yield bed
    finally:
        bed.stop()


def test_a_pool_is_scored_by_spark_pods_through_s3a_on_minio_with_the_storage_secret(
    node_bed: node.NodeBed, spark_release: Path, pods: OperatorPods, pod_kafka: KafkaBed, pod_minio: MinioBed
) -> None:
    storage_secret(node_bed, pod_minio.credentials_env)
    upgrade(
        node_bed,
        {
            **SPARK_VALUES,
            "scoring.storage": pod_minio.uri("node"),
            "scoring.s3.endpoint": pod_minio.endpoint,
            "scoring.storageSecret": STORAGE_SECRET,
        },
    )
    topic = create_topic(pod_kafka, "node-spark-s3a", [[1, 2], [2, 3], [3, 4], [4, 1]])
    apply(node_bed.api, OPERATOR_NAMESPACE, spark_pool(pod_kafka, topic, operator_image(node_bed)))
    started = time.monotonic()
    spark = SparkPods(node_bed)
    scored = wait_for(lambda: loads_scored(node_bed, spark), SCORED_TIMEOUT_S, "LoadsScored=True", pods)
    assert "SparkOnKubernetes (spark-submit)" in scored["message"], scored
    assert spark.drivers() and spark.executors(), "no driver or executor pod was seen"
    # The samples the driver read and the outputs it wrote are in the bucket.
    listed = pod_minio.filesystem().get_file_info(
        pafs.FileSelector(f"{pod_minio.bucket}/node", recursive=True)
    )
    names = [info.path for info in listed if info.type == pafs.FileType.File]
    assert any("/samples/" in n for n in names) and any("/out/" in n for n in names), names
    print(f"LoadsScored=True through s3a on MinIO {time.monotonic() - started:.0f}s after the pool")
