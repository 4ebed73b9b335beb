"""Every setting of the operator process in one place: the flags of ``kafka-balancer run``, the
``KAFKA_BALANCER_*`` environment variables the chart sets, and the timings the loops run on.

Read once at startup (:meth:`OperatorSettings.load`) and handed to the services through kopf's memo;
nothing else in the operator reads the environment. What a pool can choose lives in its spec instead.
docs/install.md's "Operator settings" lists them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_balancer.errors import InputError
from kafka_balancer.k8s.scored_loads import ScoringSchedule
from kafka_balancer.k8s.spark_runs import SparkSettings, SparkVolume
from kafka_balancer.scoring.s3a import S3Storage

ENV_PREFIX = "KAFKA_BALANCER_"
DEFAULT_STATE_DIR = Path("/tmp/kafka-balancer")
DEFAULT_PEERING = "kafka-balancer"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Timings:
    """How often the loops look and how long they wait; not configurable, documented here."""

    # Between passes a pool's daemon re-checks for a spec change or an approval this often.
    wake_s: float = 2.0
    # ... and reads its Kafka cluster's live brokers at most this often (one DescribeCluster on a
    # client kept per pool), waiting at most as long for the answer: a broker that joins or leaves
    # wakes the pass, instead of waiting for spec.detectionIntervalSeconds.
    broker_check_s: float = 5.0
    # Backoff after Kafka could not be reached: 10 s, 20 s, 40 s, ... at most 5 min.
    backoff_s: float = 10.0
    backoff_max_s: float = 300.0
    # The execution's state is mirrored into <pool>-execution at most this often while moves run
    # (every commit would be a ConfigMap write per second).
    mirror_every_s: float = 5.0
    # A write of the execution state that must land before Kafka is changed is retried through an
    # apiserver outage after 0.5 s, doubling to 4 s, for as long as the pool's lease holds.
    state_retry_first_s: float = 0.5
    state_retry_max_s: float = 4.0
    # The executor polls Kafka for the progress of its moves this often.
    execution_poll_s: float = 2.0
    # A deleted pool waits this long for its execution thread to stop before kopf retries.
    deletion_wait_s: float = 120.0

    # The execution lease's duration: a holder that cannot renew for this long (less a 2 s margin)
    # stops writing to Kafka; a standby takes the pool over after seeing no renewal for this long.
    lease_duration_s: int = 15

    def backoff(self, retry: int) -> float:
        return min(self.backoff_max_s, self.backoff_s * 2.0**retry)


@dataclass(frozen=True)
class Limits:
    """What one operator process runs at once, whatever its pools' specs say
    (``KAFKA_BALANCER_MAX_EXECUTIONS``, ``_MAX_SYNCS``, ``_MAX_EMBEDDED_JOBS``). A pass beyond them
    waits: a sync for a worker, an execution for the next pass (its status says why), an embedded
    scoring run for the running one (each is a JVM of its own)."""

    executions: int = 4
    syncs: int = 8
    embedded_jobs: int = 1


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class WebhookSettings:
    """The scale-down webhook (``KAFKA_BALANCER_WEBHOOK_PORT``, ``_CERT_DIR``, ``_CONFIGURATION``):
    where it listens, the folder of its serving certificate (``tls.crt``, ``tls.key``), and the
    ValidatingWebhookConfiguration the operator scopes to the pools' StatefulSets."""

    port: int
    cert_dir: Path
    configuration: str
    # KAFKA_BALANCER_WEBHOOK_ADDRESS: every interface in a pod, which the chart's Service reaches.
    address: str = "0.0.0.0"


@dataclass(frozen=True)
class OperatorSettings:
    """The operator process's settings (flags of ``kafka-balancer run`` and the environment)."""

    kubeconfig: Path | None = None  # --kubeconfig; None: in-cluster
    namespaces: tuple[str, ...] = ()  # --namespace (repeatable); empty: every namespace
    peering: str = DEFAULT_PEERING  # --peering: kopf's peering object
    standalone: bool = False  # --standalone: no peering (a single local run only)
    # --priority; None: the start time in ms. Equal priorities make kopf freeze every replica, and a
    # dead replica's peering record lingers for its lifetime, so a fresh process must outrank it.
    priority: int | None = None
    # --peering-lifetime: seconds a silent replica still counts as alive in kopf's peering (kopf's
    # default); executions are fenced by their own lease whatever this is.
    peering_lifetime_s: int = 60
    liveness: str | None = None  # --liveness endpoint
    metrics_port: int | None = None  # --metrics-port
    log_format: str = "text"  # --log-format: text or json
    log_level: str = "info"  # --log-level: debug, info or warning
    state_dir: Path = DEFAULT_STATE_DIR  # --state-dir: execution state files, TLS keys, samples
    scoring: ScoringSchedule = field(default_factory=ScoringSchedule)  # KAFKA_BALANCER_SCORING_*
    # KAFKA_BALANCER_SCORING_STORAGE, _SCORING_VOLUME_CLAIM/_MOUNT, KAFKA_BALANCER_SPARK_*
    spark: SparkSettings | None = None
    timings: Timings = field(default_factory=Timings)
    # KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS: pools may send SASL credentials over SASL_PLAINTEXT.
    allow_cleartext_credentials: bool = False
    # KAFKA_BALANCER_NAMESPACE (the chart: the release's): where the Kafka clusters' execution
    # leases live, one per cluster, whatever namespaces its pools are in.
    namespace: str = DEFAULT_NAMESPACE
    limits: Limits = field(default_factory=Limits)
    webhook: WebhookSettings | None = None  # None: StatefulSet scale-downs are not guarded

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> OperatorSettings:
        """The settings the environment carries; the flags of ``kafka-balancer run`` go over them
        (``dataclasses.replace``). :class:`InputError` names a variable that cannot be read."""
        return cls(
            scoring=scoring_schedule(env),
            spark=spark_settings(env),
            allow_cleartext_credentials=_flag(env, "ALLOW_CLEARTEXT_CREDENTIALS"),
            namespace=env.get(ENV_PREFIX + "NAMESPACE") or DEFAULT_NAMESPACE,
            limits=limits(env),
            webhook=webhook_settings(env),
        )


def webhook_settings(env: Mapping[str, str]) -> WebhookSettings | None:
    """All three of ``KAFKA_BALANCER_WEBHOOK_PORT``, ``_CERT_DIR`` and ``_CONFIGURATION``, or none."""
    names = ("WEBHOOK_PORT", "WEBHOOK_CERT_DIR", "WEBHOOK_CONFIGURATION")
    given = {name: env.get(ENV_PREFIX + name, "") for name in names}
    if not any(given.values()):
        return None
    missing = [ENV_PREFIX + name for name, value in given.items() if not value]
    if missing:
        raise InputError(f"{', '.join(missing)}: required with the other webhook settings")
    port = int(_number(env, "WEBHOOK_PORT", int, 0))
    if not 1 <= port <= 65535:
        raise InputError(f"{ENV_PREFIX}WEBHOOK_PORT: a port from 1 to 65535, got {port}")
    return WebhookSettings(
        port,
        Path(given["WEBHOOK_CERT_DIR"]),
        given["WEBHOOK_CONFIGURATION"],
        env.get(ENV_PREFIX + "WEBHOOK_ADDRESS") or "0.0.0.0",
    )


def limits(env: Mapping[str, str]) -> Limits:
    """``KAFKA_BALANCER_MAX_EXECUTIONS``, ``_MAX_SYNCS``, ``_MAX_EMBEDDED_JOBS``: whole numbers from 1."""
    default = Limits()
    found = {
        name: int(_number(env, f"MAX_{name.upper()}", int, getattr(default, name)))
        for name in ("executions", "syncs", "embedded_jobs")
    }
    for name, value in found.items():
        if value < 1:
            raise InputError(f"{ENV_PREFIX}MAX_{name.upper()}: at least 1, got {value}")
    return Limits(**found)


def _flag(env: Mapping[str, str], name: str) -> bool:
    text = env.get(ENV_PREFIX + name, "") or "false"
    if text not in ("true", "false"):
        raise InputError(f"{ENV_PREFIX}{name}: expected true or false, got {text!r}")
    return text == "true"


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float], default: float) -> float:
    text = env.get(ENV_PREFIX + name) or ""
    if not text:
        return default
    try:
        return float(kind(text))
    except ValueError:
        raise InputError(f"{ENV_PREFIX}{name}: {text!r} is not a number") from None


def scoring_schedule(env: Mapping[str, str]) -> ScoringSchedule:
    """``KAFKA_BALANCER_SCORING_INTERVAL_SECONDS``, ``_WINDOW_MS``, ``_WINDOWS`` (chart: ``scoring.*``)."""
    default = ScoringSchedule()
    return ScoringSchedule(
        interval_s=float(_number(env, "SCORING_INTERVAL_SECONDS", float, default.interval_s)),
        window_ms=int(_number(env, "SCORING_WINDOW_MS", int, default.window_ms)),
        windows=int(_number(env, "SCORING_WINDOWS", int, default.windows)),
    )


def spark_settings(env: Mapping[str, str]) -> SparkSettings | None:
    """The chart's ``scoring.*`` values for SparkOnKubernetes; None when no storage is configured
    (then SparkOnKubernetes pools cannot be scored)."""
    claim = env.get(ENV_PREFIX + "SCORING_VOLUME_CLAIM", "")
    mount = env.get(ENV_PREFIX + "SCORING_VOLUME_MOUNT", "")
    if bool(claim) != bool(mount):
        raise InputError(f"{ENV_PREFIX}SCORING_VOLUME_CLAIM and {ENV_PREFIX}SCORING_VOLUME_MOUNT go together")
    volume = SparkVolume(claim, mount) if claim else None
    # A volume is the storage unless another one (an object store) is named.
    storage = env.get(ENV_PREFIX + "SCORING_STORAGE", "") or mount
    if not storage:
        return None
    defaults = SparkSettings(storage)
    try:
        conf = json.loads(env.get(ENV_PREFIX + "SPARK_CONF", "") or "{}")
        spark_conf = {str(k): str(v) for k, v in dict(conf).items()}
    except (ValueError, TypeError) as err:
        raise InputError(f"{ENV_PREFIX}SPARK_CONF: {err}") from None
    return SparkSettings(
        storage=storage,
        service_account=env.get(ENV_PREFIX + "SPARK_SERVICE_ACCOUNT") or defaults.service_account,
        main_application_file=env.get(ENV_PREFIX + "SPARK_MAIN_FILE") or defaults.main_application_file,
        spark_version=env.get(ENV_PREFIX + "SPARK_VERSION") or defaults.spark_version,
        ttl_seconds=int(_number(env, "SPARK_TTL_SECONDS", int, defaults.ttl_seconds)),
        timeout_s=float(_number(env, "SPARK_TIMEOUT_SECONDS", float, defaults.timeout_s)),
        spark_conf=spark_conf,
        s3=s3_storage(env),
        master=env.get(ENV_PREFIX + "SPARK_MASTER") or defaults.master,
        volume=volume,
        run_as_user=_run_as_user(env, defaults.run_as_user),
    )


def _run_as_user(env: Mapping[str, str], default: int | None) -> int | None:
    """``KAFKA_BALANCER_SPARK_RUN_AS_USER`` (chart: ``podSecurityContext.runAsUser``): the Spark pods'
    uid; set and empty when the platform assigns the uid (OpenShift), unset for the image's own."""
    name = ENV_PREFIX + "SPARK_RUN_AS_USER"
    if name not in env:
        return default
    text = env[name]
    if not text:
        return None
    if not text.isdigit() or int(text) == 0:
        raise InputError(f"{name}: expected a non-root uid (a positive whole number) or none, got {text!r}")
    return int(text)


def s3_storage(env: Mapping[str, str]) -> S3Storage:
    """``KAFKA_BALANCER_S3_ENDPOINT``, ``_REGION``, ``_PATH_STYLE`` and ``KAFKA_BALANCER_STORAGE_SECRET``
    (chart: ``scoring.s3.*``, ``scoring.storageSecret``). The operator's own S3 client (pyarrow) reads
    the same endpoint and the Secret's keys from the AWS variables the chart sets beside them."""
    default = S3Storage()
    path_style = env.get(ENV_PREFIX + "S3_PATH_STYLE", "") or str(default.path_style).lower()
    if path_style not in ("true", "false"):
        raise InputError(f"{ENV_PREFIX}S3_PATH_STYLE: expected true or false, got {path_style!r}")
    return S3Storage(
        endpoint=env.get(ENV_PREFIX + "S3_ENDPOINT", ""),
        region=env.get(ENV_PREFIX + "S3_REGION") or default.region,
        path_style=path_style == "true",
        secret=env.get(ENV_PREFIX + "STORAGE_SECRET", ""),
    )
