"""SparkOnKubernetes with ``launcher: SparkApplication``: one Kubeflow Spark Operator
``SparkApplication`` per scoring run, for clusters that run that operator (the default launcher is
Spark's own, k8s/spark_submit.py).

The driver reads the pool's samples from, and writes its outputs to, shared storage (``s3a://`` or a
volume mounted at the same path): the operator uploads its sample store there before each run and
reads ``manifest.json`` and ``snapshot.json`` back when the application is COMPLETED. The brokers and
goals go in a ConfigMap mounted into the driver (``spec.driver.configMaps``).

Settings come from the chart (environment of the operator's container, read by k8s/settings.py); the
image and resources from the pool's ``spec.scoring``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from kafka_balancer.api import Scoring
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
    run_out_uri,
    spark_conf,
)
from kafka_balancer.scoring import remote
from kafka_balancer.scoring.launch import ScoringRequest, ScoringResult, job_arguments, read_outputs

SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
INPUT_MOUNT = "/etc/kafka-balancer/scoring"
COMPLETED = "COMPLETED"
FAILED_STATES = frozenset({"FAILED", "SUBMISSION_FAILED"})


def _pod(spec: Scoring, run_as_user: int | None) -> dict[str, Any]:
    size = pod_size(spec)
    pod: dict[str, Any] = {
        "cores": size.cores,
        "memory": size.memory,
        # The Spark Operator puts these on the pod and on Spark's container: Pod Security "restricted".
        "podSecurityContext": pod_security_context(run_as_user),
        "securityContext": container_security_context(run_as_user),
    }
    if size.core_request is not None:
        pod["coreRequest"] = size.core_request
    return pod


def application_manifest(settings: SparkSettings, request: ScoringRequest) -> dict[str, Any]:
    name = application_name(request.namespace, request.pool, request.run)
    labels = {
        **MANAGED_BY,
        "kafkabalancer.io/pool": request.pool,
        "kafkabalancer.io/scoring-run": request.run,
    }
    arguments = job_arguments(
        request,
        samples=pool_samples_uri(settings, request),
        topology=f"{INPUT_MOUNT}/topology.json",
        goals=f"{INPUT_MOUNT}/goals.json",
        out=run_out_uri(settings, request),
    )
    pod = _pod(request.spec, settings.run_as_user)
    return {
        "apiVersion": f"{SPARK_GROUP}/{SPARK_VERSION}",
        "kind": "SparkApplication",
        "metadata": {
            "name": name,
            "namespace": request.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(PoolId(request.namespace, request.pool, request.pool_uid))],
        },
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": request.spec.image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": settings.main_application_file,
            "arguments": arguments,
            "sparkVersion": settings.spark_version,
            # No retry by the Spark operator: the next scoring interval is the retry, and a failure
            # must reach the pool's status with its message, not be hidden behind reruns.
            "restartPolicy": {"type": "Never"},
            "timeToLiveSeconds": settings.ttl_seconds,
            "sparkConf": spark_conf(settings),
            "driver": {
                **pod,
                "serviceAccount": settings.service_account,
                "labels": labels,
                "configMaps": [{"name": input_config_map(name), "path": INPUT_MOUNT}],
            },
            "executor": {**pod, "instances": request.spec.executors, "labels": labels},
        },
    }


def input_config_map(application: str) -> str:
    return f"{application}-input"


class SparkApplicationScorer:
    """Create (or find) the run's SparkApplication, wait for a terminal state, read the outputs."""

    engine = "SparkOnKubernetes (SparkApplication)"

    def __init__(
        self,
        kube: KubePort,
        settings: SparkSettings,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self._clock = clock
        self._sleep = sleep

    def score(self, request: ScoringRequest) -> ScoringResult:
        started = self._clock()
        if request.spec.image is None:
            raise InputError("scoring.image is required when scoring.engine is SparkOnKubernetes")
        remote.sync_up(request.samples, pool_samples_uri(self.settings, request))
        manifest = application_manifest(self.settings, request)
        name = manifest["metadata"]["name"]
        owner = PoolId(request.namespace, request.pool, request.pool_uid)
        self.kube.write_config_map(
            request.namespace,
            input_config_map(name),
            owner,
            {"topology.json": json.dumps(request.topology), "goals.json": json.dumps(request.goals)},
        )
        try:
            # Already there: this run was submitted before (a restart, a retry), so it is followed.
            self.kube.create_custom_object(
                SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL, request.namespace, manifest
            )
            state, message = self._wait(request.namespace, name, started)
        finally:
            self.kube.delete_config_map(request.namespace, input_config_map(name))
        where = f"SparkApplication {request.namespace}/{name}"
        if state != COMPLETED:
            raise ScoringError(f"{where} {state}: {message or 'no error message'}")
        result = read_outputs(run_out_uri(self.settings, request), started)
        remote.keep_newest(pool_runs_uri(self.settings, request), 2)
        return result

    def _wait(self, namespace: str, name: str, started: float) -> tuple[str, str]:
        deadline = started + self.settings.timeout_s
        state = ""
        while True:
            app = self.kube.read_custom_object(SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL, namespace, name)
            if app is None:
                raise ScoringError(f"SparkApplication {namespace}/{name} was deleted before it finished")
            app_state = (app.get("status") or {}).get("applicationState") or {}
            state = str(app_state.get("state") or "")
            if state == COMPLETED or state in FAILED_STATES:
                return state, str(app_state.get("errorMessage") or "")
            if self._clock() >= deadline:
                self.kube.delete_custom_object(SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL, namespace, name)
                raise ScoringError(
                    f"SparkApplication {namespace}/{name} did not finish within "
                    f"{age_text(self.settings.timeout_s)} (last state {state or 'none'}); deleted it"
                )
            self._sleep(self.settings.poll_s)
