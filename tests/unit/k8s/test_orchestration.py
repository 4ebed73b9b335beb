"""The operator's orchestration (k8s/pools.py, k8s/executions.py, k8s/plan_run.py,
k8s/mirrored_executor.py) against in-memory Kubernetes and Kafka: what a user sees in the pool's
status, its Events and ConfigMaps, and what Kafka is asked to do. The real apiserver and Kafka are
exercised by the e2e tests."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.errors import (
    ConfigMapTooLarge,
    KafkaAccessDenied,
    KafkaOperationError,
    UnreadableConfigMap,
)
from kafka_balancer.k8s import pools
from kafka_balancer.k8s.executions import Connect, ExecutionService
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import Liveness, SeenPool
from kafka_balancer.k8s.pools import GoalObject, PoolObject, PoolService
from kafka_balancer.k8s.port import LeaseWrite, PoolId
from kafka_balancer.k8s.scored_loads import Loads
from kafka_balancer.k8s.settings import Limits, Timings
from kafka_balancer.kafka.execution_state import MoveStatus, state_from_document
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION
from kafka_balancer.reconcile.pool_input import LoadSource, UsageSource
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta
from tests.unit.executor_fakes import FakeClock, FakeKafkaCluster
from tests.unit.k8s.kube_fake import FakeKube

POOL = PoolId("kafka", "main", "uid-main")
RACKS = {1: "a", 2: "b", 3: "c"}
# 8 partitions RF 2, all on brokers 1 and 2: broker 3 (rack c) holds nothing.
REPLICAS = {("orders", p): (1, 2) if p % 2 else (2, 1) for p in range(8)}
GOAL = GoalObject(
    "replicas", {"type": "ReplicaDistribution", "rangePercent": 10, "poolRef": {"name": "main"}}, 2, ()
)
SPEC = {
    "kafka": {"bootstrapServers": "k:9092"},
    "capacity": {"disk": "1Ti", "networkIn": "100M", "networkOut": "100M", "cpu": 8},
}
# Every mirror write and progress patch happens (the operator's 5 s would skip the fake's fast steps).
TIMINGS = Timings(mirror_every_s=0.0, execution_poll_s=1.0)
RUNNING = Liveness(stopping=lambda: False, paused=lambda: False)


@dataclass
class FakeReader:
    """The cluster as the fake Kafka holds it now, or a failure to reach it."""

    cluster: FakeKafkaCluster
    unreachable: bool = False
    # What Kafka's ACLs keep from the principal, as the collector says it (None: nothing).
    denied: str | None = None
    reads: int = 0
    load_sources: dict[str, LoadSource] = field(default_factory=dict)
    usage_sources: dict[str, UsageSource] = field(default_factory=dict)

    def read(
        self,
        pool: PoolId,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        goals: Sequence[tuple[str, BalancerGoalSpec]] = (),
    ) -> tuple[ClusterMetadata, Loads]:
        self.reads += 1
        if self.unreachable:
            raise KafkaOperationError("no broker of k:9092 answered within 10 s")
        if self.denied is not None:
            raise KafkaAccessDenied(self.denied)
        partitions = tuple(
            PartitionMeta(t, p, replicas, self.cluster.leader((t, p)))
            for (t, p), replicas in sorted(self.cluster.replicas.items())
        )
        return ClusterMetadata(dict(self.cluster.racks), partitions), {}


@dataclass
class Bed:
    kube: FakeKube
    cluster: FakeKafkaCluster
    reader: FakeReader
    service: PoolService

    def sync(self, mode: str, retry: int = 0, live: Liveness = RUNNING, **meta: Any) -> Any:
        pool = PoolObject(
            POOL,
            meta.get("generation", 1),
            {**SPEC, "mode": mode, **meta.get("spec", {})},
            self.kube.pool_status(POOL),
            meta.get("annotations", {}),
            meta.get("goals", (GOAL,)),
        )
        return self.service.sync_blocking(pool, retry, live)

    def status(self) -> dict[str, Any]:
        return self.kube.pool_status(POOL)

    def metric(self, name: str, **labels: str) -> float | None:
        registry = self.service.metrics.registry
        return registry.get_sample_value(name, {"pool": POOL.key, **labels})

    def conditions(self) -> dict[str, tuple[str, str]]:
        return {c["type"]: (c["status"], c["reason"]) for c in self.status().get("conditions", [])}

    def condition_message(self, kind: str) -> str:
        return str(next(c["message"] for c in self.status()["conditions"] if c["type"] == kind))

    def mirrored_state(self) -> Any:
        found = self.kube.read_config_map("kafka", "main-execution")
        assert found is not None, "the execution's state is mirrored into <pool>-execution"
        return found.data["plan.id"], state_from_document(json.loads(found.data["state.json"]))


def cluster() -> FakeKafkaCluster:
    return FakeKafkaCluster(
        brokers=frozenset(RACKS),
        replicas=dict(REPLICAS),
        sizes=dict.fromkeys(REPLICAS, 1000),
        racks=dict(RACKS),
    )


def bed(
    tmp_path: Path,
    kafka: FakeKafkaCluster | None = None,
    kube: FakeKube | None = None,
    limits: Limits | None = None,
    connect: Connect | None = None,
) -> Bed:
    """The operator's services on in-memory Kubernetes and Kafka; ``connect`` stands in for the
    service's Kafka connections (default: each one the fake cluster)."""
    limits = limits or Limits()
    kafka = kafka or cluster()
    kube = kube or FakeKube()
    clock = FakeClock(kafka)
    metrics = OperatorMetrics(CollectorRegistry())
    executions = ExecutionService(
        kube,
        tmp_path,
        TIMINGS,
        metrics,
        connect=connect or (lambda *_: _NoClose(kafka)),
        clock=clock.time,
        sleep=clock.sleep,
        max_executions=limits.executions,
    )
    reader = FakeReader(kafka)
    service = PoolService(
        kube,
        reader,
        executions,
        tmp_path,
        TIMINGS,
        metrics,
        limits=limits,
        connect=connect or (lambda *_: _NoClose(kafka)),
    )
    return Bed(kube, kafka, reader, service)


class _NoClose:
    """The fake cluster as a connection the service closes after use."""

    def __init__(self, cluster: FakeKafkaCluster) -> None:
        self.cluster = cluster

    def __enter__(self) -> FakeKafkaCluster:
        return self.cluster

    def __exit__(self, *_: object) -> None:
        return None


def submissions(kafka: FakeKafkaCluster) -> dict[tuple[str, int], int]:
    """How often each partition was asked to move (cancellations not counted)."""
    counted: dict[tuple[str, int], int] = {}
    for batch in kafka.submitted:
        for tp, target in batch.items():
            if target is not None:
                counted[tp] = counted.get(tp, 0) + 1
    return counted


# -- a pass over a pool --------------------------------------------------------------------------------


def test_a_dry_run_pass_writes_the_plan_config_maps_status_goal_status_and_an_event(tmp_path: Path) -> None:
    b = bed(tmp_path)

    result = b.sync("DryRun")

    plan_map = b.kube.read_config_map("kafka", "main-plan")
    assert plan_map is not None and b.kube.owners[("kafka", "main-plan")] == POOL
    plan = json.loads(plan_map.data["plan.json"])
    status = b.status()
    assert status["plan"]["id"] == plan_map.data["plan.id"] == result.outcome.new_plan.id
    assert status["plan"]["movesTotal"] == int(plan_map.data["moves"]) >= 4
    assert status["plan"]["movesRemaining"] == status["plan"]["movesTotal"]
    assert status["plan"]["configMap"] == "main-plan"
    assert all(3 in p["replicas"] for p in plan["partitions"])  # moves fill the empty broker
    assert b.conditions()["PlanReady"] == ("True", "Planned")
    assert b.conditions()["Ready"] == ("True", "Reconciled")
    assert [(s["id"], s["rack"], s["state"]) for s in status["brokers"]] == [
        (1, "a", "Active"),
        (2, "b", "Active"),
        (3, "c", "Active"),
    ]
    loads = b.kube.read_config_map("kafka", "main-loads")
    assert loads is not None and "report.txt" in loads.data
    goal = b.kube.statuses[("balancergoals", "kafka", "replicas")]
    assert goal["observedGeneration"] == 2 and goal["conditions"][0]["type"] == "Satisfied"
    assert goal["conditions"][0]["status"] == "False"
    assert status["worstGoal"] == f"replicas ({goal['worstDeviation']})"
    assert b.kube.reasons() == ["PlanReady"]
    plan_status = status["plan"]
    assert b.kube.message("PlanReady") == (
        f"Plan {plan_status['id']} is ready: {plan_status['movesTotal']} replica move(s) copying "
        f"{plan_status['dataToMove']} ({plan_status['bytesToMove']} bytes)."
    )
    assert b.cluster.submitted == []  # DryRun never moves


def test_a_goal_is_satisfied_once_the_cluster_meets_it_not_once_a_plan_would(tmp_path: Path) -> None:
    b = bed(tmp_path)

    def satisfied() -> tuple[str, str, str]:
        condition = b.kube.statuses[("balancergoals", "kafka", "replicas")]["conditions"][0]
        return condition["status"], condition["reason"], condition["message"]

    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    assert satisfied()[:2] == ("False", "GoalViolated"), "a plan that would meet it is not enough"

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})
    assert b.status()["execution"]["phase"] == "Succeeded"
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert satisfied() == ("True", "GoalHolds", "the goal holds on the cluster as it is now")


def test_an_unusable_spec_is_a_condition_and_kafka_is_not_read(tmp_path: Path) -> None:
    b = bed(tmp_path)

    b.sync("DryRun", spec={"capacity": {"disk": "lots"}})

    assert b.conditions()["SpecValid"][1] == "InvalidSpec"
    assert b.conditions()["Ready"] == ("False", "InvalidSpec")
    message = next(c["message"] for c in b.status()["conditions"] if c["type"] == "SpecValid")
    assert "capacity" in message
    assert b.reader.reads == 0


def test_a_pool_named_longer_than_a_label_value_is_an_invalid_spec_not_a_crash(tmp_path: Path) -> None:
    b = bed(tmp_path)
    long = PoolId("kafka", "p" * 70, "uid-long")
    pool = PoolObject(long, 1, {**SPEC, "mode": "DryRun"}, {}, {}, (GOAL,))

    b.service.sync_blocking(pool, 0, RUNNING)

    status = b.kube.pool_status(long)
    message = next(c["message"] for c in status["conditions"] if c["type"] == "SpecValid")
    assert message.startswith("metadata.name: 70 characters, over 63"), message
    assert b.reader.reads == 0 and b.kube.config_maps == {}


def test_a_pool_uses_a_credentials_secret_only_once_its_writer_meant_it_for_the_pool(tmp_path: Path) -> None:
    b = bed(tmp_path)
    # Any key of any Secret in the namespace, as a user who may write pools but not read Secrets
    # would name it.
    b.kube.secrets[("kafka", "payments-admin")] = {"username": b"admin", "password": b"hunter2"}
    sasl = {
        "bootstrapServers": "k:9093",
        "securityProtocol": "SASL_SSL",
        "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "payments-admin"}},
    }

    b.sync("DryRun", spec={"kafka": sasl})

    message = next(c["message"] for c in b.status()["conditions"] if c["type"] == "SpecValid")
    assert message.startswith("kafka.sasl.secretRef: Secret kafka/payments-admin is not meant for this pool")
    assert "hunter2" not in json.dumps(b.status())
    assert b.reader.reads == 0  # nothing was sent anywhere

    b.kube.secret_annotations[("kafka", "payments-admin")] = {"kafkabalancer.io/pools": "main"}
    b.sync("DryRun", spec={"kafka": sasl})

    assert b.reader.reads == 1
    assert b.conditions()["SpecValid"] == ("True", "Valid")


def test_credentials_go_over_sasl_plaintext_only_when_the_operator_allows_it(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.kube.secrets[("kafka", "balancer")] = {"username": b"balancer", "password": b"s3cret"}
    b.kube.secret_annotations[("kafka", "balancer")] = {"kafkabalancer.io/pools": "*"}
    cleartext = {
        "bootstrapServers": "k:9092",
        "securityProtocol": "SASL_PLAINTEXT",
        "sasl": {"mechanism": "PLAIN", "secretRef": {"name": "balancer"}},
    }

    b.sync("DryRun", spec={"kafka": cleartext})

    message = next(c["message"] for c in b.status()["conditions"] if c["type"] == "SpecValid")
    assert message.startswith(
        "kafka.securityProtocol: SASL_PLAINTEXT would send the credentials of Secret balancer unencrypted"
    )
    assert b.reader.reads == 0

    allowed = PoolService(
        b.kube,
        b.reader,
        b.service.executions,
        tmp_path,
        TIMINGS,
        b.service.metrics,
        allow_cleartext_credentials=True,
    )
    props = allowed.connection(POOL, BrokerPoolSpec.model_validate({**SPEC, "kafka": cleartext}))
    assert (props["security.protocol"], props["sasl.password"]) == ("SASL_PLAINTEXT", "s3cret")


def test_a_config_map_someone_else_made_under_the_pools_name_is_not_overwritten(tmp_path: Path) -> None:
    b = bed(tmp_path)
    stranger = PoolId("kafka", "main", "uid-of-nobody")
    b.kube.write_config_map("kafka", "main-plan", stranger, {"plan.id": "0000000000", "plan.json": "{}"})

    b.sync("Manual")

    assert b.conditions()["ConfigMapsOwned"] == ("False", "ForeignConfigMap")
    assert b.conditions()["Ready"] == ("False", "ForeignConfigMap")
    assert b.kube.config_maps[("kafka", "main-plan")].data == {"plan.id": "0000000000", "plan.json": "{}"}
    assert b.kube.owners[("kafka", "main-plan")] == stranger
    assert b.cluster.submitted == []

    b.kube.delete_config_map("kafka", "main-plan")
    b.sync("Manual")
    assert b.kube.owners[("kafka", "main-plan")] == POOL
    assert "ConfigMapsOwned" not in b.conditions()  # a pass that wrote them drops the old failure
    assert b.conditions()["Ready"][0] == "True"


def test_a_pool_waits_while_another_pool_executes_on_the_same_kafka_cluster(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    # A pool of another namespace, reaching the same Kafka cluster, executes now.
    other = PoolId("team-b", "orders", "uid-orders")
    busy = b.service.executions.cluster_lease(other, b.cluster)
    assert busy.try_acquire()
    looks = iter(range(8))

    b.sync(
        "Manual",
        live=Liveness(stopping=lambda: next(looks, 8) >= 8, paused=lambda: False),
        annotations={APPROVE_ANNOTATION: plan_id},
    )

    told = "waiting: pool team-b/orders is executing a plan on the same Kafka cluster"
    assert b.status()["execution"]["waiting"] == told
    assert b.conditions()["Executing"] == ("True", "Waiting")
    assert b.kube.message("ExecutionWaiting") == f"Plan {plan_id} is {told}."
    assert b.cluster.submitted == [] and not any(b.cluster.configs.values())  # nothing written to Kafka

    busy.release()
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert b.status()["execution"]["phase"] == "Succeeded" and b.cluster.submitted
    assert "waiting" not in b.status()["execution"]
    # Handed back at the end: the other pool may execute again.
    assert busy.try_acquire()
    busy.release()


def test_a_drained_broker_is_cordoned_while_drained_and_uncordoned_when_the_drain_is_withdrawn(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path)

    b.sync("DryRun", spec={"drain": [2]})

    assert b.status()["cordonedBrokers"] == [2]
    assert b.conditions()["Cordoned"] == ("True", "Cordoned")
    assert b.cluster.configs[("broker", "2")] == {"cordoned.log.dirs": "*"}

    b.sync("DryRun", spec={"drain": []})

    assert b.status()["cordonedBrokers"] == []
    assert "Cordoned" not in b.conditions()
    assert b.cluster.configs[("broker", "2")] == {}


def test_a_pool_deleted_with_its_namespace_cleans_up_with_the_connection_it_last_used(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path)
    b.kube.secrets[("kafka", "balancer")] = {"username": b"balancer", "password": b"s3cret"}
    b.kube.secret_annotations[("kafka", "balancer")] = {"kafkabalancer.io/pools": "main"}
    secured = {
        "kafka": {
            "bootstrapServers": "k:9093",
            "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "balancer"}},
        }
    }
    b.sync("Manual", spec=secured)
    plan_id = b.status()["plan"]["id"]
    b.cluster.stuck = set(REPLICAS)
    stopping = Liveness(stopping=lambda: bool(b.cluster.submitted), paused=lambda: False)
    b.sync("Manual", spec=secured, live=stopping, annotations={APPROVE_ANNOTATION: plan_id})
    assert b.cluster.ongoing and any(b.cluster.configs.values())
    # The namespace is deleted: Kubernetes deletes the Secret before the pool's finalizer runs.
    del b.kube.secrets[("kafka", "balancer")]

    cancelled = b.service.clean_up_blocking(POOL, {**SPEC, **secured, "mode": "Manual"}, b.status())

    assert cancelled == plan_id
    assert b.cluster.ongoing == {} and not any(b.cluster.configs.values())


def test_a_deleted_pool_whose_kafka_is_unreachable_says_it_waits_then_that_it_let_go(tmp_path: Path) -> None:
    b = bed(tmp_path)
    err = KafkaOperationError("cannot reach Kafka at k:9092: KafkaException")

    b.service.cleanup_waits(POOL, err, 0, 180, 10)
    assert b.kube.message("CleanupWaiting") == (
        "The pool's deletion waits to cancel its moves and remove its throttles: Kafka unreachable "
        "(cannot reach Kafka at k:9092: KafkaException); retried every 10 s, for 29 more minute(s)."
    )
    b.service.cleanup_waits(POOL, err, 179, 180, 10)
    assert b.kube.message("CleanupAbandoned").startswith(
        "Kafka unreachable for 30 minutes: the pool is let go; moves of its plan may still be in flight"
    )


def test_a_deleted_pool_uncordons_the_brokers_it_drained(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("DryRun", spec={"drain": [2]})
    assert b.cluster.configs[("broker", "2")] == {"cordoned.log.dirs": "*"}

    b.service.clean_up_blocking(POOL, {**SPEC, "mode": "DryRun", "drain": [2]}, b.status())

    assert b.cluster.configs[("broker", "2")] == {}


def test_a_kafka_without_cordoning_is_said_and_the_drain_goes_on(tmp_path: Path) -> None:
    kafka = cluster()
    kafka.cordoning = False
    b = bed(tmp_path, kafka)

    b.sync("DryRun", spec={"drain": [2]})

    status, reason = b.conditions()["Cordoned"]
    assert (status, reason) == ("False", "Unsupported")
    assert b.conditions()["Ready"][0] == "True"  # informational: the drain is planned all the same
    assert b.status()["cordonedBrokers"] == [] and not any(kafka.configs.values())


def test_a_cluster_partly_hidden_by_acls_is_said_on_the_pool_and_not_planned(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("DryRun")
    b.reader.denied = "reading the cluster at k:9092: 1 topic(s) it may not describe: secret"

    b.sync("DryRun", retry=0)

    status, reason = b.conditions()["KafkaReachable"]
    assert (status, reason) == ("False", "NotAuthorized")
    assert b.conditions()["Ready"] == ("False", "NotAuthorized")
    assert "secret" in b.condition_message("KafkaReachable")
    assert b.metric("kafka_balancer_reconciles_total", result="unreachable") == 1


def test_kafka_unreachable_backs_off_doubling_and_keeps_the_other_conditions(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("DryRun")
    b.reader.unreachable = True

    first, third = b.sync("DryRun", retry=0), b.sync("DryRun", retry=2)

    assert (first.retry_after, third.retry_after) == (10.0, 40.0)
    assert b.sync("DryRun", retry=9).retry_after == 300.0
    assert b.conditions()["KafkaReachable"] == ("False", "Unreachable")
    assert b.conditions()["Ready"] == ("False", "Unreachable")
    assert b.conditions()["PlanReady"] == ("True", "Planned")  # the last plan is still there
    assert "k:9092" in first.message
    assert b.metric("kafka_balancer_reconciles_total", result="unreachable") == 3
    assert b.metric("kafka_balancer_kafka_reachable") == 0


def test_a_first_sync_creates_every_series_a_dashboard_or_an_alert_reads_at_zero(tmp_path: Path) -> None:
    b = bed(tmp_path)

    b.sync("DryRun")

    assert b.metric("kafka_balancer_kafka_reachable") == 1
    for failure in ("invalid", "unreachable"):
        assert b.metric("kafka_balancer_reconciles_total", result=failure) == 0
    assert b.metric("kafka_balancer_executions_total", result="failed") == 0
    assert b.metric("kafka_balancer_scoring_seconds_count", engine="Embedded", result="failed") == 0
    for gauge in (
        "drain_blocked",
        "execution_failed",
        "execution_running",
        "execution_throttled_brokers",
        "brokers_missing",
        "brokers_failed",
        "self_healing_blocked",
        "offline_log_dirs",
    ):
        assert b.metric(f"kafka_balancer_{gauge}") == 0, gauge


def test_a_broker_gone_from_the_metadata_is_missing_in_status_and_in_the_gauge(tmp_path: Path) -> None:
    b = bed(tmp_path)
    healing = {"selfHealing": {"enabled": True, "brokerFailureSeconds": 600}}
    b.sync("DryRun", spec=healing)
    del b.cluster.racks[3]  # broker 3 stopped: Kafka lists it no more

    b.sync("DryRun", spec=healing)

    (three,) = [broker for broker in b.status()["brokers"] if broker["id"] == 3]
    assert three["state"] == "Missing" and "missingSince" in three
    assert b.conditions()["BrokerFailure"] == ("True", "BrokersMissing")
    assert b.metric("kafka_balancer_brokers_missing") == 1
    assert b.metric("kafka_balancer_brokers_failed") == 0


def test_a_pass_returns_when_a_warming_brokers_next_step_is_due(tmp_path: Path) -> None:
    b = bed(tmp_path)
    warm_up = {"warmUp": {"duration": "600s", "steps": 2}}
    assert b.sync("DryRun", spec=warm_up).next_step_at is None  # the established brokers are warm
    b.cluster.racks[4] = "a"  # a new broker joins

    before = time.time()
    result = b.sync("DryRun", spec=warm_up)
    after = time.time()

    (four,) = [broker for broker in b.status()["brokers"] if broker["id"] == 4]
    assert (four["state"], four["warmUpStep"]) == ("Warming", 1)
    # Step 2 starts half the duration after the broker was first seen, this pass.
    assert before + 300 <= result.next_step_at <= after + 300


def test_partitions_added_between_two_syncs_are_an_event_and_counted_once(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("DryRun")
    assert b.metric("kafka_balancer_new_partitions_total") == 0
    for p in range(8, 11):  # three partitions added to orders, on broker 3 only
        b.cluster.replicas[("orders", p)] = (3,)

    b.sync("DryRun")
    b.sync("DryRun")

    assert b.kube.reasons().count("NewPartitions") == 1
    assert b.kube.message("NewPartitions").startswith(
        "3 new partition(s) since the previous plan (3 added to topic orders (8 → 11)); "
    )
    assert b.metric("kafka_balancer_new_partitions_total") == 3


def test_partitions_added_while_the_operator_was_away_are_told_by_the_next_one(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("DryRun")
    for p in range(8, 10):  # two partitions added to orders while no operator runs
        b.cluster.replicas[("orders", p)] = (3,)

    restarted = bed(tmp_path, b.cluster, b.kube)  # a new process: the same apiserver and Kafka
    restarted.sync("DryRun")

    assert restarted.kube.message("NewPartitions").startswith(
        "2 new partition(s) since the previous plan (2 added to topic orders (8 → 10)); "
    )
    assert restarted.metric("kafka_balancer_new_partitions_total") == 2


# -- executing a plan ----------------------------------------------------------------------------------


def test_manual_executes_exactly_the_approved_plan_and_reports_it_done(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    stored = json.loads(b.kube.config_maps[("kafka", "main-plan")].data["plan.json"])
    assert b.cluster.submitted == []  # not before the approval

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert {tp: r for tp, r in b.cluster.replicas.items() if r != REPLICAS[tp]} == {
        (p["topic"], p["partition"]): tuple(p["replicas"]) for p in stored["partitions"]
    }
    status = b.status()
    assert status["execution"]["phase"] == "Succeeded" and status["execution"]["planId"] == plan_id
    assert status["execution"]["movesDone"] == len(stored["partitions"])
    assert "etaSeconds" not in status["execution"]
    assert status["plan"]["executedId"] == plan_id and status["plan"]["movesRemaining"] == 0
    assert b.kube.reasons()[-2:] == ["ExecutionStarted", "ExecutionFinished"]
    moves = len(stored["partitions"])
    assert b.kube.message("ExecutionStarted") == (
        f"Executing plan {plan_id}: {moves} replica move(s) copying {status['plan']['dataToMove']}."
    )
    assert b.kube.message("ExecutionFinished") == (
        f"Plan {plan_id} executed and verified: {moves} replica move(s) done."
    )
    mirrored_plan, state = b.mirrored_state()
    assert mirrored_plan == plan_id and {m.status for m in state.moves} == {MoveStatus.DONE}
    assert not any(b.cluster.configs.values()), "no throttle is left"
    assert b.metric("kafka_balancer_executions_total", result="succeeded") == 1
    assert b.metric("kafka_balancer_execution_moves_done") == len(stored["partitions"])
    assert b.metric("kafka_balancer_execution_bytes_moved") == state.bytes_total > 0
    assert b.metric("kafka_balancer_reconciles_total", result="ok") == 2
    assert b.metric("kafka_balancer_execution_throttled_brokers") == 0
    assert b.metric("kafka_balancer_execution_moves_in_flight") == 0
    assert b.metric("kafka_balancer_execution_running") == 0


def test_progress_is_written_while_moves_run(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    seen: list[dict[str, Any]] = []
    gauges: list[dict[str, float | None]] = []
    patch = b.kube.patch_status

    def recording(plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        if "execution" in status and status["execution"].get("phase") == "Running":
            seen.append(dict(status["execution"]))
            running = ("running", "moves_in_flight", "throttled_brokers")
            gauges.append({g: b.metric(f"kafka_balancer_execution_{g}") for g in running})
        patch(plural, namespace, name, status)

    b.kube.patch_status = recording  # type: ignore[method-assign]
    b.sync("Manual", annotations={APPROVE_ANNOTATION: b.status()["plan"]["id"]})

    assert seen[0]["message"] == "starting"
    mid = [s for s in seen if 0 < s.get("bytesDone", 0) < s.get("bytesTotal", 0)]
    assert mid, f"a patch mid-run shows bytes done: {seen}"
    assert mid[0]["etaSeconds"] > 0 and "ETA" in mid[0]["message"]
    assert (
        mid[0]["movesDone"] + mid[0]["movesInFlight"] + mid[0]["movesPending"]
        == b.status()["plan"]["movesTotal"]
    )
    assert all(g["running"] == 1 for g in gauges)
    assert max(g["moves_in_flight"] or 0 for g in gauges) > 0
    assert max(g["throttled_brokers"] or 0 for g in gauges) > 0, f"throttles in force while moving: {gauges}"


def test_a_paused_execution_resumes_on_a_new_pod_from_the_config_map_without_moving_twice(
    tmp_path: Path,
) -> None:
    first_pod = bed(tmp_path / "pod-1")
    first_pod.sync("Manual")
    plan_id = first_pod.status()["plan"]["id"]
    approved = {APPROVE_ANNOTATION: plan_id}
    # spec.paused turns true once the first batch is submitted.
    pausing = Liveness(stopping=lambda: False, paused=lambda: bool(first_pod.cluster.submitted))

    first_pod.sync("Manual", live=pausing, annotations=approved)

    assert first_pod.status()["execution"]["phase"] == "Paused"
    assert "ExecutionPaused" in first_pod.kube.reasons()
    assert first_pod.kube.message("ExecutionPaused").startswith(f"Plan {plan_id} halted: spec.paused is true")
    _, paused_state = first_pod.mirrored_state()
    # A pause follows the moves in flight to their end (their throttles go with them): the mirror
    # holds what the first pod moved, and the execution is not finished.
    assert paused_state.by_status(MoveStatus.DONE), "the mirror holds the moves the first pod moved"
    assert paused_state.finished_at is None
    # Another pod (empty disk) takes over: same apiserver, same Kafka.
    second_pod = bed(tmp_path / "pod-2", kafka=first_pod.cluster, kube=first_pod.kube)

    second_pod.sync("Manual", annotations=approved)

    assert second_pod.status()["execution"]["phase"] == "Succeeded"
    assert second_pod.status()["plan"]["executedId"] == plan_id
    assert set(submissions(second_pod.cluster).values()) == {1}, "every partition moved exactly once"


def test_a_deleted_pool_cancels_its_unfinished_execution_and_leaves_no_throttle(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    b.cluster.stuck = set(REPLICAS)  # nothing finishes: the moves stay in flight
    # The daemon stops once the first batch is in (a pause would follow those moves to their end).
    stopping = Liveness(stopping=lambda: bool(b.cluster.submitted), paused=lambda: False)
    b.sync("Manual", live=stopping, annotations={APPROVE_ANNOTATION: plan_id})
    assert b.cluster.ongoing and any(b.cluster.configs.values())

    cancelled = b.service.clean_up_blocking(POOL, {**SPEC, "mode": "Manual"}, b.status())

    assert cancelled == plan_id
    assert b.cluster.ongoing == {}
    assert not any(b.cluster.configs.values()), "no throttle is left"
    assert b.cluster.replicas == REPLICAS  # the cancelled moves are back on their sources
    _, state = b.mirrored_state()
    assert state.finished_at is not None
    assert {m.status for m in state.moves} <= {MoveStatus.CANCELLED, MoveStatus.PENDING}
    assert b.metric("kafka_balancer_pool_balanced") is None, "a deleted pool's series are gone"
    assert b.metric("kafka_balancer_goal_satisfied", goal="replicas") is None


def test_a_move_without_progress_shows_stalled_then_failed(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    b.cluster.stuck = set(REPLICAS)  # no byte arrives: the move timeout (600 s) cancels them
    stalled: list[float | None] = []
    patch = b.kube.patch_status

    def recording(plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        stalled.append(b.metric("kafka_balancer_execution_stalled_seconds"))
        patch(plural, namespace, name, status)

    b.kube.patch_status = recording  # type: ignore[method-assign]
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})
    b.sync("Manual")  # the next sync reads the failed execution from the status

    assert max(s or 0 for s in stalled) >= 600
    assert (b.metric("kafka_balancer_execution_moves_failed") or 0) > 0
    assert b.status()["execution"]["phase"] == "Failed"
    assert b.metric("kafka_balancer_execution_failed") == 1
    assert b.metric("kafka_balancer_executions_total", result="failed") == 1


def test_a_new_plan_first_settles_the_unfinished_one_it_replaces(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    old = b.status()["plan"]["id"]
    b.cluster.stuck = set(REPLICAS)
    stopping = Liveness(stopping=lambda: bool(b.cluster.submitted), paused=lambda: False)
    b.sync("Manual", live=stopping, annotations={APPROVE_ANNOTATION: old})
    in_flight_before = set(b.cluster.ongoing)
    b.cluster.stuck = set()
    # The spec changes (broker 1 is to be drained): a different plan, approved while the old one is half done.
    b.sync("Manual", generation=2, spec={"drain": [1]})
    new = b.status()["plan"]["id"]
    assert new != old

    b.sync("Manual", generation=2, spec={"drain": [1]}, annotations={APPROVE_ANNOTATION: new})

    assert in_flight_before
    cancels = [tp for batch in b.cluster.submitted for tp, target in batch.items() if target is None]
    assert set(cancels) >= in_flight_before, "the old plan's moves in flight were cancelled first"
    assert (b.status()["execution"]["planId"], b.status()["execution"]["phase"]) == (new, "Succeeded")
    assert all(1 not in replicas for replicas in b.cluster.replicas.values())
    # No throttle left; the drained broker stays cordoned while it is drained.
    left = {k: c for k, c in b.cluster.configs.items() if c}
    assert left == {("broker", "1"): {"cordoned.log.dirs": "*"}}


def test_another_tools_reassignment_makes_the_execution_wait_not_fail(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    # Another tool moves a partition of another topic when the approved execution would start.
    b.cluster.replicas[("audit", 0)] = (1, 2)
    b.cluster.sizes[("audit", 0)] = 10
    b.cluster.ongoing[("audit", 0)] = ((3, 1), 0)
    b.cluster.stuck = {("audit", 0)}
    looks = iter(range(10))
    live = Liveness(stopping=lambda: next(looks, 10) >= 10, paused=lambda: False)

    b.sync("Manual", live=live, annotations={APPROVE_ANNOTATION: plan_id})

    waiting = b.status()["execution"]["waiting"]
    assert waiting == (
        "the execution waits to start: 1 reassignment(s) not started by this execution are in flight "
        "(e.g. audit-0)"
    )
    assert b.conditions()["Executing"] == ("True", "Waiting")
    assert b.metric("kafka_balancer_execution_failed") == 0 and "ExecutionFailed" not in b.kube.reasons()
    assert b.kube.message("ExecutionWaiting") == f"Plan {plan_id}: {waiting}."
    assert not any(target for batch in b.cluster.submitted for target in batch.values())

    b.cluster.stuck = set()  # the other tool's reassignment ends
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert b.status()["execution"]["phase"] == "Succeeded"
    assert "waiting" not in b.status()["execution"]


def test_a_failed_execution_is_a_warning_event_and_makes_the_pool_unready(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    b.cluster.out_of_isr = {("orders", 0): frozenset({2})}  # under-replicated: the preflight refuses

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert b.status()["execution"]["phase"] == "Failed"
    assert "under-replicated" in b.status()["execution"]["message"]
    assert "ExecutionFailed" in b.kube.reasons()
    failed = b.kube.message("ExecutionFailed")
    assert failed.startswith(f"Plan {plan_id} failed: ") and "under-replicated" in failed
    assert failed.endswith(".")
    assert b.conditions()["Executing"] == ("False", "ExecutionFailed")
    assert b.conditions()["Ready"] == ("False", "ExecutionFailed")
    assert b.metric("kafka_balancer_execution_failed") == 1


def failing_mid_copy(b: Bed) -> str:
    """An approved Manual plan whose execution fails with moves in flight and throttles set: Kafka's
    controller stops answering right after the first batch went in, for longer than the outage
    timeout, and the batch copies nothing meanwhile. Both are over when this returns. The plan's id."""
    b.sync("Manual")
    plan_id: str = b.status()["plan"]["id"]
    submit = b.cluster.alter_reassignments

    def then_down(targets: Mapping[tuple[str, int], tuple[int, ...] | None]) -> dict[tuple[str, int], str]:
        answer = submit(targets)
        b.cluster.controller_down_ticks = 10**6
        b.cluster.stuck = set(REPLICAS)
        return answer

    b.cluster.alter_reassignments = then_down  # type: ignore[method-assign]
    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})
    b.cluster.alter_reassignments = submit  # type: ignore[method-assign]
    b.cluster.controller_down_ticks = 0
    b.cluster.stuck = set()
    assert b.status()["execution"]["phase"] == "Failed"
    assert b.cluster.ongoing and any(b.cluster.configs.values()), "moves in flight, throttles set"
    return plan_id


def test_a_failed_plan_no_longer_approved_is_cancelled_and_leaves_no_throttle(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = failing_mid_copy(b)
    in_flight = set(b.cluster.ongoing)

    b.sync("Manual")  # the approval was withdrawn: the failed plan is not run again

    assert not b.cluster.ongoing and not any(b.cluster.configs.values()), "nothing in flight, no throttle"
    assert {tp: r for tp, r in b.cluster.replicas.items() if tp in in_flight} == {
        tp: REPLICAS[tp] for tp in in_flight
    }, "the moves in flight went back to their replicas"
    plan, state = b.mirrored_state()
    assert plan == plan_id and state.finished_at is not None
    assert {m.status for m in state.moves} <= {MoveStatus.CANCELLED, MoveStatus.DONE, MoveStatus.PENDING}
    assert b.kube.message("FailedPlanSettled") == (
        f"Plan {plan_id} failed and is not run again: {len(in_flight)} move(s) in flight cancelled "
        "and every throttle it set removed."
    )
    submitted = len(b.cluster.submitted)
    b.sync("Manual")
    assert len(b.cluster.submitted) == submitted and b.kube.reasons().count("FailedPlanSettled") == 1


def test_a_failed_plan_still_approved_is_resumed_not_cancelled(tmp_path: Path) -> None:
    b = bed(tmp_path)
    plan_id = failing_mid_copy(b)

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert "FailedPlanSettled" not in b.kube.reasons()
    assert b.status()["execution"]["phase"] == "Succeeded" and b.status()["plan"]["executedId"] == plan_id
    assert not any(b.cluster.configs.values())


@pytest.mark.parametrize("retry", [0, 1])
def test_no_execution_no_throttle_release_needs_no_kafka_connection(tmp_path: Path, retry: int) -> None:
    kafka = cluster()
    connections: list[object] = []

    def connect(*_: object) -> _NoClose:
        connections.append(1)
        return _NoClose(kafka)

    b = bed(tmp_path, kafka, connect=connect)

    b.sync("DryRun", retry=retry)

    assert connections == []  # nothing recorded in <pool>-execution: no client is made


def test_a_deleted_pool_that_never_executed_needs_no_kafka_connection(tmp_path: Path) -> None:
    def unreachable(*_: object) -> _NoClose:
        raise AssertionError("the deletion of a pool with nothing in flight connected to Kafka")

    # Unreachable from the start: a pass in DryRun makes no client either (the test above).
    b = bed(tmp_path, connect=unreachable)
    b.sync("DryRun")

    # Its Kafka may be gone for good: the finalizer must not wait for it.
    assert b.service.clean_up_blocking(POOL, {**SPEC, "mode": "DryRun"}, b.status()) is None


def test_an_execution_whose_lease_another_process_holds_writes_nothing_to_kafka(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    # A standby replica's view: the active one renewed the pool's Lease a moment ago.
    b.kube.write_lease(LeaseWrite("kafka", "main-execution", POOL, "active-replica", 15, 0, None))
    stops: list[int] = []

    def stopping() -> bool:
        stops.append(1)  # the daemon is told to stop while it waits for the lease
        return len(stops) > 2

    b.sync(
        "Manual",
        live=Liveness(stopping=stopping, paused=lambda: False),
        annotations={APPROVE_ANNOTATION: plan_id},
    )

    assert b.cluster.submitted == [], "nothing was submitted without the lease"
    assert not any(b.cluster.configs.values()), "no throttle was set"
    assert "ExecutionStarted" not in b.kube.reasons()
    lease = b.kube.read_lease("kafka", "main-execution")
    assert lease is not None and lease.holder == "active-replica"


# -- mode Manual with spec.selfHealing.repairHardGoals ----------------------------------------------------


def test_a_rack_repair_runs_unapproved_and_a_new_pod_resumes_it_without_approval(tmp_path: Path) -> None:
    # Broker 4 joins rack a; "orders" 0..2 sit on brokers 1 and 4 only: 3 partitions break RackAware.
    racks = {**RACKS, 4: "a"}
    broken = {("orders", p): (1, 4) if p % 2 else (4, 1) for p in range(3)}
    kafka = FakeKafkaCluster(
        brokers=frozenset(racks), replicas=dict(broken), sizes=dict.fromkeys(broken, 1000), racks=racks
    )
    goals = (GoalObject("racks", {"type": "RackAware", "poolRef": {"name": "main"}}, 1, ()), GOAL)
    repair = {"selfHealing": {"repairHardGoals": True}}
    first_pod = bed(tmp_path / "pod-1", kafka=kafka)
    pausing = Liveness(stopping=lambda: False, paused=lambda: bool(kafka.submitted))

    first_pod.sync("Manual", goals=goals, spec=repair)  # records the goals; a repair waits for them
    assert kafka.submitted == []
    first_pod.sync("Manual", live=pausing, goals=goals, spec=repair)  # runs unapproved, then is paused

    plan_id = first_pod.status()["plan"]["id"]
    assert first_pod.status()["execution"]["planId"] == plan_id
    assert first_pod.status()["execution"]["phase"] == "Paused"
    assert first_pod.conditions()["ApprovalValid"] == ("True", "RepairsHardGoals")
    (auto,) = [e for _, e in first_pod.kube.events if e.reason == "PlanAutoApproved"]
    assert auto.message.startswith(f"Plan {plan_id} auto-approved: it repairs RackAware (racks) (3 ")
    second_pod = bed(tmp_path / "pod-2", kafka=kafka, kube=first_pod.kube)

    second_pod.sync("Manual", goals=goals, spec=repair)

    # The same plan went on (it was stored as a repair), with no approval annotation anywhere.
    assert second_pod.status()["execution"]["phase"] == "Succeeded"
    assert second_pod.status()["plan"]["executedId"] == plan_id
    assert all(len({racks[b] for b in replicas}) == 2 for replicas in kafka.replicas.values())
    assert set(submissions(kafka).values()) == {1}, "every partition moved exactly once"
    assert not any(kafka.configs.values()), "no throttle is left"


@pytest.mark.parametrize(
    ("edit", "held"),
    [
        (
            lambda doc: doc["partitions"][0].update(replicas=doc["partitions"][0]["replicas"][::-1]),
            "holds plan ",
        ),
        (lambda doc: doc.update(partitions="all of them"), "holds no valid plan (ConfigMap main-plan: "),
    ],
)
def test_a_plan_edited_after_approval_is_refused_and_the_approved_plan_runs(
    tmp_path: Path, edit: Any, held: str
) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    stored = b.kube.config_maps[("kafka", "main-plan")]
    genuine = json.loads(stored.data["plan.json"])
    # Someone who may edit ConfigMaps in the namespace, but has no Kafka rights, edits the plan the
    # pool's owner is about to approve, and keeps its id.
    edited = json.loads(stored.data["plan.json"])
    edit(edited)
    stored.data["plan.json"] = json.dumps(edited)

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert "PlanRefused" in b.kube.reasons()
    refused = b.kube.message("PlanRefused")
    assert refused.startswith(
        f"ConfigMap main-plan was edited after the operator wrote it: it records plan '{plan_id}'"
    )
    assert held in refused and refused.endswith("refused (never executed) and replaced by the next plan.")
    # The approved plan ran, exactly; the edit never reached Kafka.
    assert {tp: r for tp, r in b.cluster.replicas.items() if r != REPLICAS[tp]} == {
        (p["topic"], p["partition"]): tuple(p["replicas"]) for p in genuine["partitions"]
    }
    assert b.status()["execution"]["planId"] == plan_id
    assert json.loads(b.kube.config_maps[("kafka", "main-plan")].data["plan.json"]) == genuine


def test_a_pool_of_4500_long_topic_names_plans_and_a_restarted_operator_still_knows_their_partitions(
    tmp_path: Path,
) -> None:
    kafka = cluster()
    for i in range(4_500):  # Kafka's longest names: their partition counts pass 1 MiB
        topic = f"t{i:04d}-" + "x" * 243
        kafka.replicas[(topic, 0)] = (1, 2)
        kafka.sizes[(topic, 0)] = 1000
    b = bed(tmp_path, kafka)

    b.sync("DryRun")
    assert b.conditions()["PlanReady"] == ("True", "Planned")
    kafka.replicas[("t0000-" + "x" * 243, 1)] = (3,)  # a partition added while no operator runs
    kafka.sizes[("t0000-" + "x" * 243, 1)] = 1000
    restarted = bed(tmp_path, kafka, b.kube)
    restarted.sync("DryRun")

    assert restarted.kube.message("NewPartitions").startswith("1 new partition(s) since the previous plan")
    assert restarted.conditions()["Ready"] == ("True", "Reconciled")


def test_a_report_too_large_to_store_is_a_condition_and_the_pool_plans_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def too_large(*_: object) -> None:
        raise ConfigMapTooLarge("ConfigMap kafka/main-loads: its fields take 900000 bytes")

    monkeypatch.setattr(pools, "store_loads", too_large)
    b = bed(tmp_path)

    b.sync("DryRun")

    assert b.conditions()["ReportStored"] == ("False", "TooLarge")
    assert b.conditions()["PlanReady"] == ("True", "Planned")
    assert b.conditions()["Ready"] == ("True", "Reconciled")
    assert b.kube.read_config_map("kafka", "main-plan") is not None


# -- what one process runs at once ---------------------------------------------------------------------


def test_an_execution_beyond_the_process_limit_is_told_once_and_waits_for_a_later_pass(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path, limits=Limits(executions=1))
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    inside, go_on = threading.Event(), threading.Event()

    def held() -> bool:
        # The first execution, mid-run, holds the process's only slot until the test lets it go.
        inside.set()
        go_on.wait(60)
        return False

    approved = {APPROVE_ANNOTATION: plan_id}
    first = threading.Thread(
        target=b.sync,
        args=("Manual",),
        kwargs={"live": Liveness(held, lambda: False), "annotations": approved},
    )
    first.start()
    try:
        assert inside.wait(60)
        other = PoolId("kafka", "other", "uid-other")
        stored = b.service.stored_plan(POOL)
        assert stored is not None
        spec = BrokerPoolSpec.model_validate({**SPEC, "mode": "Auto"})
        seen = SeenPool(1, None, [], None)
        submitted = len(b.cluster.submitted)

        assert b.service.executions.execute(other, stored, spec, {}, RUNNING, seen) is None
        assert b.service.executions.execute(other, stored, spec, {}, RUNNING, seen) is None

        assert len(b.cluster.submitted) == submitted, "the pool beyond the limit submitted nothing"
        assert b.kube.reasons().count("ExecutionQueued") == 1, "told once, not at every pass"
        assert b.kube.message("ExecutionQueued") == (
            f"Plan {plan_id} waits: 1 plan(s) are executing in this operator process, its limit "
            "(KAFKA_BALANCER_MAX_EXECUTIONS); a later pass starts it."
        )
    finally:
        go_on.set()
        first.join(60)
    assert b.status()["execution"]["phase"] == "Succeeded"
    # The slot is free again: the other pool's pass runs its execution (here, of a plan done already).
    assert b.service.executions.execute(other, stored, spec, {}, RUNNING, seen) is not None


def test_passes_run_at_most_the_syncs_and_executions_limits_at_once(tmp_path: Path) -> None:
    b = bed(tmp_path, limits=Limits(executions=1, syncs=2))
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def slow(pool: PoolObject, retry: int, live: Liveness) -> Any:
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        time.sleep(0.2)
        with lock:
            running.pop()

    b.service.sync_blocking = slow  # type: ignore[method-assign]
    pools = [PoolObject(PoolId("kafka", f"p{i}", f"uid-{i}"), 1, SPEC, {}, {}, ()) for i in range(8)]

    async def all_at_once() -> None:
        await asyncio.gather(*(b.service.sync(p, 0, RUNNING) for p in pools))

    asyncio.run(all_at_once())
    assert most[0] == 3, most  # 2 syncs beside 1 execution's worker


def test_an_execution_record_edited_by_hand_is_said_on_the_pool_and_nothing_is_submitted(
    tmp_path: Path,
) -> None:
    b = bed(tmp_path)
    b.sync("Manual")
    plan_id = b.status()["plan"]["id"]
    b.cluster.stuck = set(REPLICAS)
    stopping = Liveness(stopping=lambda: bool(b.cluster.submitted), paused=lambda: False)
    b.sync("Manual", live=stopping, annotations={APPROVE_ANNOTATION: plan_id})
    submitted = len(b.cluster.submitted)
    record = b.kube.config_maps[("kafka", "main-execution")]
    edited = json.loads(record.data["state.json"])
    del edited["moves"][0]["topic"]
    b.kube.write_config_map(
        "kafka", "main-execution", POOL, {**record.data, "state.json": json.dumps(edited)}
    )

    b.sync("Manual", annotations={APPROVE_ANNOTATION: plan_id})

    assert b.conditions()["Executing"] == ("False", "ExecutionFailed")
    failed = b.status()["execution"]
    assert failed["phase"] == "Failed"
    assert failed["message"].startswith(
        "ConfigMap kafka/main-execution: not an execution record this operator wrote"
    )
    assert len(b.cluster.submitted) == submitted, "nothing more reaches Kafka on an unreadable record"
    b.sync("Manual")  # a later pass, the plan no longer approved, neither crashes nor guesses
    assert len(b.cluster.submitted) == submitted and b.cluster.ongoing
    # Which moves and throttles are the pool's is known from the record alone: a deletion waits.
    with pytest.raises(UnreadableConfigMap, match="ConfigMap kafka/main-execution"):
        b.service.clean_up_blocking(POOL, {**SPEC, "mode": "Manual"}, b.status())
    assert b.cluster.ongoing and any(b.cluster.configs.values())
