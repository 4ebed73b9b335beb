"""The operator's scoring plumbing without Spark: SparkApplication manifests, background scheduling,
sample retention, merging scored loads with the latest metadata, the job's input documents."""

from __future__ import annotations

import math
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec, Scoring
from kafka_balancer.errors import InputError, ScoringError
from kafka_balancer.formats.goals_file import parse_goals
from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.k8s.scored_loads import BackgroundScoring, ScoringSchedule, pass_times, prune
from kafka_balancer.k8s.settings import OperatorSettings, spark_settings
from kafka_balancer.k8s.source import goals_document, merge_loads, topology_document
from kafka_balancer.k8s.spark_application import application_manifest
from kafka_balancer.k8s.spark_runs import SparkSettings, application_name, spark_memory
from kafka_balancer.kafka.collector import Observation, PartitionInfo
from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.kafka.snapshot_builder import BrokerInfo
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES
from kafka_balancer.scoring.launch import ScoringRequest, ScoringResult, error_line
from kafka_balancer.scoring.s3a import CREDENTIALS_PROVIDER, S3Storage, s3a_conf

POOL_SPEC: dict[str, Any] = {
    "kafka": {"bootstrapServers": "kafka-0:9092"},
    "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": "8"},
    "drain": [2],
}


def request(run: str = "0001700000000000", **scoring: Any) -> ScoringRequest:
    return ScoringRequest(
        namespace="team-a",
        pool="Main.Pool",
        pool_uid="uid-1",
        run=run,
        samples=Path("/state/samples/team-a.main"),
        topology={"brokers": []},
        goals={"apiVersion": "v1", "kind": "List", "items": []},
        window_ms=300_000,
        windows=3,
        spec=Scoring.model_validate({"engine": "SparkOnKubernetes", "image": "img:1", **scoring}),
    )


# -- the SparkApplication --------------------------------------------------------------------------


def test_application_names_are_deterministic_short_and_dns_safe() -> None:
    name = application_name("team-a", "Main.Pool", "0001700000000000")
    assert name == application_name("team-a", "Main.Pool", "0001700000000000")
    assert name != application_name("team-a", "Main.Pool", "0001700000060000")
    assert name != application_name("team-b", "Main.Pool", "0001700000000000")
    assert name.startswith("kb-score-main-pool-")
    assert len(application_name("ns", "p" * 250, "r")) <= 50


def test_the_manifest_carries_owner_policy_ttl_arguments_and_pool_resources() -> None:
    settings = SparkSettings(storage="s3a://bucket/kb", ttl_seconds=900, spark_conf={"spark.x": "1"})
    app = application_manifest(settings, request(executors=3, resources={"cpu": "500m", "memory": "2Gi"}))
    spec = app["spec"]
    assert app["metadata"]["ownerReferences"][0] | {} == {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "name": "Main.Pool",
        "uid": "uid-1",
        "controller": True,
        "blockOwnerDeletion": False,
    }
    assert (spec["type"], spec["image"], spec["timeToLiveSeconds"]) == ("Python", "img:1", 900)
    assert spec["restartPolicy"] == {"type": "Never"}
    args = dict(zip(spec["arguments"][::2], spec["arguments"][1::2], strict=True))
    assert args["--samples"] == "s3a://bucket/kb/samples/team-a.Main.Pool"
    assert args["--out"] == "s3a://bucket/kb/runs/team-a.Main.Pool/0001700000000000"
    assert args["--topology"].startswith(spec["driver"]["configMaps"][0]["path"] + "/")
    assert (args["--window-ms"], args["--windows"]) == ("300000", "3")
    assert spec["driver"]["cores"] == 1 and spec["driver"]["coreRequest"] == "500m"
    assert spec["executor"]["memory"] == "2048m" and spec["executor"]["instances"] == 3
    assert spec["sparkConf"]["spark.x"] == "1"
    # Pod Security "restricted" (the spark-submit launcher's templates are admitted by a real
    # apiserver in tests/integration/test_spark_pod_security.py).
    for role in ("driver", "executor"):
        assert spec[role]["podSecurityContext"]["runAsNonRoot"] is True
        assert spec[role]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert spec[role]["securityContext"]["allowPrivilegeEscalation"] is False
    # AWS SDK v2's chain: hadoop-aws 3.5 has no v1 SDK, so a v1 class name would fail the driver.
    assert spec["sparkConf"]["spark.hadoop.fs.s3a.aws.credentials.provider"] == CREDENTIALS_PROVIDER
    assert CREDENTIALS_PROVIDER.startswith("software.amazon.awssdk.")


def test_local_storage_needs_no_s3a_conf_and_default_resources_apply() -> None:
    spec = application_manifest(SparkSettings(storage="/shared/kb"), request())["spec"]
    assert not any(key.startswith("spark.hadoop.fs.s3a") for key in spec["sparkConf"])
    assert (spec["driver"]["cores"], spec["driver"]["memory"]) == (1, "1g")


@pytest.mark.parametrize(("quantity", "spark"), [("512Mi", "512m"), ("1G", "954m"), ("3Gi", "3072m")])
def test_kubernetes_memory_becomes_spark_mebibytes(quantity: str, spark: str) -> None:
    assert spark_memory(quantity) == spark


def test_settings_come_from_the_charts_environment() -> None:
    assert spark_settings({}) is None
    settings = spark_settings(
        {
            "KAFKA_BALANCER_SCORING_STORAGE": "s3a://b/p",
            "KAFKA_BALANCER_SPARK_TTL_SECONDS": "60",
            "KAFKA_BALANCER_SPARK_CONF": '{"spark.a": "b"}',
            "KAFKA_BALANCER_SPARK_VERSION": "",
        }
    )
    assert settings is not None
    assert (settings.storage, settings.ttl_seconds, dict(settings.spark_conf)) == (
        "s3a://b/p",
        60,
        {"spark.a": "b"},
    )
    assert settings.spark_version  # empty means the installed pyspark's


@pytest.mark.parametrize(
    ("env", "run_as_user"),
    [
        ({}, 65532),
        ({"KAFKA_BALANCER_SPARK_RUN_AS_USER": ""}, None),
        ({"KAFKA_BALANCER_SPARK_RUN_AS_USER": "1000"}, 1000),
    ],
)
def test_the_spark_pods_uid_is_the_images_unless_the_chart_names_one_or_none(
    env: dict[str, str], run_as_user: int | None
) -> None:
    settings = spark_settings({"KAFKA_BALANCER_SCORING_STORAGE": "/shared/kb", **env})
    assert settings is not None and settings.run_as_user == run_as_user
    pod = application_manifest(settings, request())["spec"]["driver"]
    assert pod["podSecurityContext"].get("runAsUser") == run_as_user
    assert pod["securityContext"].get("runAsGroup") == run_as_user
    assert pod["podSecurityContext"]["runAsNonRoot"] is True


@pytest.mark.parametrize("text", ["0", "-5", "65532.0", "root"])
def test_a_spark_uid_that_is_root_or_not_a_uid_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(InputError, match=r"^KAFKA_BALANCER_SPARK_RUN_AS_USER: expected a non-root uid"):
        spark_settings(
            {"KAFKA_BALANCER_SCORING_STORAGE": "/shared/kb", "KAFKA_BALANCER_SPARK_RUN_AS_USER": text}
        )


def test_cleartext_credentials_are_allowed_operator_wide_only_by_the_environment() -> None:
    assert OperatorSettings.from_env({}).allow_cleartext_credentials is False
    env = {"KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS": "true"}
    assert OperatorSettings.from_env(env).allow_cleartext_credentials is True
    with pytest.raises(InputError, match="ALLOW_CLEARTEXT_CREDENTIALS: expected true or false, got 'yes'"):
        OperatorSettings.from_env({"KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS": "yes"})


def test_the_jobs_own_error_line_is_the_message() -> None:
    stderr = "WARN x\nTraceback...\nscore: bad input: samples /s: no partition_samples/ directory\nINFO bye\n"
    assert error_line(stderr) == "score: bad input: samples /s: no partition_samples/ directory"
    assert error_line("only\nlines\n") == "lines"
    spark_gave_up = (
        "26/11/25 05:52:29 INFO ExecutorPodsAllocator: Going to request 1 executors\n"
        "26/11/25 05:52:30 ERROR ExecutorPodsLifecycleManager: Max number of executor failures (3) reached\n"
        "26/11/25 05:52:30 ERROR Utils: Uncaught exception in thread main\n"
        "26/11/25 05:52:30 INFO SparkContext: Successfully stopped SparkContext (Uptime: 32575 ms)\n"
    )
    assert (
        error_line(spark_gave_up)
        == "ExecutorPodsLifecycleManager: Max number of executor failures (3) reached"
    )


# -- background scheduling -------------------------------------------------------------------------


class FakeScorer:
    """In-memory engine: returns the loads it is given, or fails; blocks until released."""

    engine = "Fake"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.fail: str | None = None
        self.release = threading.Event()
        self.load = {"disk": 7.0, "networkIn": 1.0, "networkOut": 2.0, "cpu": 0.5}

    def score(self, request: ScoringRequest) -> ScoringResult:
        self.calls[request.run] += 1
        self.release.wait(5)
        if self.fail:
            raise ScoringError(self.fail)
        snapshot = {
            "partitions": [
                {
                    "topic": "t",
                    "partition": 0,
                    "load": self.load,
                }
            ]
        }
        return ScoringResult({"windows": {"newestSampleMs": 1_000_000}}, snapshot, 0.1)


def test_one_run_at_a_time_at_most_once_per_interval_and_failures_keep_the_last_loads() -> None:
    now = [0.0]
    fake = FakeScorer()
    scoring = BackgroundScoring(
        lambda engine: fake, ScoringSchedule(interval_s=60, window_ms=1000), lambda: now[0]
    )

    assert scoring.submit("ns/p", "Fake", request("r1"))
    assert not scoring.submit("ns/p", "Fake", request("r2"))  # still running
    fake.release.set()
    scoring.wait("ns/p", 5)
    latest = scoring.latest("ns/p", now_ms=1_000_500)
    assert latest is not None and latest.loads == {("t", 0): PartitionLoad(7.0, 1.0, 2.0, 0.5, 0.0)}
    assert scoring.latest("ns/p", now_ms=1_000_000 + 4 * 1000 + 120_000 + 1) is None  # too old

    now[0] = 59.0
    assert not scoring.submit("ns/p", "Fake", request("r3"))  # within the interval
    now[0] = 60.0
    fake.fail = "driver died"
    assert scoring.submit("ns/p", "Fake", request("r4"))
    scoring.wait("ns/p", 5)
    assert scoring.last_error["ns/p"] == "driver died"
    assert scoring.latest("ns/p", now_ms=1_000_500) is not None
    assert fake.calls == Counter({"r1": 1, "r4": 1})


def test_an_engine_that_cannot_be_built_is_a_failed_run_not_a_crash() -> None:
    def no_engine(spec: Scoring) -> FakeScorer:
        raise ScoringError("scoring.engine SparkOnKubernetes needs shared storage")

    scoring = BackgroundScoring(no_engine, ScoringSchedule())
    scoring.submit("ns/p", "SparkOnKubernetes", request())
    scoring.wait("ns/p", 5)
    assert "shared storage" in scoring.last_error["ns/p"]


# -- the sample store's retention --------------------------------------------------------------------


def test_passes_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    store = SampleStore(tmp_path)
    for ts in (1_000, 2_000, 3_000):
        store.append(ts, PARTITION_SAMPLES.empty_table(), pa.Table.from_pylist([], BROKER_SAMPLES))
    assert pass_times(tmp_path) == [1_000, 2_000, 3_000]
    assert prune(tmp_path, older_than_ms=2_500) == 4  # two passes, partition and broker files
    assert pass_times(tmp_path) == [3_000]
    assert len(store.broker_samples().to_pylist()) == 0 and (tmp_path / "broker_samples").is_dir()


# -- loads and the job's inputs ----------------------------------------------------------------------


def test_scored_loads_replace_collected_ones_for_partitions_that_still_exist() -> None:
    metadata = ClusterMetadata(
        {0: "a", 1: "b"}, (PartitionMeta("t", 0, (0, 1), 0), PartitionMeta("t", 1, (1, 0), 1))
    )
    collected = {("t", 0): PartitionLoad(1, 1, 1, 0), ("t", 1): PartitionLoad(2, 2, 2, 0)}
    scored = {("t", 0): PartitionLoad(9, 9, 9, 0), ("gone", 0): PartitionLoad(5, 5, 5, 0)}
    assert merge_loads(metadata, collected, scored) == {
        ("t", 0): PartitionLoad(9, 9, 9, 0),
        ("t", 1): PartitionLoad(2, 2, 2, 0),
    }


def test_the_jobs_topology_and_goals_documents_parse_as_the_job_parses_them() -> None:
    spec = BrokerPoolSpec.model_validate(POOL_SPEC)
    obs = Observation(0, (BrokerInfo(0, "a"), BrokerInfo(2, "b")), {}, {}, {}, {}, {})
    topology = topology_document(obs, spec)
    cluster = parse_snapshot({"version": 1, "brokers": topology["brokers"], "partitions": []}, "topology")
    assert [(b.id, b.active) for b in cluster.brokers] == [(0, True), (2, False)]
    assert cluster.brokers[0].capacity[0] == 2**40

    goal = BalancerGoalSpec.model_validate(
        {"type": "DiskDistribution", "rangePercent": 10, "poolRef": {"name": "p"}}
    )
    (parsed,) = parse_goals([goals_document([("disk", goal)])])
    assert parsed.name == "disk"


def test_the_jobs_topology_names_offline_brokers_that_partitions_still_reference() -> None:
    # Broker 7 is down (a rolling restart): describe_cluster leaves it out, its replicas stay.
    spec = BrokerPoolSpec.model_validate(POOL_SPEC)
    partition = PartitionInfo(replicas=(0, 7), leader=0, isr=frozenset({0}))
    obs = Observation(0, (BrokerInfo(0, "a"),), {("t", 0): partition}, {}, {}, {}, {})
    topology = topology_document(obs, spec)
    load = {"disk": 1.0, "networkIn": 0.0, "networkOut": 0.0, "cpu": 0.0}
    document = {
        "version": 1,
        "brokers": topology["brokers"],
        "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 7], "leader": 0, "load": load}],
    }
    cluster = parse_snapshot(document, "topology")
    assert [b.id for b in cluster.brokers] == [0, 7]
    assert cluster.brokers[0].rack != cluster.brokers[1].rack


def test_s3a_conf_points_at_the_endpoint_and_takes_credentials_only_from_the_secret() -> None:
    conf = s3a_conf(S3Storage(endpoint="http://minio.storage:9000", secret="kb-s3"))
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio.storage:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    for role in ("driver", "executor"):
        assert conf[f"spark.kubernetes.{role}.secretKeyRef.AWS_ACCESS_KEY_ID"] == "kb-s3:AWS_ACCESS_KEY_ID"
        assert (
            conf[f"spark.kubernetes.{role}.secretKeyRef.AWS_SECRET_ACCESS_KEY"]
            == "kb-s3:AWS_SECRET_ACCESS_KEY"
        )
    assert not any("access.key" in key or "secret.key" in key for key in conf)
    # Bounded: one SDK attempt, two s3a retries, a 5 s connect timeout.
    assert int(conf["spark.hadoop.fs.s3a.attempts.maximum"]) == 1
    assert int(conf["spark.hadoop.fs.s3a.retry.limit"]) <= 2

    aws = s3a_conf(S3Storage(region="eu-west-1", path_style=False))
    assert "spark.hadoop.fs.s3a.endpoint" not in aws
    assert aws["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert not any(key.startswith("spark.kubernetes.") for key in aws)


def test_s3_settings_come_from_the_charts_environment() -> None:
    settings = spark_settings(
        {
            "KAFKA_BALANCER_SCORING_STORAGE": "s3a://b/p",
            "KAFKA_BALANCER_S3_ENDPOINT": "https://s3.example:9000",
            "KAFKA_BALANCER_S3_PATH_STYLE": "false",
            "KAFKA_BALANCER_STORAGE_SECRET": "kb-s3",
        }
    )
    assert settings is not None
    assert settings.s3 == S3Storage(endpoint="https://s3.example:9000", path_style=False, secret="kb-s3")
    spec = application_manifest(settings, request())["spec"]
    assert spec["sparkConf"]["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    assert spec["sparkConf"]["spark.kubernetes.driver.secretKeyRef.AWS_SECRET_ACCESS_KEY"] == (
        "kb-s3:AWS_SECRET_ACCESS_KEY"
    )
    with pytest.raises(InputError, match="KAFKA_BALANCER_S3_PATH_STYLE: expected true or false"):
        spark_settings({"KAFKA_BALANCER_SCORING_STORAGE": "s3a://b/p", "KAFKA_BALANCER_S3_PATH_STYLE": "yes"})


@pytest.mark.parametrize(("field", "value"), [("disk", math.nan), ("cpu", -0.5), ("networkIn", math.inf)])
def test_a_scored_load_not_a_finite_non_negative_number_refuses_the_run(field: str, value: float) -> None:
    fake = FakeScorer()
    fake.release.set()
    fake.load[field] = value
    scoring = BackgroundScoring(lambda engine: fake, ScoringSchedule())

    scoring.submit("ns/p", "Fake", request("r1"))
    scoring.wait("ns/p", 5)

    assert scoring.latest("ns/p", now_ms=1_000_500) is None  # the collector's loads are used instead
    assert scoring.last_error["ns/p"] == (
        f"scored load of t-0: {field} is {value}, not a finite non-negative number; "
        "the scoring run's output is refused"
    )
