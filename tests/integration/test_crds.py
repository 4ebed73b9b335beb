"""The CRDs in crds/ on the real apiserver: valid CRs round-trip, invalid ones are refused with a message a
user understands, and the pydantic models (api.py) give the same verdict as the apiserver."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from tests.support import readme

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer_dev.localbed import kube

CRDS = Path(__file__).resolve().parents[2] / "crds"
NAMESPACE = "kb-test-crds"
POOL_SPEC: dict[str, Any] = {
    "kafka": {"bootstrapServers": "kafka-0.kafka:9092,kafka-1.kafka:9092"},
    "capacity": {"disk": "2Ti", "networkIn": "125M", "networkOut": 125000000, "cpu": "7500m"},
}


def manifest(kind: str, name: str, spec: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": kind,
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec,
        }
    )


@pytest.fixture(scope="module")
def crds(kube_bed: kube.KubeBed) -> Iterator[None]:
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(CRDS))
    assert applied.returncode == 0, applied.stderr
    for crd in ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io"):
        kube.wait_established(kube_bed, crd)
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_a_pool_and_its_goals_are_accepted_and_read_back_with_defaults(
    kube_bed: kube.KubeBed, crds: None
) -> None:
    pool = kube_bed.kubectl(
        "create", "-f", "-", stdin=manifest("BrokerPool", "main", {**POOL_SPEC, "drain": [3], "demote": [1]})
    )
    goal = kube_bed.kubectl(
        "create",
        "-f",
        "-",
        stdin=manifest(
            "BalancerGoal",
            "disk",
            {"type": "DiskDistribution", "rangePercent": 15, "priority": 70, "poolRef": {"name": "main"}},
        ),
    )
    assert pool.returncode == 0, pool.stderr
    assert goal.returncode == 0, goal.stderr

    stored = json.loads(kube_bed.kubectl("get", "bp", "main", "-n", NAMESPACE, "-o", "json").stdout)
    spec = stored["spec"]
    assert spec["mode"] == "Manual"
    assert spec["detectionIntervalSeconds"] == 60
    assert spec["warmUp"] == {"duration": "30m", "steps": 4}
    assert spec["execution"] == {
        "maxMoves": 50,
        "maxMovesPerBroker": 5,
        "throttleBytesPerSecond": "50Mi",
        "order": "Plan",
        "moveTimeoutSeconds": 600,
        "deadBrokerTimeoutSeconds": 300,
        "healthTimeoutSeconds": 1800,
    }
    assert spec["kafka"]["securityProtocol"] == "PLAINTEXT"
    assert spec["drain"] == [3]
    assert spec["demote"] == [1]
    # What the apiserver stores (defaults filled in) is what the operator parses.
    parsed = BrokerPoolSpec.model_validate(spec)
    assert parsed.model_dump(by_alias=True, exclude_none=True) == {
        **spec,
        "capacity": {**spec["capacity"], "overrides": []},
        "warmUp": {**spec["warmUp"], "brokers": []},
        "excludedTopics": [],
    }

    listed = kube_bed.kubectl("get", "bg", "-n", NAMESPACE)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "TYPE", "HARD", "PRIORITY", "SATISFIED", "WORST", "DEVIATION", "AGE"]
    # Hard, Satisfied and Worst Deviation are empty until set (the operator writes status).
    assert row.split()[:3] == ["disk", "DiskDistribution", "70"]
    pools = kube_bed.kubectl("get", "bp", "-n", NAMESPACE).stdout.splitlines()
    assert pools[0].split() == ["NAME", "MODE", "BROKERS", "BALANCED", "MOVES", "REMAINING", "READY", "AGE"]


GOAL_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-type", {"type": "Balanced", "poolRef": {"name": "p"}}, 'Unsupported value: "Balanced"'),
    (
        "range-150",
        {"type": "DiskDistribution", "rangePercent": 150, "poolRef": {"name": "p"}},
        "spec.rangePercent in body should be less than or equal to 100",
    ),
    (
        "float-threshold",
        {"type": "DiskCapacity", "thresholdPercent": 80.5, "poolRef": {"name": "p"}},
        "spec.thresholdPercent in body must be of type integer",
    ),
    (
        "range-on-capacity",
        {"type": "DiskCapacity", "rangePercent": 10, "poolRef": {"name": "p"}},
        "rangePercent applies only to distribution goals",
    ),
    (
        "zero-capacity-threshold",
        {"type": "CpuCapacity", "thresholdPercent": 0, "poolRef": {"name": "p"}},
        "thresholdPercent of a capacity goal must be at least 1",
    ),
    (
        "threshold-on-rack",
        {"type": "RackAware", "thresholdPercent": 50, "poolRef": {"name": "p"}},
        "thresholdPercent does not apply to RackAware or ReplicaCapacity",
    ),
    (
        "max-replicas-on-disk",
        {"type": "DiskDistribution", "maxReplicasPerBroker": 10, "poolRef": {"name": "p"}},
        "maxReplicasPerBroker applies only to the ReplicaCapacity goal",
    ),
    ("no-pool", {"type": "RackAware"}, "spec.poolRef: Required value"),
]

POOL_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "no-disk",
        {"capacity": {"networkIn": "100M", "networkOut": "100M", "cpu": 8}},
        "capacity.disk and capacity.cpu are required unless spec.statefulSet or spec.strimzi names where",
    ),
    (
        "kafka-and-strimzi",
        {"strimzi": {"kafka": "main", "listener": "tls"}},
        "exactly one of spec.kafka (the connection, given by hand) and spec.strimzi",
    ),
    (
        "strimzi-and-set",
        {"kafka": None, "strimzi": {"kafka": "main", "listener": "tls"}, "statefulSet": {"name": "kafka"}},
        "spec.statefulSet and spec.strimzi exclude each other",
    ),
    (
        "strimzi-listener",
        {"kafka": None, "strimzi": {"kafka": "main", "listener": "TLS"}},
        "spec.strimzi.listener in body should match",
    ),
    ("long-set", {"statefulSet": {"name": "k" * 53}}, "spec.statefulSet.name: Too long"),
    (
        "float-disk",
        {"capacity": {**POOL_SPEC["capacity"], "disk": 1.5}},
        "spec.capacity.disk in body must be of type integer,string",
    ),
    ("bad-quantity", {"capacity": {**POOL_SPEC["capacity"], "cpu": "8 cores"}}, "spec.capacity.cpu in body"),
    (
        "moves",
        {"execution": {"maxMoves": 2, "maxMovesPerBroker": 3}},
        "execution.maxMovesPerBroker must not exceed execution.maxMoves",
    ),
    (
        "steps-of-none",
        {"execution": {"replicasAtATime": 0}},
        "spec.execution.replicasAtATime in body should be greater than or equal to 1",
    ),
    (
        "prometheus-ca-over-http",
        {"prometheus": {"url": "http://prom:9090", "caSecretRef": {"name": "prom"}}},
        "prometheus.caSecretRef is only used with an https:// url",
    ),
    (
        "token-over-http",
        {"prometheus": {"url": "http://prom:9090", "bearerTokenSecretRef": {"name": "prom"}}},
        "prometheus.bearerTokenSecretRef: a bearer token is sent over https:// only",
    ),
    (
        "prometheus-url-with-password",
        {"prometheus": {"url": "https://reader:hunter2@prom:9090"}},
        "prometheus.url must not carry a user or password",
    ),
    (
        "failure-before-detection",
        {"detectionIntervalSeconds": 120, "selfHealing": {"enabled": True, "brokerFailureSeconds": 60}},
        "selfHealing.brokerFailureSeconds must not be shorter than detectionIntervalSeconds",
    ),
    (
        "guard-share-zero",
        {"selfHealing": {"maxFailedPercent": 0}},
        "spec.selfHealing.maxFailedPercent in body should be greater than or equal to 1",
    ),
    (
        "throttle-stalls",
        {"execution": {"throttleBytesPerSecond": "500m"}},
        "execution.throttleBytesPerSecond must be at least 1Ki: below it every move stalls",
    ),
    (
        "throttle-zero",
        {"execution": {"throttleBytesPerSecond": 0}},
        "execution.throttleBytesPerSecond must be at least 1Ki: below it every move stalls",
    ),
    (
        "batch-unbounded",
        {"execution": {"maxMoves": 20000}},
        "spec.execution.maxMoves in body should be less than or equal to 10000",
    ),
    (
        "move-timeout-too-short",
        {"execution": {"moveTimeoutSeconds": 1}},
        "spec.execution.moveTimeoutSeconds in body should be greater than or equal to 10",
    ),
    (
        "order-unknown",
        {"execution": {"order": "BiggestFirst"}},
        'spec.execution.order: Unsupported value: "BiggestFirst": supported values: "Plan", "SmallestFirst"',
    ),
    ("drain-twice", {"drain": [1, 1]}, "spec.drain[1]: Duplicate value: 1"),
    ("demote-twice", {"demote": [2, 2]}, "spec.demote[1]: Duplicate value: 2"),
    ("demote-negative", {"demote": [-1]}, "spec.demote[0] in body should be greater than or equal to 0"),
    (
        "drain-and-warm",
        {"drain": [1], "warmUp": {"brokers": [1]}},
        "a broker cannot be both drained (spec.drain) and warmed up as new (spec.warmUp.brokers)",
    ),
    (
        "sasl-without-secret",
        {"kafka": {"bootstrapServers": "a:9092", "securityProtocol": "SASL_SSL"}},
        "securityProtocol SASL_PLAINTEXT or SASL_SSL needs kafka.sasl",
    ),
    (
        "spark-without-image",
        {"scoring": {"engine": "SparkOnKubernetes"}},
        "scoring.image is required when scoring.engine is SparkOnKubernetes",
    ),
    ("too-often", {"detectionIntervalSeconds": 5}, "should be greater than or equal to 10"),
    ("bad-mode", {"mode": "Yolo"}, 'Unsupported value: "Yolo"'),
    ("no-steps", {"warmUp": {"steps": 0}}, "spec.warmUp.steps in body should be greater than or equal to 1"),
    ("bad-bootstrap", {"kafka": {"bootstrapServers": "kafka-0"}}, "spec.kafka.bootstrapServers in body"),
    ("prometheus-no-url", {"prometheus": {"brokerLabel": "pod"}}, "spec.prometheus.url: Required value"),
    (
        "prometheus-bad-url",
        {"prometheus": {"url": "prometheus:9090"}},
        "spec.prometheus.url in body should match",
    ),
    (
        "prometheus-bad-label",
        {"prometheus": {"url": "http://p:9090", "brokerLabel": "pod-name"}},
        "brokerLabel",
    ),
]


def test_prometheus_secret_references_default_their_keys(kube_bed: kube.KubeBed, crds: None) -> None:
    refs = {"bearerTokenSecretRef": {"name": "prom"}, "caSecretRef": {"name": "prom-ca"}}
    spec = {**POOL_SPEC, "prometheus": {"url": "https://prom.monitoring:9090", **refs}}
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BrokerPool", "secured", spec))
    assert created.returncode == 0, created.stderr

    stored = json.loads(kube_bed.kubectl("get", "bp", "secured", "-n", NAMESPACE, "-o", "json").stdout)
    prometheus = stored["spec"]["prometheus"]
    assert prometheus["bearerTokenSecretRef"] == {"name": "prom", "key": "token"}
    assert prometheus["caSecretRef"] == {"name": "prom-ca", "key": "ca.crt"}
    parsed = BrokerPoolSpec.model_validate(stored["spec"]).prometheus
    assert parsed is not None and parsed.ca_secret_ref is not None
    assert parsed.ca_secret_ref.key == "ca.crt"


@pytest.mark.parametrize(("name", "spec", "message"), GOAL_CASES)
def test_an_invalid_goal_is_refused_with_a_message_and_pydantic_agrees(
    kube_bed: kube.KubeBed, crds: None, name: str, spec: dict[str, Any], message: str
) -> None:
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BalancerGoal", name, spec))

    assert created.returncode != 0
    assert message in created.stderr
    assert kube_bed.kubectl("get", "bg", name, "-n", NAMESPACE).returncode != 0
    if name != "no-pool":  # poolRef is optional for the CLI (see api.py)
        with pytest.raises(ValidationError):
            BalancerGoalSpec.model_validate(spec)


@pytest.mark.parametrize(("name", "spec", "message"), POOL_CASES)
def test_an_invalid_pool_is_refused_with_a_message_and_pydantic_agrees(
    kube_bed: kube.KubeBed, crds: None, name: str, spec: dict[str, Any], message: str
) -> None:
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BrokerPool", name, {**POOL_SPEC, **spec}))

    assert created.returncode != 0
    assert message in created.stderr
    with pytest.raises(ValidationError):
        BrokerPoolSpec.model_validate({**POOL_SPEC, **spec})


def test_a_pool_naming_its_stateful_set_may_leave_disk_and_cpu_to_it(
    kube_bed: kube.KubeBed, crds: None
) -> None:
    spec = {
        **POOL_SPEC,
        "capacity": {"networkIn": "100M", "networkOut": "100M"},
        "statefulSet": {"name": "kafka"},
    }
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BrokerPool", "from-set", spec))
    assert created.returncode == 0, created.stderr
    BrokerPoolSpec.model_validate(spec)
    got = kube_bed.kubectl("get", "bp", "from-set", "-n", NAMESPACE, "-o", "jsonpath={.spec.statefulSet}")
    assert json.loads(got.stdout) == {"name": "kafka", "brokerIdOffset": 0}
    assert kube_bed.kubectl("delete", "bp", "from-set", "-n", NAMESPACE).returncode == 0


def test_a_pool_name_longer_than_a_label_value_is_refused(kube_bed: kube.KubeBed, crds: None) -> None:
    name = "p" * 64
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BrokerPool", name, POOL_SPEC))
    assert created.returncode != 0
    assert "a BrokerPool's name must be at most 63 characters" in created.stderr, created.stderr

    longest = "p" * 63
    created = kube_bed.kubectl("create", "-f", "-", stdin=manifest("BrokerPool", longest, POOL_SPEC))
    assert created.returncode == 0, created.stderr
    assert kube_bed.kubectl("delete", "bp", longest, "-n", NAMESPACE).returncode == 0


def test_the_chart_ships_exactly_the_crds_of_crds_dir() -> None:
    chart_crds = CRDS.parent / "charts" / "kafka-balancer" / "files" / "crds"
    assert sorted(p.name for p in chart_crds.glob("*.yaml")) == sorted(p.name for p in CRDS.glob("*.yaml"))
    for crd in sorted(CRDS.glob("*.yaml")):
        assert (chart_crds / crd.name).read_bytes() == crd.read_bytes(), (
            f"charts/kafka-balancer/files/crds/{crd.name} differs from crds/{crd.name}; "
            "copy crds/*.yaml into the chart"
        )


@pytest.mark.parametrize(
    "manifest",
    readme.manifests() + readme.example_manifests(),
    ids=lambda m: f"{m['kind']}/{m['metadata']['name']}",
)
def test_the_readme_manifests_are_accepted_by_the_apiserver(
    kube_bed: kube.KubeBed, crds: None, manifest: dict[str, Any]
) -> None:
    placed = {**manifest, "metadata": {**manifest["metadata"], "namespace": NAMESPACE}}
    applied = kube_bed.kubectl("apply", "--dry-run=server", "-f", "-", stdin=json.dumps(placed))
    assert applied.returncode == 0, applied.stderr
