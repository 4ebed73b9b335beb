"""SparkOnKubernetes with ``launcher: SparkSubmit`` (the default): the scoring job submitted with Spark's
own Kubernetes scheduler, ``spark-submit --master k8s://… --deploy-mode cluster`` from the operator's
pyspark, so the job runs as a driver pod and executor pods in the pool's namespace.

The driver pod's name is derived from the pool and the run, and its ownerReference to the BrokerPool
comes from a pod template, so it is there from the pod's creation: no window in which an operator
restart leaves a driver nobody owns. Spark makes the driver own its executors, ConfigMap and Service,
so deleting the pool garbage-collects them all. A pool has at most one driver at a time: an operator
that finds a driver of the pool from an earlier run (its predecessor's, before a restart), running or
succeeded and not yet read, follows it instead of submitting.
``spark.kubernetes.submission.waitAppCompletion=false`` makes spark-submit return once the driver pod
exists; the driver is then watched here with the kubernetes client, and deleted once its outputs are
read or its failure recorded.

Inputs (brokers, goals) and the samples go to the pool's place in the shared storage (a volume both
pods mount at the same path, or later an object store), outputs come back from there.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kafka_balancer.durations import age_text
from kafka_balancer.errors import InputError, ScoringError
from kafka_balancer.k8s.kube import MANAGED_BY, owner_reference
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.spark_runs import (
    SparkSettings,
    application_name,
    container_security_context,
    pod_security_context,
    pod_size,
    pool_runs_uri,
    pool_samples_uri,
    spark_conf,
)
from kafka_balancer.scoring import remote
from kafka_balancer.scoring.launch import (
    ScoringRequest,
    ScoringResult,
    error_line,
    job_arguments,
    read_outputs,
)
from kafka_balancer.scoring.options import JVM_OPTIONS
from kafka_balancer.scoring.seal import TERMINATION_LOG

log = logging.getLogger(__name__)

POOL_LABEL = "kafkabalancer.io/pool"
RUN_LABEL = "kafkabalancer.io/scoring-run"
SPARK_ROLE = "spark-role"  # Spark's own label: driver or executor
# A container that waits for these will not start by itself soon: fail the run now with the reason.
STUCK_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
VOLUME_NAME = "scoring"
SUBMIT_TIMEOUT_S = 300.0
# Of a failed driver's log, read for its reason: Spark logs its cause and then 150 lines or so of
# shutdown (an OOM-killed executor's run: the cause 150 lines before the end of 235).
LOG_LINES = 1000
MESSAGE_CHARS = 500  # of a reason in the pool's status
# Spark's own names of its containers (a template's container keeps its name).
DRIVER_CONTAINER, EXECUTOR_CONTAINER = "spark-kubernetes-driver", "spark-kubernetes-executor"


def driver_pod_name(namespace: str, pool: str, run: str) -> str:
    return f"{application_name(namespace, pool, run)}-driver"


def run_uri(settings: SparkSettings, request: ScoringRequest) -> str:
    """The run's directory: its inputs beside ``out/``, the job's outputs."""
    return remote.join(pool_runs_uri(settings, request), request.run)


def _out_uri(settings: SparkSettings, request: ScoringRequest, run: str) -> str:
    return remote.join(pool_runs_uri(settings, request), run, "out")


def spark_home() -> Path:
    """The operator's own pyspark is a whole Spark distribution (bin/spark-submit, jars/)."""
    found = importlib.util.find_spec("pyspark")  # found, not imported: the operator never needs it
    if found is None or found.origin is None:
        raise ScoringError("pyspark is not installed beside the operator: spark-submit is not there")
    return Path(found.origin).parent


def driver_template(request: ScoringRequest, run_as_user: int | None) -> dict[str, Any]:
    """The driver pod's template: owned by the pool from its creation (Spark keeps the template's
    metadata and makes the driver own everything else it creates), and restricted (Spark builds its
    container on the template's first one, keeping its securityContext)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "ownerReferences": [owner_reference(PoolId(request.namespace, request.pool, request.pool_uid))]
        },
        "spec": _restricted_spec(DRIVER_CONTAINER, run_as_user),
    }


def executor_template(run_as_user: int | None) -> dict[str, Any]:
    """The executor pods' template (the driver reads it from a ConfigMap spark-submit mounts into
    it): restricted like the driver; the driver makes itself their owner."""
    spec = _restricted_spec(EXECUTOR_CONTAINER, run_as_user)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": spec}


def _restricted_spec(container: str, run_as_user: int | None) -> dict[str, Any]:
    return {
        "securityContext": pod_security_context(run_as_user),
        "containers": [{"name": container, "securityContext": container_security_context(run_as_user)}],
    }


def write_templates(request: ScoringRequest, directory: Path, run_as_user: int | None) -> Path:
    """``driver.json`` and ``executor.json`` in ``directory``, for :func:`submit_conf`."""
    driver, executor = driver_template(request, run_as_user), executor_template(run_as_user)
    for name, template in (("driver", driver), ("executor", executor)):
        (directory / f"{name}.json").write_text(json.dumps(template), encoding="utf-8")
    return directory


def submit_conf(settings: SparkSettings, request: ScoringRequest, templates: Path) -> dict[str, str]:
    """Every ``--conf`` of the submission; ``templates`` holds the pod templates (:func:`write_templates`)."""
    if request.spec.image is None:
        raise InputError("scoring.image is required when scoring.engine is SparkOnKubernetes")
    size = pod_size(request.spec)
    conf = {
        "spark.kubernetes.namespace": request.namespace,
        "spark.kubernetes.driver.pod.name": driver_pod_name(request.namespace, request.pool, request.run),
        "spark.kubernetes.driver.podTemplateFile": str(templates / "driver.json"),
        "spark.kubernetes.executor.podTemplateFile": str(templates / "executor.json"),
        "spark.kubernetes.container.image": request.spec.image,
        "spark.kubernetes.container.image.pullPolicy": "IfNotPresent",
        "spark.kubernetes.authenticate.driver.serviceAccountName": settings.service_account,
        # spark-submit returns once the driver pod exists; the operator watches it (a restart loses
        # nothing: the pod is found by its name or the pool's label).
        "spark.kubernetes.submission.waitAppCompletion": "false",
        # A failed executor pod stays until its driver goes (it owns them), so that a driver that gave
        # up after its executors failed can be reported with their reason (OOMKilled, ...).
        "spark.kubernetes.executor.deleteOnTermination": "false",
        "spark.executor.instances": str(request.spec.executors),
        "spark.driver.cores": str(size.cores),
        "spark.executor.cores": str(size.cores),
        "spark.driver.memory": size.memory,
        "spark.executor.memory": size.memory,
        # The job shuffles rolled-up rows (partitions × windows): a few tasks per executor core,
        # not Spark's 200, each of which costs a task launch (the chart's sparkConf goes over it).
        "spark.sql.shuffle.partitions": str(2 * request.spec.executors * size.cores),
    }
    if size.core_request is not None:
        conf["spark.kubernetes.driver.request.cores"] = size.core_request
        conf["spark.kubernetes.executor.request.cores"] = size.core_request
    labels = {**MANAGED_BY, POOL_LABEL: request.pool, RUN_LABEL: request.run}
    for role in ("driver", "executor"):
        for key, value in labels.items():
            conf[f"spark.kubernetes.{role}.label.{key}"] = value
        if settings.volume is not None:
            prefix = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.{VOLUME_NAME}"
            conf[f"{prefix}.options.claimName"] = settings.volume.claim_name
            conf[f"{prefix}.mount.path"] = settings.volume.mount_path
    if (SERVICE_ACCOUNT / "token").exists():
        # In-cluster: spark-submit talks to the apiserver as the operator's ServiceAccount.
        conf["spark.kubernetes.authenticate.submission.caCertFile"] = str(SERVICE_ACCOUNT / "ca.crt")
        conf["spark.kubernetes.authenticate.submission.oauthTokenFile"] = str(SERVICE_ACCOUNT / "token")
    return conf | spark_conf(settings)


def submit_argv(settings: SparkSettings, request: ScoringRequest, templates: Path, home: Path) -> list[str]:
    run = run_uri(settings, request)
    arguments = job_arguments(
        request,
        samples=pool_samples_uri(settings, request),
        topology=remote.join(run, "topology.json"),
        goals=remote.join(run, "goals.json"),
        out=remote.join(run, "out"),
    )
    confs = [
        item
        for key, value in submit_conf(settings, request, templates).items()
        for item in ("--conf", f"{key}={value}")
    ]
    return [
        str(home / "bin" / "spark-submit"),
        "--master", settings.master,
        "--deploy-mode", "cluster",
        "--name", application_name(request.namespace, request.pool, request.run),
        *confs,
        settings.main_application_file,
        *arguments,
        "--seal-file", TERMINATION_LOG,
    ]  # fmt: skip


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _statuses(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def stuck_reason(pod: Mapping[str, Any]) -> str | None:
    """``reason: message`` of a container that waits for something that will not come by itself."""
    for container in _statuses(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in STUCK_REASONS:
            return f"{waiting['reason']}: {waiting.get('message') or 'no message'}"
    return None


def terminated_reason(pod: Mapping[str, Any]) -> str:
    for container in _statuses(pod):
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated:
            return f"{terminated.get('reason') or 'Terminated'} (exit code {terminated.get('exitCode')})"
    return str((pod.get("status") or {}).get("reason") or "Failed")


def executor_failures(pods: list[dict[str, Any]]) -> str:
    """``, after executor pod NAME ended: REASON (exit code N)``, naming the first executor pod of the
    run that ended in failure and how many more did; "" when none did."""
    ended = []
    for pod in pods:
        for container in _statuses(pod):
            terminated = (container.get("state") or {}).get("terminated") or {}
            if terminated and terminated.get("exitCode") != 0:
                ended.append((str(terminated.get("finishedAt") or ""), str(pod["metadata"]["name"]), pod))
                break
    if not ended:
        return ""
    _, name, first = min(ended)
    more = f" ({len(ended) - 1} more executor pod(s) failed too)" if len(ended) > 1 else ""
    return f", after executor pod {name} ended: {terminated_reason(first)}{more}"


def _sealed(driver: Mapping[str, Any]) -> str:
    """The digests the driver's job wrote to its termination log (``--seal-file``), from the pod's
    status: what no other pool's Spark job can write."""
    name = driver["metadata"]["name"]
    for container in _statuses(driver):
        if container.get("name") == DRIVER_CONTAINER:
            message = ((container.get("state") or {}).get("terminated") or {}).get("message")
            if message:
                return str(message)
    raise ScoringError(
        f"Spark driver pod {name} succeeded without reporting its outputs' digests "
        f"(its image's kafka-balancer writes them from this version on): its outputs are not read"
    )


def submit_error(stderr: str) -> str:
    """spark-submit's reason: the first exception it printed (its stack trace and the apiserver's
    repeated status left out), else its last line."""
    for line in stderr.splitlines():
        if "Exception" in line and not line.lstrip().startswith("at "):
            reason = line.split("Exception: ", 1)[-1].split(" Received status:", 1)[0]
            return reason.strip()[:MESSAGE_CHARS]
    return error_line(stderr)[:MESSAGE_CHARS]


class SparkSubmitScorer:
    """Submit (or find) the run's driver pod, wait for it to finish, read the outputs."""

    engine = "SparkOnKubernetes (spark-submit)"

    def __init__(
        self,
        kube: KubePort,
        settings: SparkSettings,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        submit: Callable[[list[str]], subprocess.CompletedProcess[str]] | None = None,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self._clock = clock
        self._sleep = sleep
        self._submit = submit or _spark_submit

    def score(self, request: ScoringRequest) -> ScoringResult:
        started = self._clock()
        namespace = request.namespace
        earlier = self._earlier_driver(request)
        if earlier is not None:
            name, run = earlier
            log.info("pool %s/%s: following its earlier Spark driver %s", namespace, request.pool, name)
        else:
            run = request.run
            name = driver_pod_name(namespace, request.pool, run)
            # A driver of this run that exists was submitted before: it is watched, not resubmitted.
            # Outputs without their driver are not read: only the driver vouches for them (seal.py).
            if self.kube.read_pod(namespace, name) is None:
                self._submit_run(request, name)
        driver = self._wait(namespace, name, started)
        try:
            result = read_outputs(_out_uri(self.settings, request, run), started, _sealed(driver))
        finally:
            self.kube.delete_pod(namespace, name)
        remote.keep_newest(pool_runs_uri(self.settings, request), 2)
        return result

    def _earlier_driver(self, request: ScoringRequest) -> tuple[str, str] | None:
        """The pool's driver from an earlier run (name, run) to adopt instead of submitting: one still
        running, else the newest that succeeded (its operator went before reading it). Failed ones
        of other runs are deleted: their reason went with the operator that saw them."""
        selector = f"{POOL_LABEL}={request.pool},{SPARK_ROLE}=driver"
        running, succeeded = [], []
        for pod in self.kube.list_pods(request.namespace, selector):
            metadata = pod["metadata"]
            name = str(metadata["name"])
            run = str((metadata.get("labels") or {}).get(RUN_LABEL, ""))
            if "deletionTimestamp" in metadata or run == request.run:
                continue  # going, or this very run's (found by its name)
            phase = _phase(pod)
            if phase in ("Pending", "Running"):
                running.append((run, name))
            elif phase == "Succeeded":
                succeeded.append((run, name))
            else:
                self.kube.delete_pod(request.namespace, name)
        adopted = max(running or succeeded, default=None)
        if adopted is None:
            return None
        return adopted[1], adopted[0]

    def _submit_run(self, request: ScoringRequest, name: str) -> None:
        run = run_uri(self.settings, request)
        remote.sync_up(request.samples, pool_samples_uri(self.settings, request))
        remote.write_json(remote.join(run, "topology.json"), request.topology)
        remote.write_json(remote.join(run, "goals.json"), request.goals)
        with tempfile.TemporaryDirectory(prefix="kb-spark-") as scratch:
            templates = write_templates(request, Path(scratch), self.settings.run_as_user)
            argv = submit_argv(self.settings, request, templates, spark_home())
            submitted_at = self._clock()
            done = self._submit(argv)
        if done.returncode != 0:
            raise ScoringError(
                f"spark-submit of {request.namespace}/{name} failed: {submit_error(done.stderr)}"
            )
        log.info(
            "pool %s/%s: spark-submit created driver %s in %.1f s",
            request.namespace,
            request.pool,
            name,
            self._clock() - submitted_at,
        )

    def _wait(self, namespace: str, name: str, started: float) -> dict[str, Any]:
        """The driver pod once it succeeded."""
        deadline = started + self.settings.timeout_s
        where = f"Spark driver pod {namespace}/{name}"
        running_since: float | None = None
        while True:
            pod = self.kube.read_pod(namespace, name)
            if pod is None:
                raise ScoringError(f"{where} was deleted before it finished")
            phase = _phase(pod)
            if phase == "Succeeded":
                log.info("%s succeeded %.1f s after the run started", where, self._clock() - started)
                return pod
            if phase == "Failed":
                reason = terminated_reason(pod)
                run = (pod["metadata"].get("labels") or {}).get(RUN_LABEL, "")
                executors = executor_failures(
                    self.kube.list_pods(namespace, f"{RUN_LABEL}={run},{SPARK_ROLE}=executor")
                )
                last = error_line(self.kube.pod_log(namespace, name, LOG_LINES))
                self.kube.delete_pod(namespace, name)
                raise ScoringError(f"{where} failed: {reason}{executors}: {last}")
            stuck = stuck_reason(pod)
            if stuck is not None:
                self.kube.delete_pod(namespace, name)
                raise ScoringError(f"{where} cannot start: {stuck}")
            if phase == "Running" and running_since is None:
                running_since = self._clock()
                log.info("%s running %.1f s after the run started", where, running_since - started)
            if self._clock() >= deadline:
                self.kube.delete_pod(namespace, name)
                raise ScoringError(
                    f"{where} did not finish within {age_text(self.settings.timeout_s)} "
                    f"(last phase {phase}); deleted it"
                )
            self._sleep(self.settings.poll_s)


def submit_env(home: Path) -> dict[str, str]:
    """spark-submit's environment: its Spark home, and its own JVM (the client that creates the
    driver pod and returns) run as the job's are, C1 only with the serial collector: with the
    second JIT tier and a parallel collector it spent several CPU seconds starting, on the cores
    the driver pod starts on. ``SPARK_SUBMIT_OPTS`` set for the operator still comes after, and wins."""
    options = " ".join(filter(None, (JVM_OPTIONS, os.environ.get("SPARK_SUBMIT_OPTS"))))
    return {**os.environ, "SPARK_HOME": str(home), "SPARK_SUBMIT_OPTS": options}


def _spark_submit(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = submit_env(Path(argv[0]).parent.parent)
    try:
        return subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise ScoringError(f"spark-submit did not return within {age_text(SUBMIT_TIMEOUT_S)}") from err
