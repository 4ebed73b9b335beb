"""The spark-submit engine's decisions, with the apiserver faked in memory and spark-submit replaced by a
function that creates the driver pod as spark-submit would: what it submits, that a run is submitted
once (a restart follows the pool's earlier driver), and how a driver's failure becomes the run's error.
The real submission, pods and volume are proven on the node (tests/node/test_spark.py)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.api import Scoring
from kafka_balancer.errors import ScoringError
from kafka_balancer.k8s.spark_application import application_manifest
from kafka_balancer.k8s.spark_runs import SPARK_UID, SparkSettings, SparkVolume
from kafka_balancer.k8s.spark_submit import (
    DRIVER_CONTAINER,
    SparkSubmitScorer,
    driver_pod_name,
    driver_template,
    submit_conf,
    submit_env,
    submit_error,
)
from kafka_balancer.scoring.launch import ScoringRequest
from kafka_balancer.scoring.options import JVM_OPTIONS
from kafka_balancer.scoring.seal import TERMINATION_LOG, seal
from tests.unit.k8s.kube_fake import FakeKube

NAMESPACE, POOL = "team-a", "main"


def request(tmp_path: Path, run: str = "0001700000000000", **scoring: Any) -> ScoringRequest:
    samples = tmp_path / "samples"
    samples.mkdir(exist_ok=True)
    (samples / "1.parquet").write_bytes(b"x")
    return ScoringRequest(
        namespace=NAMESPACE,
        pool=POOL,
        pool_uid="uid-1",
        run=run,
        samples=samples,
        topology={"brokers": [{"id": 1}]},
        goals={"apiVersion": "v1", "kind": "List", "items": []},
        window_ms=300_000,
        windows=3,
        spec=Scoring.model_validate({"engine": "SparkOnKubernetes", "image": "img:1", **scoring}),
    )


def driver(name: str, run: str, phase: str, **status: Any) -> dict[str, Any]:
    labels = {"kafkabalancer.io/pool": POOL, "kafkabalancer.io/scoring-run": run, "spark-role": "driver"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"phase": phase, **status}}


class Cluster:
    """The fake apiserver and storage; ``submit`` plays spark-submit, each ``sleep`` a poll that finds
    the driver ``then`` (writing the job's outputs when it succeeded)."""

    def __init__(self, tmp_path: Path, then: dict[str, Any] | None = None) -> None:
        self.kube = FakeKube()
        self.storage = tmp_path / "storage"
        self.settings = SparkSettings(str(self.storage), poll_s=0.0, volume=SparkVolume("kb", "/mnt/kb"))
        self.submitted: list[list[str]] = []
        self.then = then or {"phase": "Succeeded"}
        self.now = 0.0
        self.seals = True  # the driver's image reports its outputs' digests
        self.after_success: Callable[[Path], None] = lambda out: None  # another writer, once it ended

    def scorer(self) -> SparkSubmitScorer:
        return SparkSubmitScorer(self.kube, self.settings, lambda: self.now, self._sleep, self._submit)

    def _submit(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        self.submitted.append(argv)
        name = next(a.split("=", 1)[1] for a in argv if a.startswith("spark.kubernetes.driver.pod.name="))
        run = next(
            a.split("=", 1)[1]
            for a in argv
            if a.startswith("spark.kubernetes.driver.label.kafkabalancer.io/scoring-run=")
        )
        self.kube.pods[(NAMESPACE, name)] = driver(name, run, "Pending")
        return subprocess.CompletedProcess(argv, 0, "", "")

    def _sleep(self, seconds: float) -> None:
        self.now += 2.0
        for pod in self.kube.pods.values():
            if pod["metadata"]["labels"]["spark-role"] != "driver":
                continue
            pod["status"] = dict(self.then)
            if self.then["phase"] == "Succeeded":
                sealed = self.outputs(pod["metadata"]["labels"]["kafkabalancer.io/scoring-run"])
                # The job's --seal-file is the driver container's termination message.
                terminated = {"exitCode": 0, "message": sealed} if self.seals else {"exitCode": 0}
                pod["status"]["containerStatuses"] = [
                    {"name": DRIVER_CONTAINER, "state": {"terminated": terminated}}
                ]
                self.after_success(self.out(pod["metadata"]["labels"]["kafkabalancer.io/scoring-run"]))

    def out(self, run: str) -> Path:
        return self.storage / "runs" / f"{NAMESPACE}.{POOL}" / run / "out"

    def outputs(self, run: str) -> str:
        """Writes the run's outputs as its job would; returns their seal."""
        out = self.out(run)
        out.mkdir(parents=True, exist_ok=True)
        manifest = json.dumps({"windows": {"newestSampleMs": int(run)}}).encode()
        snapshot = json.dumps({"partitions": []}).encode()
        (out / "manifest.json").write_bytes(manifest)
        (out / "snapshot.json").write_bytes(snapshot)
        return seal(manifest, snapshot)


def test_the_submission_names_the_driver_owns_it_by_the_pool_and_sizes_it_from_the_spec(
    tmp_path: Path,
) -> None:
    settings = SparkSettings("/mnt/kb", volume=SparkVolume("kb-scoring", "/mnt/kb"))
    wanted = request(tmp_path, executors=3, resources={"cpu": "1500m", "memory": "2Gi"})
    conf = submit_conf(settings, wanted, Path("/tmp/templates"))

    assert conf["spark.kubernetes.namespace"] == NAMESPACE
    assert conf["spark.kubernetes.driver.pod.name"] == driver_pod_name(NAMESPACE, POOL, wanted.run)
    assert len(conf["spark.kubernetes.driver.pod.name"]) <= 63
    assert conf["spark.kubernetes.driver.podTemplateFile"] == "/tmp/templates/driver.json"
    assert conf["spark.kubernetes.executor.podTemplateFile"] == "/tmp/templates/executor.json"
    assert conf["spark.kubernetes.container.image"] == "img:1"
    assert conf["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "spark"
    assert conf["spark.executor.instances"] == "3"
    assert (conf["spark.executor.cores"], conf["spark.kubernetes.executor.request.cores"]) == ("2", "1500m")
    assert conf["spark.driver.memory"] == conf["spark.executor.memory"] == "2048m"
    assert conf["spark.sql.shuffle.partitions"] == "12"
    for role in ("driver", "executor"):
        assert conf[f"spark.kubernetes.{role}.label.kafkabalancer.io/pool"] == POOL
        volume = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.scoring"
        assert conf[f"{volume}.options.claimName"] == "kb-scoring"
        assert conf[f"{volume}.mount.path"] == "/mnt/kb"
    (owner,) = driver_template(wanted, SPARK_UID)["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "BrokerPool",
        POOL,
        "uid-1",
        True,
    )


def test_a_run_is_submitted_once_its_inputs_written_its_outputs_read_and_its_driver_deleted(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path)
    wanted = request(tmp_path)

    result = cluster.scorer().score(wanted)

    assert result.manifest["windows"]["newestSampleMs"] == int(wanted.run)
    (argv,) = cluster.submitted
    assert argv[1:5] == ["--master", "k8s://https://kubernetes.default.svc", "--deploy-mode", "cluster"]
    run = cluster.storage / "runs" / f"{NAMESPACE}.{POOL}" / wanted.run
    assert json.loads((run / "topology.json").read_text()) == {"brokers": [{"id": 1}]}
    assert (cluster.storage / "samples" / f"{NAMESPACE}.{POOL}" / "1.parquet").exists()
    assert argv[argv.index("--out") + 1] == str(run / "out")
    assert argv[argv.index("--seal-file") + 1] == TERMINATION_LOG
    assert cluster.kube.pods == {}


def test_a_driver_of_the_same_run_is_followed_not_resubmitted(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    wanted = request(tmp_path)
    name = driver_pod_name(NAMESPACE, POOL, wanted.run)
    cluster.kube.pods[(NAMESPACE, name)] = driver(name, wanted.run, "Running")

    cluster.scorer().score(wanted)

    assert cluster.submitted == []
    assert cluster.kube.pods == {}


def test_a_restarted_operator_follows_the_pools_earlier_driver_of_another_run(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    earlier = driver("kb-score-main-earlier-driver", "0001600000000000", "Running")
    failed = driver("kb-score-main-failed-driver", "0001500000000000", "Failed")
    cluster.kube.pods[(NAMESPACE, "kb-score-main-earlier-driver")] = earlier
    cluster.kube.pods[(NAMESPACE, "kb-score-main-failed-driver")] = failed

    result = cluster.scorer().score(request(tmp_path))

    assert cluster.submitted == []  # the new samples wait for the next interval
    assert result.manifest["windows"]["newestSampleMs"] == 1600000000000
    assert cluster.kube.pods == {}  # read and deleted; the failed one cleaned up


@pytest.mark.parametrize(
    ("then", "reason"),
    [
        (
            {
                "phase": "Pending",
                "containerStatuses": [
                    {"state": {"waiting": {"reason": "ErrImagePull", "message": "img:1: not found"}}}
                ],
            },
            "cannot start: ErrImagePull: img:1: not found",
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [{"state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}],
            },
            "failed: OOMKilled (exit code 137): score: no samples under /mnt/kb",
        ),
    ],
    ids=["image-pull", "oom-killed"],
)
def test_a_driver_that_cannot_start_or_fails_is_the_runs_error_and_is_deleted(
    tmp_path: Path, then: dict[str, Any], reason: str
) -> None:
    cluster = Cluster(tmp_path, then)
    wanted = request(tmp_path)
    name = driver_pod_name(NAMESPACE, POOL, wanted.run)
    cluster.kube.pod_logs[(NAMESPACE, name)] = "starting\nscore: no samples under /mnt/kb\nexiting\n"

    with pytest.raises(ScoringError) as failed:
        cluster.scorer().score(wanted)

    assert str(failed.value) == f"Spark driver pod {NAMESPACE}/{name} {reason}"
    assert cluster.kube.pods == {}


def executor(name: str, run: str, **state: Any) -> dict[str, Any]:
    labels = {"kafkabalancer.io/pool": POOL, "kafkabalancer.io/scoring-run": run, "spark-role": "executor"}
    phase = "Failed" if "terminated" in state else "Running"
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"phase": phase, "containerStatuses": [{"state": state}]},
    }


def test_a_driver_that_gave_up_after_its_executors_failed_names_the_first_executors_reason(
    tmp_path: Path,
) -> None:
    gave_up = {"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 11}}}]}
    cluster = Cluster(tmp_path, gave_up)
    wanted = request(tmp_path)
    name = driver_pod_name(NAMESPACE, POOL, wanted.run)
    oom = {"reason": "OOMKilled", "exitCode": 137}
    for pod in (
        executor("exec-2", wanted.run, terminated={**oom, "finishedAt": "2026-11-25T06:00:40Z"}),
        executor("exec-1", wanted.run, terminated={**oom, "finishedAt": "2026-11-25T06:00:10Z"}),
        executor("exec-3", wanted.run, running={"startedAt": "2026-11-25T06:00:50Z"}),
        executor("other-run-exec", "0001600000000000", terminated={**oom, "finishedAt": "2026-11-25T05:00Z"}),
    ):
        cluster.kube.pods[(NAMESPACE, pod["metadata"]["name"])] = pod
    cluster.kube.pod_logs[(NAMESPACE, name)] = "Max number of executor failures (3) reached\n"

    with pytest.raises(ScoringError) as failed:
        cluster.scorer().score(wanted)

    assert str(failed.value) == (
        f"Spark driver pod {NAMESPACE}/{name} failed: Terminated (exit code 11), after executor pod "
        "exec-1 ended: OOMKilled (exit code 137) (1 more executor pod(s) failed too): "
        "Max number of executor failures (3) reached"
    )
    assert (NAMESPACE, name) not in cluster.kube.pods


def test_a_driver_past_the_timeout_is_deleted_and_the_run_fails(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, {"phase": "Running"})
    cluster.settings = SparkSettings(str(cluster.storage), poll_s=0.0, timeout_s=10.0)

    with pytest.raises(ScoringError, match=r"did not finish within 10s \(last phase Running\); deleted it"):
        cluster.scorer().score(request(tmp_path))
    assert cluster.kube.pods == {}


def test_a_refused_submission_says_what_was_refused_without_the_stack_trace() -> None:
    stderr = (
        "26/11/24 21:55:12 INFO SparkKubernetesClientFactory: Auto-configuring K8S client\n"
        'Exception in thread "main" io.fabric8.kubernetes.client.KubernetesClientException: Failure '
        "executing: PATCH at: https://kubernetes.default.svc/apis/networking.k8s.io/v1/namespaces/a/"
        'networkpolicies/x-policy. Message: networkpolicies "x-policy" is forbidden: User "u" cannot '
        "patch resource. Received status: Status(apiVersion=v1, code=403)\n"
        "\tat io.fabric8.kubernetes.client.KubernetesClientException.copyAsCause(X.java:1)\n"
        "Caused by: io.fabric8.kubernetes.client.KubernetesClientException: the same again\n"
    )
    assert submit_error(stderr) == (
        "Failure executing: PATCH at: https://kubernetes.default.svc/apis/networking.k8s.io/v1/namespaces/"
        'a/networkpolicies/x-policy. Message: networkpolicies "x-policy" is forbidden: User "u" cannot '
        "patch resource."
    )


def test_outputs_another_writer_changed_after_the_driver_wrote_them_are_refused(tmp_path: Path) -> None:
    """Every pool's job can write the shared storage; only the run's own driver pod reports what it
    wrote, in a status no Spark account can patch."""
    cluster = Cluster(tmp_path)
    wanted = request(tmp_path)
    forged = json.dumps({"partitions": [{"topic": "t", "partition": 0, "replicas": [9]}]})

    def overwrite(out: Path) -> None:
        (out / "snapshot.json").write_text(forged)

    cluster.after_success = overwrite

    with pytest.raises(ScoringError, match=r"are not the ones the run's driver wrote .*: refused"):
        cluster.scorer().score(wanted)
    assert cluster.kube.pods == {}  # the driver goes: the next interval reruns


def test_outputs_waiting_for_a_run_without_its_driver_are_not_read_the_run_is_submitted(
    tmp_path: Path,
) -> None:
    """Outputs put in a pool's place before its run (another pool's job guessing the run key) are
    neither taken for that run's nor do they spare it its driver: the driver's own replace them."""
    cluster = Cluster(tmp_path)
    wanted = request(tmp_path)
    planted = cluster.out(wanted.run)
    planted.mkdir(parents=True)
    (planted / "manifest.json").write_text(json.dumps({"windows": {"newestSampleMs": 1}}))
    (planted / "snapshot.json").write_text(json.dumps({"partitions": []}))

    result = cluster.scorer().score(wanted)

    assert len(cluster.submitted) == 1
    assert result.manifest["windows"]["newestSampleMs"] == int(wanted.run)


def test_a_driver_that_reports_no_digests_has_its_outputs_refused(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    cluster.seals = False  # an image older than the seal

    with pytest.raises(ScoringError, match=r"succeeded without reporting its outputs' digests"):
        cluster.scorer().score(request(tmp_path))
    assert cluster.kube.pods == {}


def test_both_launchers_start_the_jobs_jvms_lean_unless_the_charts_spark_conf_says_otherwise(
    tmp_path: Path,
) -> None:
    """A run's driver and executors are short JVMs on pods of a core or less: C1 alone and the serial
    collector (what embedded runs use). The chart's sparkConf still has the last word."""
    lean = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    wanted = request(tmp_path)
    for settings in (SparkSettings("/mnt/kb"), SparkSettings("/mnt/kb", spark_conf={"spark.x": "1"})):
        submitted = submit_conf(settings, wanted, tmp_path)
        applied = application_manifest(settings, wanted)["spec"]["sparkConf"]
        for conf in (submitted, applied):
            assert conf["spark.driver.extraJavaOptions"] == conf["spark.executor.extraJavaOptions"] == lean
    own = SparkSettings("/mnt/kb", spark_conf={"spark.executor.extraJavaOptions": "-XX:+UseG1GC"})
    for conf in (submit_conf(own, wanted, tmp_path), application_manifest(own, wanted)["spec"]["sparkConf"]):
        assert (conf["spark.driver.extraJavaOptions"], conf["spark.executor.extraJavaOptions"]) == (
            lean,
            "-XX:+UseG1GC",
        )


def test_spark_submits_jvm_runs_as_the_jobs_and_the_operators_own_options_win(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    env = submit_env(Path("/opt/spark"))
    assert (env["SPARK_HOME"], env["SPARK_SUBMIT_OPTS"]) == ("/opt/spark", JVM_OPTIONS)
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:+UseParallelGC")
    # The JVM takes the last of two flags: the operator's environment, after ours.
    assert submit_env(Path("/opt/spark"))["SPARK_SUBMIT_OPTS"] == f"{JVM_OPTIONS} -XX:+UseParallelGC"
