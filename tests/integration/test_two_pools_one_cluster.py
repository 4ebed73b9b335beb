"""Two pools on one Kafka cluster never execute at the same time, on the real beds.

Two BrokerPools of two namespaces reach the same Kafka bed; each executes its own plan (its own
topic, a producer writing to each) as its Auto pass would, through the operator's ExecutionService,
both started at the same moment. Kafka's reassignments and the brokers' throttle configs are polled
every 0.5 s throughout. Real: Kafka, the apiserver's Leases and the pools' state ConfigMaps. Kept in
memory (tests/support/kube_kept.py): the pools' status patches and Events, as this bed has no
BrokerPool objects and runs no kopf.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from tests.support.kafka_checks import (
    assert_no_throttle_left,
    broker_throttles,
    ongoing_reassignments,
    partitions,
    topic_with_traffic,
)
from tests.support.kube_kept import StatusKept

from kafka_balancer.formats.plan_file import parse_plan
from kafka_balancer.k8s.executions import ExecutionService
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import Liveness, SeenPool
from kafka_balancer.k8s.pools import parse_spec
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.reconcile.pool_input import StoredPlan
from kafka_balancer.reconcile.status import ExecutionPhase
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed

OPERATOR = "kb-test-two-pools"
FIRST = PoolId("kb-test-two-pools-a", "orders", "0b1c9a52-5a53-4c4e-9d1c-00000000000a")
SECOND = PoolId("kb-test-two-pools-b", "billing", "0b1c9a52-5a53-4c4e-9d1c-00000000000b")
EVERY_S = 0.5
TARGETS = {0: [3, 1], 1: [4, 2]}


@pytest.fixture(scope="module")
def client(kube_bed: kube.KubeBed) -> Iterator[StatusKept]:
    for namespace in (OPERATOR, FIRST.namespace, SECOND.namespace):
        created = kube_bed.kubectl("create", "namespace", namespace)
        assert created.returncode == 0, created.stderr
    yield StatusKept(str(kube_bed.kubeconfig))
    for namespace in (OPERATOR, FIRST.namespace, SECOND.namespace):
        kube_bed.kubectl("delete", "namespace", namespace, "--wait=false")


@dataclass
class Sample:
    at: float
    first: bool  # the first pool's topic has a reassignment in flight
    second: bool
    throttled: int  # replication throttle configs set on brokers


def longest_overlap(samples: list[Sample]) -> float:
    """The longest stretch of consecutive samples in which both pools had a reassignment in flight."""
    longest, since = 0.0, None
    for sample in samples:
        if sample.first and sample.second:
            since = sample.at if since is None else since
            longest = max(longest, sample.at - since + EVERY_S)
        else:
            since = None
    return longest


def test_two_pools_on_one_cluster_execute_one_at_a_time_and_the_second_says_whom_it_waits_for(
    kafka_bed: KafkaBed, client: StatusKept, tmp_path: Path
) -> None:
    spec = parse_spec(
        {
            "mode": "Auto",
            "kafka": {"bootstrapServers": kafka_bed.bootstrap_servers},
            "capacity": {"disk": "1Gi", "networkIn": "10Mi", "networkOut": "10Mi", "cpu": 2},
            "execution": {"throttleBytesPerSecond": "200Ki"},
        }
    )
    # One operator process serves both pools, as one Deployment serves every namespace.
    service = ExecutionService(
        client,
        tmp_path,
        Timings(wake_s=0.5, execution_poll_s=1.0),
        OperatorMetrics(CollectorRegistry()),
        namespace=OPERATOR,
    )
    live = Liveness(stopping=lambda: False, paused=lambda: False)
    with (
        topic_with_traffic(kafka_bed, "orders", [[1, 2], [1, 2]]) as first_traffic,
        topic_with_traffic(kafka_bed, "billing", [[1, 2], [1, 2]]) as second_traffic,
    ):
        topics = {FIRST: first_traffic.topic, SECOND: second_traffic.topic}
        samples: list[Sample] = []
        done = threading.Event()

        failures: list[BaseException] = []

        def sample() -> None:
            try:
                while not done.is_set():
                    at = time.monotonic()
                    moving = {tp.topic for tp in ongoing_reassignments(kafka_bed)}
                    throttled = len(broker_throttles(kafka_bed))
                    samples.append(Sample(at, topics[FIRST] in moving, topics[SECOND] in moving, throttled))
                    done.wait(max(0.0, EVERY_S - (time.monotonic() - at)))
            except BaseException as err:  # said by the test, not lost with the thread
                failures.append(err)

        phases: dict[PoolId, ExecutionPhase | None] = {}

        def execute(pool: PoolId) -> None:
            document = {
                "version": 1,
                "partitions": [
                    {"topic": topics[pool], "partition": p, "replicas": r} for p, r in TARGETS.items()
                ],
            }
            stored = StoredPlan(f"plan-{pool.name}", parse_plan(document), 2_000_000, len(TARGETS))
            phases[pool] = service.execute(pool, stored, spec, {}, live, SeenPool(1, None, [], None))

        sampler = threading.Thread(target=sample)
        runs = [threading.Thread(target=execute, args=(pool,)) for pool in (FIRST, SECOND)]
        sampler.start()
        try:
            for run in runs:
                run.start()
            for run in runs:
                run.join(timeout=600)
                assert not run.is_alive(), "an execution did not end in 10 minutes"
        finally:
            done.set()
            sampler.join(timeout=60)

        assert not failures, failures
        assert phases == {FIRST: ExecutionPhase.SUCCEEDED, SECOND: ExecutionPhase.SUCCEEDED}
        both = longest_overlap(samples)
        first_moving = sum(s.first for s in samples) * EVERY_S
        second_moving = sum(s.second for s in samples) * EVERY_S
        print(
            f"\n{len(samples)} samples every {EVERY_S}s: first pool moving {first_moving:.1f}s, second "
            f"{second_moving:.1f}s, both at once {both:.1f}s at the longest; at most "
            f"{max(s.throttled for s in samples)} broker throttle configs set"
        )
        assert first_moving > 0 and second_moving > 0, "each pool's moves were seen in flight"
        assert both == 0.0
        waits = [
            status["execution"]["waiting"]
            for _, _, status in client.statuses
            if (status.get("execution") or {}).get("waiting")
        ]
        assert len(set(waits)) == 1, waits
        [waited] = set(waits)
        assert waited in {
            f"waiting: pool {FIRST.key} is executing a plan on the same Kafka cluster",
            f"waiting: pool {SECOND.key} is executing a plan on the same Kafka cluster",
        }
        assert any(e.reason == "ExecutionWaiting" for _, e in client.events)
        for traffic in (first_traffic, second_traffic):
            assert {p: r[0] for p, r in partitions(kafka_bed, traffic.topic).items()} == TARGETS
            assert ongoing_reassignments(kafka_bed, traffic.topic) == []
            assert_no_throttle_left(kafka_bed, traffic.topic)
            traffic.assert_all_read_back()
