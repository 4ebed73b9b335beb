"""Pydantic models of the custom resources' specs: the boundary between manifests and the core.

Shared by the CLI (goals files are ``BalancerGoal`` manifests) and the operator. They accept exactly
what ``crds/`` accepts (a unit test compares them), with one deliberate difference: ``poolRef`` is
optional here because the CLI ignores it; the CRD requires it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from kafka_balancer.durations import DURATION_PATTERN, parse_duration
from kafka_balancer.errors import InputError
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.kube_quantity import is_quantity, parse_quantity

GROUP = "kafkabalancer.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"


class PoolRef(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1)


class BalancerGoalSpec(BaseModel):
    """``BalancerGoal.spec``. Integers only: Kubernetes API conventions forbid floats in specs."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    type: Literal[
        "RackAware",
        "ReplicaCapacity",
        "DiskCapacity",
        "NetworkInCapacity",
        "NetworkOutCapacity",
        "CpuCapacity",
        "ReplicaDistribution",
        "LeaderDistribution",
        "TopicReplicaDistribution",
        "DiskDistribution",
        "NetworkInDistribution",
        "NetworkOutDistribution",
        "CpuDistribution",
        "IntraBrokerDiskCapacity",
        "IntraBrokerDiskDistribution",
    ]
    hard: bool | None = None
    priority: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)
    threshold_percent: int | None = Field(default=None, alias="thresholdPercent", ge=0, le=100)
    range_percent: int | None = Field(default=None, alias="rangePercent", ge=0, le=100)
    max_replicas_per_broker: int | None = Field(default=None, alias="maxReplicasPerBroker", ge=1)
    pool_ref: PoolRef | None = Field(default=None, alias="poolRef")

    @model_validator(mode="after")
    def _cross_field(self) -> BalancerGoalSpec:
        # The CRD's CEL rules, with the same messages.
        if self.range_percent is not None and not self.type.endswith("Distribution"):
            raise ValueError("rangePercent applies only to distribution goals (types ending in Distribution)")
        if self.threshold_percent is not None and self.type in ("RackAware", "ReplicaCapacity"):
            raise ValueError("thresholdPercent does not apply to RackAware or ReplicaCapacity")
        if self.threshold_percent == 0 and self.type.endswith("Capacity"):
            raise ValueError(
                "thresholdPercent of a capacity goal must be at least 1 (0 would reject every broker)"
            )
        if self.max_replicas_per_broker is not None and self.type != "ReplicaCapacity":
            raise ValueError("maxReplicasPerBroker applies only to the ReplicaCapacity goal")
        return self

    def to_goal(self, name: str = "") -> GoalSpec:
        return GoalSpec.default(
            GoalType(self.type),
            hard=self.hard,
            priority=self.priority,
            threshold_percent=self.threshold_percent,
            range_percent=self.range_percent,
            max_replicas_per_broker=self.max_replicas_per_broker,
            name=name or None,
        )


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""
    namespace: str | None = None


class BalancerGoal(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_version: Literal["kafkabalancer.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["BalancerGoal"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: BalancerGoalSpec


def _check_quantity(value: int | str) -> int | str:
    if not is_quantity(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 2Ti, 125M, 7500m, 8)")
    return value


# A throttle below this stalls every move (a few bytes a second); the counts' bounds keep one batch
# within what Kafka's controller takes in one request and a person means.
MIN_THROTTLE = 1024
MAX_MOVES_PER_BROKER = 1000
MAX_MOVES = 10000
MAX_REPLICAS_AT_A_TIME = 100

# int-or-string in the CRD; never a float (API conventions).
Quantity = Annotated[int | str, AfterValidator(_check_quantity)]
BrokerId = Annotated[int, Field(ge=0)]
BOOTSTRAP_PATTERN = r"^[^,\s]+:[0-9]{1,5}(,[^,\s]+:[0-9]{1,5})*$"
URL_PATTERN = r"^https?://[^\s]+$"
LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"


def throttle_rate(value: int | str) -> int:
    """A throttle quantity (``50Mi``, ``1000000``, ``1.5M``) in bytes/s, as the CR and the command
    line's --throttle take it; ValueError if it is no quantity or would stall every move."""
    rate = parse_quantity(value)
    if rate < MIN_THROTTLE:
        raise ValueError(f"{value!r} is below 1Ki: every move would stall")
    return int(rate)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class SecretKeyRef(_Spec):
    name: str = Field(min_length=1)
    username_key: str = Field(default="username", alias="usernameKey")
    password_key: str = Field(default="password", alias="passwordKey")


class SecretRef(_Spec):
    name: str = Field(min_length=1)


class Sasl(_Spec):
    mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    secret_ref: SecretKeyRef = Field(alias="secretRef")


class Tls(_Spec):
    secret_ref: SecretRef = Field(alias="secretRef")


class KafkaConnection(_Spec):
    bootstrap_servers: str = Field(
        alias="bootstrapServers", min_length=1, max_length=4096, pattern=BOOTSTRAP_PATTERN
    )
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        default="PLAINTEXT", alias="securityProtocol"
    )
    sasl: Sasl | None = None
    tls: Tls | None = None

    @model_validator(mode="after")
    def _cross_field(self) -> KafkaConnection:
        sasl_protocol = self.security_protocol.startswith("SASL_")
        if sasl_protocol and self.sasl is None:
            raise ValueError(
                "securityProtocol SASL_PLAINTEXT or SASL_SSL needs kafka.sasl (mechanism and secretRef)"
            )
        if self.sasl is not None and not sasl_protocol:
            raise ValueError("kafka.sasl is only used with securityProtocol SASL_PLAINTEXT or SASL_SSL")
        if self.tls is not None and self.security_protocol not in ("SSL", "SASL_SSL"):
            raise ValueError("kafka.tls is only used with securityProtocol SSL or SASL_SSL")
        return self


class CapacityOverride(_Spec):
    broker: BrokerId
    disk: Quantity | None = None
    network_in: Quantity | None = Field(default=None, alias="networkIn")
    network_out: Quantity | None = Field(default=None, alias="networkOut")
    cpu: Quantity | None = None

    @model_validator(mode="after")
    def _some_value(self) -> CapacityOverride:
        if (self.disk, self.network_in, self.network_out, self.cpu) == (None, None, None, None):
            raise ValueError("a capacity override must set at least one of disk, networkIn, networkOut, cpu")
        return self


class Capacity(_Spec):
    """Every broker's capacity; ``disk`` and ``cpu`` may be left to the pool's StatefulSet (its
    volume claims' storage, its Kafka container's cpu)."""

    disk: Quantity | None = None
    network_in: Quantity = Field(alias="networkIn")
    network_out: Quantity = Field(alias="networkOut")
    cpu: Quantity | None = None
    overrides: list[CapacityOverride] = Field(default_factory=list, max_length=1000)

    @model_validator(mode="after")
    def _unique_brokers(self) -> Capacity:
        brokers = [o.broker for o in self.overrides]
        if len(set(brokers)) != len(brokers):
            raise ValueError(f"capacity.overrides: a broker is listed twice in {brokers}")
        return self


def _unique(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate broker id in {values}")
    return values


BrokerSet = Annotated[list[BrokerId], Field(max_length=1000), AfterValidator(_unique)]


class WarmUp(_Spec):
    duration: str = Field(default="30m", pattern=DURATION_PATTERN, min_length=1)
    steps: int = Field(default=4, ge=1, le=20)
    brokers: BrokerSet = Field(default_factory=list)

    @property
    def seconds(self) -> int:
        return parse_duration(self.duration)


class Execution(_Spec):
    throttle_bytes_per_second: Quantity = Field(default="50Mi", alias="throttleBytesPerSecond")
    max_moves_per_broker: int = Field(default=5, ge=1, le=MAX_MOVES_PER_BROKER, alias="maxMovesPerBroker")
    max_moves: int = Field(default=50, ge=1, le=MAX_MOVES, alias="maxMoves")
    replicas_at_a_time: int | None = Field(
        default=None, ge=1, le=MAX_REPLICAS_AT_A_TIME, alias="replicasAtATime"
    )
    order: Literal["Plan", "SmallestFirst"] = "Plan"
    move_timeout_seconds: int = Field(default=600, ge=10, le=86400, alias="moveTimeoutSeconds")
    dead_broker_timeout_seconds: int = Field(default=300, ge=5, le=86400, alias="deadBrokerTimeoutSeconds")
    health_timeout_seconds: int = Field(default=1800, ge=10, le=86400, alias="healthTimeoutSeconds")

    @field_validator("throttle_bytes_per_second")
    @classmethod
    def _throttle_moves_data(cls, value: int | str) -> int | str:
        throttle_rate(value)
        return value

    @model_validator(mode="after")
    def _per_broker_within_total(self) -> Execution:
        if self.max_moves_per_broker > self.max_moves:
            raise ValueError("execution.maxMovesPerBroker must not exceed execution.maxMoves")
        return self


class ScoringResources(_Spec):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class Scoring(_Spec):
    engine: Literal["Embedded", "SparkOnKubernetes"] = "Embedded"
    # SparkSubmit: Spark's own Kubernetes scheduler (k8s/spark_submit.py); SparkApplication: the
    # Kubeflow Spark Operator's resource (k8s/spark_application.py), for clusters that run it.
    launcher: Literal["SparkSubmit", "SparkApplication"] = "SparkSubmit"
    image: str | None = Field(default=None, min_length=1)
    executors: int = Field(default=1, ge=1, le=100)
    resources: ScoringResources | None = None

    @model_validator(mode="after")
    def _image_for_kubernetes(self) -> Scoring:
        if self.engine == "SparkOnKubernetes" and self.image is None:
            raise ValueError("scoring.image is required when scoring.engine is SparkOnKubernetes")
        return self


# spec.prometheus defaults. The queries follow the naming of the Prometheus JMX exporter with the rules
# most Kafka deployments use (Strimzi's example): ``process_cpu_seconds_total`` of the broker JVM and
# the broker-wide ``kafka_server_brokertopicmetrics_*_total`` counters (the series without a ``topic``
# label). Network counts replication too, as the cluster model does: a broker's network in is what
# producers and its followers' fetches bring in, its network out what consumers and other brokers'
# followers fetch.
CPU_QUERY = "sum by ({label}) (rate(process_cpu_seconds_total[{range}]))"
# Each counter is rated and summed on its own: rate() drops the metric name, so one selector over
# both names would give two series with the same labels, which Prometheus refuses.
NETWORK_IN_QUERY = (
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_bytesin_total{{topic=""}}[{range}]))'
    " + "
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_replicationbytesin_total{{topic=""}}[{range}]))'
)
NETWORK_OUT_QUERY = (
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_bytesout_total{{topic=""}}[{range}]))'
    " + "
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_replicationbytesout_total{{topic=""}}[{range}]))'
)
# A Strimzi pod name ends in the broker id: my-cluster-kafka-3, my-cluster-pool-a-3.
BROKER_ID_PATTERN = r"(\d+)$"
# Two scrapes at Prometheus' default 15 s interval, with room: rate() needs two samples in range.
MIN_RANGE_S = 60


class PrometheusQueries(_Spec):
    """PromQL templates; ``{label}`` and ``{range}`` are filled in, other braces are written doubled."""

    cpu: str = Field(default=CPU_QUERY, min_length=1)
    network_in: str = Field(default=NETWORK_IN_QUERY, alias="networkIn", min_length=1)
    network_out: str = Field(default=NETWORK_OUT_QUERY, alias="networkOut", min_length=1)

    @field_validator("cpu", "network_in", "network_out")
    @classmethod
    def _template(cls, query: str) -> str:
        try:
            query.format(label="pod", range="60s")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"not a query template ({exc}); only {{label}} and {{range}} are filled in, "
                "write other braces doubled"
            ) from None
        return query


class TokenSecretRef(_Spec):
    name: str = Field(min_length=1)
    key: str = Field(default="token", min_length=1)


class CaSecretRef(_Spec):
    name: str = Field(min_length=1)
    key: str = Field(default="ca.crt", min_length=1)


class PrometheusQuerying(_Spec):
    """What to ask Prometheus and where, shared by ``spec.prometheus`` and the CLI's settings file."""

    url: str = Field(pattern=URL_PATTERN, max_length=2048)
    broker_label: str = Field(default="pod", alias="brokerLabel", pattern=LABEL_PATTERN)
    broker_id_pattern: str = Field(default=BROKER_ID_PATTERN, alias="brokerIdPattern", min_length=1)
    min_range_seconds: int = Field(default=MIN_RANGE_S, alias="minRangeSeconds", ge=1, le=86400)
    queries: PrometheusQueries = Field(default_factory=PrometheusQueries)

    @field_validator("url")
    @classmethod
    def _no_credentials(cls, url: str) -> str:
        if "@" in urlsplit(url).netloc:
            # Said without the URL: a message is shown in status, and the URL would carry them there.
            raise ValueError("must not carry a user or password (a token goes in bearerTokenSecretRef)")
        return url

    @field_validator("broker_id_pattern")
    @classmethod
    def _one_group(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if compiled.groups < 1:
            raise ValueError("needs a group capturing the broker id, e.g. (\\d+)$")
        return pattern


class Prometheus(PrometheusQuerying):
    """Where broker cpu and network come from (optional; the Admin API has no resource usage);
    credentials come from Secrets in the pool's namespace."""

    bearer_token_secret_ref: TokenSecretRef | None = Field(default=None, alias="bearerTokenSecretRef")
    ca_secret_ref: CaSecretRef | None = Field(default=None, alias="caSecretRef")

    @model_validator(mode="after")
    def _ca_with_https(self) -> Prometheus:
        if self.ca_secret_ref is not None and not self.url.startswith("https://"):
            raise ValueError("prometheus.caSecretRef is only used with an https:// url")
        if self.bearer_token_secret_ref is not None and not self.url.startswith("https://"):
            raise ValueError("prometheus.bearerTokenSecretRef: a bearer token is sent over https:// only")
        return self


class SelfHealing(_Spec):
    """What the operator repairs by itself: hard goals (mode Manual) and failed brokers (every mode)."""

    # A plan planned with the hard goals alone, made while one of them is violated, runs unapproved.
    repair_hard_goals: bool = Field(default=False, alias="repairHardGoals")
    # A pool broker missing from the cluster for brokerFailureSeconds is failed and its replicas are
    # re-homed, in mode Manual too without approval.
    enabled: bool = False
    broker_failure_seconds: int = Field(default=1800, ge=10, le=604800, alias="brokerFailureSeconds")
    # The guard: more failed brokers than either bound at once is a larger outage, not a broker to replace.
    max_failed_brokers: int = Field(default=10, ge=1, le=1000, alias="maxFailedBrokers")
    max_failed_percent: int = Field(default=40, ge=1, le=100, alias="maxFailedPercent")


Mode = Literal["Auto", "Manual", "DryRun"]

# A StatefulSet's name is a DNS subdomain; its pods' names add "-<ordinal>" within 63 characters.
STATEFUL_SET_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class StatefulSetRef(_Spec):
    """The StatefulSet, in the pool's namespace, whose pods are the pool's brokers: the pod of ordinal
    ``n`` is broker ``brokerIdOffset + n``. A scale-down of it waits until its brokers are drained."""

    name: str = Field(min_length=1, max_length=52, pattern=STATEFUL_SET_NAME_PATTERN)
    broker_id_offset: int = Field(default=0, ge=0, le=2_000_000_000, alias="brokerIdOffset")

    def broker_id(self, ordinal: int) -> int:
        return self.broker_id_offset + ordinal


# Strimzi names: Kubernetes object names, and listener names of lower-case letters and digits.
STRIMZI_NAME_PATTERN = r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$"


class StrimziRef(_Spec):
    """The Strimzi ``Kafka``, in the pool's namespace, whose brokers the pool balances: bootstrap
    servers and cluster CA from the Kafka, credentials from the ``KafkaUser``'s Secret, capacities
    and scale-downs from its ``KafkaNodePool``s (every broker pool of the Kafka when none is named)."""

    kafka: str = Field(min_length=1, max_length=253, pattern=STRIMZI_NAME_PATTERN)
    listener: str = Field(min_length=1, max_length=11, pattern=r"^[a-z0-9]{1,11}$")
    user: str | None = Field(default=None, min_length=1, max_length=253, pattern=STRIMZI_NAME_PATTERN)
    node_pools: list[Annotated[str, Field(min_length=1, max_length=253, pattern=STRIMZI_NAME_PATTERN)]] = (
        Field(default_factory=list, alias="nodePools", max_length=100)
    )


class BrokerPoolSpec(_Spec):
    """``BrokerPool.spec``. ``mode`` defaults to Manual: nothing moves until a plan is approved."""

    mode: Mode = "Manual"
    paused: bool = False
    detection_interval_seconds: int = Field(default=60, ge=10, le=86400, alias="detectionIntervalSeconds")
    kafka: KafkaConnection | None = None
    strimzi: StrimziRef | None = None
    capacity: Capacity
    warm_up: WarmUp = Field(default_factory=WarmUp, alias="warmUp")
    drain: BrokerSet = Field(default_factory=list)
    demote: BrokerSet = Field(default_factory=list)
    execution: Execution = Field(default_factory=Execution)
    excluded_topics: list[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default_factory=list, alias="excludedTopics", max_length=100
    )
    scoring: Scoring = Field(default_factory=Scoring)
    prometheus: Prometheus | None = None
    self_healing: SelfHealing = Field(default_factory=SelfHealing, alias="selfHealing")
    stateful_set: StatefulSetRef | None = Field(default=None, alias="statefulSet")

    @model_validator(mode="after")
    def _cross_field(self) -> BrokerPoolSpec:
        if (self.kafka is None) == (self.strimzi is None):
            raise ValueError(
                "exactly one of spec.kafka (the connection, given by hand) and spec.strimzi (a Strimzi "
                "Kafka to read it from) is required"
            )
        if self.strimzi is not None and self.stateful_set is not None:
            raise ValueError(
                "spec.statefulSet and spec.strimzi exclude each other: Strimzi scales its brokers "
                "through its KafkaNodePools"
            )
        unread = self.stateful_set is None and self.strimzi is None
        if unread and (self.capacity.disk is None or self.capacity.cpu is None):
            raise ValueError(
                "capacity.disk and capacity.cpu are required unless spec.statefulSet or spec.strimzi "
                "names where to read them from"
            )
        if set(self.drain) & set(self.warm_up.brokers):
            raise ValueError(
                "a broker cannot be both drained (spec.drain) and warmed up as new (spec.warmUp.brokers)"
            )
        if self.self_healing.broker_failure_seconds < self.detection_interval_seconds:
            raise ValueError(
                "selfHealing.brokerFailureSeconds must not be shorter than detectionIntervalSeconds "
                "(a missing broker is noticed at a detection pass)"
            )
        return self

    def connection(self) -> KafkaConnection:
        """``kafka``, given or read from ``strimzi`` (a pass resolves it first: reconcile/strimzi.py)."""
        if self.kafka is None:
            raise InputError("spec.strimzi: the Kafka connection was not read from Strimzi's resources")
        return self.kafka


class BrokerPool(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_version: Literal["kafkabalancer.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["BrokerPool"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: BrokerPoolSpec
