"""What both ways of running the scoring job on Kubernetes share: the chart's settings, a run's
deterministic name, where its inputs, samples and outputs live in the shared storage, and how a pool's
``scoring.resources`` become Spark's sizes.

The launchers are ``k8s/spark_submit.py`` (Spark's own Kubernetes scheduler, the default) and
``k8s/spark_application.py`` (a Kubeflow Spark Operator's ``SparkApplication``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from kafka_balancer.api import Scoring
from kafka_balancer.kube_quantity import parse_quantity
from kafka_balancer.scoring import remote
from kafka_balancer.scoring.launch import ScoringRequest
from kafka_balancer.scoring.options import JVM_OPTIONS
from kafka_balancer.scoring.s3a import S3Storage, s3a_conf

# Per Spark pod when the pool sets no resources: the job's embedded defaults.
DEFAULT_CORES, DEFAULT_MEMORY = 1, "1g"
# In-cluster: the apiserver's Service, as every pod resolves it through cluster DNS.
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"
# The operator image's user and group (hack/image/build.sh): Spark pods run as it by default, so a
# namespace that enforces Pod Security "restricted" admits them (it wants a non-root uid that the
# kubelet can check).
SPARK_UID = 65532


@dataclass(frozen=True)
class SparkVolume:
    """A PersistentVolumeClaim the operator's pod and the Spark pods mount at the same path: the
    storage, when it is not an object store."""

    claim_name: str
    mount_path: str


@dataclass(frozen=True)
class SparkSettings:
    """The chart's ``scoring`` values, as the operator's environment carries them (k8s/settings.py)."""

    storage: str  # URI the driver and the operator share, e.g. s3a://bucket/kafka-balancer or a path
    service_account: str = "spark"
    main_application_file: str = "local:///opt/kafka-balancer/kafka_balancer/scoring/job.py"
    spark_version: str = field(default_factory=lambda: version("pyspark"))
    ttl_seconds: int = 3600
    timeout_s: float = 1800.0
    poll_s: float = 2.0
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    s3: S3Storage = field(default_factory=S3Storage)  # for s3a:// storage
    master: str = IN_CLUSTER_MASTER  # spark-submit's --master
    volume: SparkVolume | None = None
    # The Spark pods' uid and gid, the operator pod's own; None leaves them to the platform, as
    # OpenShift's restricted-v2 wants (the image's entrypoint names whatever uid it gets).
    run_as_user: int | None = SPARK_UID


def application_name(namespace: str, pool: str, run: str) -> str:
    """Deterministic (a rerun finds the same application) and short enough for the driver pod's name."""
    digest = hashlib.sha256(f"{namespace}/{pool}/{run}".encode()).hexdigest()[:10]
    stem = re.sub(r"[^a-z0-9-]+", "-", pool.lower()).strip("-")[:30].rstrip("-")
    return f"kb-score-{stem}-{digest}"


def spark_memory(quantity: int | str) -> str:
    """A Kubernetes quantity as Spark's memory string (whole MiB; Spark adds its own overhead)."""
    return f"{max(1, math.ceil(parse_quantity(quantity) / 2**20))}m"


@dataclass(frozen=True)
class PodSize:
    """One Spark pod's size: whole cores for Spark, the request as the pool wrote it, memory."""

    cores: int
    core_request: str | None
    memory: str


def pod_size(spec: Scoring) -> PodSize:
    resources = spec.resources
    cores, core_request, memory = DEFAULT_CORES, None, DEFAULT_MEMORY
    if resources is not None and resources.cpu is not None:
        cores = max(1, math.ceil(parse_quantity(resources.cpu)))
        core_request = str(resources.cpu)
    if resources is not None and resources.memory is not None:
        memory = spark_memory(resources.memory)
    return PodSize(cores, core_request, memory)


def _run_as(run_as_user: int | None) -> dict[str, Any]:
    return {} if run_as_user is None else {"runAsUser": run_as_user, "runAsGroup": run_as_user}


def pod_security_context(run_as_user: int | None) -> dict[str, Any]:
    """A Spark pod's ``spec.securityContext``: what Pod Security "restricted" asks of a pod. No
    ``fsGroup``: the storage volume is already written by this uid, and a group change would walk it."""
    return {"runAsNonRoot": True, **_run_as(run_as_user), "seccompProfile": {"type": "RuntimeDefault"}}


def container_security_context(run_as_user: int | None) -> dict[str, Any]:
    """Each Spark container's ``securityContext``: what "restricted" asks of a container. The root
    filesystem stays writable: Spark writes to /tmp (the user's home) and its work directory."""
    return {
        "runAsNonRoot": True,
        **_run_as(run_as_user),
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def spark_conf(settings: SparkSettings) -> dict[str, str]:
    """What every launcher gives the job; the chart's ``sparkConf`` (``settings.spark_conf``) wins."""
    conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
    }
    if settings.storage.startswith("s3a://"):
        conf |= s3a_conf(settings.s3)
    return conf | dict(settings.spark_conf)


def pool_samples_uri(settings: SparkSettings, request: ScoringRequest) -> str:
    return remote.join(settings.storage, "samples", f"{request.namespace}.{request.pool}")


def pool_runs_uri(settings: SparkSettings, request: ScoringRequest) -> str:
    return remote.join(settings.storage, "runs", f"{request.namespace}.{request.pool}")


def run_out_uri(settings: SparkSettings, request: ScoringRequest) -> str:
    return remote.join(pool_runs_uri(settings, request), request.run)
