"""What an execution leaves behind is taken back by the operator's passes: a throttle left on a dead
broker once that broker is back, and a failed plan that is not run again (cancelled, throttles gone).

Real Kafka bed and real apiserver: the execution state is mirrored in the pool's ConfigMap as the
operator keeps it; the broker really goes down and comes back with its data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from tests.support.kafka_checks import (
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    extra_broker,
    ongoing_reassignments,
    partitions,
    topic_with_traffic,
)
from tests.support.kube_kept import EventsKept

from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.executions import ExecutionService
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.mirrored_executor import inherited_throttles, release_returned_brokers
from kafka_balancer.k8s.pools import parse_spec
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.k8s.state_mirror import STATE_KEY, StateMirror
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.execution_state import BROKER_RATES, ExecutionState, Move, MoveStatus
from kafka_balancer.kafka.throttle import sync_throttles
from kafka_balancer.reconcile.names import execution_config_map
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

NAMESPACE = "kb-test-left-throttles"
POOL = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-000000000002")
# A second pool of the namespace, for the failed plan's record.
FAILED = PoolId(NAMESPACE, "failed", "0b1c9a52-5a53-4c4e-9d1c-000000000003")
CAPACITY = {"disk": "1Gi", "networkIn": "10Mi", "networkOut": "10Mi", "cpu": 2}


@pytest.fixture(scope="module")
def client(kube_bed: kube.KubeBed) -> Iterator[EventsKept]:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield EventsKept(str(kube_bed.kubeconfig))
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def test_a_dead_brokers_throttle_is_released_at_the_first_reconcile_after_it_is_back(
    kafka_bed: KafkaBed, client: Kube, tmp_path: Path
) -> None:
    made: list[KafkaAdmin] = []
    with extra_broker(kafka_bed, "c") as added:

        def connect() -> KafkaAdmin:
            # As the operator does: a client per reconcile, not reusing metadata from the outage.
            made.append(KafkaAdmin(kafka_bed.bootstrap_servers))
            return made[-1]

        def rates_on_added() -> set[str]:
            configs = connect().dynamic_configs("broker", [str(added)])[str(added)]
            return set(BROKER_RATES) & set(configs)

        topic = create_topic(kafka_bed, "left", [[added, 1]])
        try:
            # What an execution leaves when its destination dies: our rates on it, recorded, plan over.
            connect().alter_configs("broker", str(added), dict.fromkeys(BROKER_RATES, "100000"))
            now = time.time()
            move = Move(topic, 0, (1, 2), (added, 1), size=1000, status=MoveStatus.FAILED, finished_at=now)
            state = ExecutionState(
                moves=(move,),
                created_at=now,
                updated_at=now,
                throttle_rate=100000,
                throttled_brokers={str(added): BROKER_RATES},
                finished_at=None,
            )
            StateMirror(client, POOL).write("plan-a", state, force=True)
            kafka_bed.stop_broker(added)

            state_dir = tmp_path / "executions"
            assert release_returned_brokers(connect, StateMirror(client, POOL), state_dir) == []  # still down
            # A new plan made meanwhile takes the record over, so the throttle is not forgotten.
            assert inherited_throttles(StateMirror(client, POOL)) == {str(added): BROKER_RATES}

            kafka_bed.restart_broker(added)
            assert rates_on_added() == set(BROKER_RATES)
            assert release_returned_brokers(connect, StateMirror(client, POOL), state_dir) == [str(added)]

            # The controller has committed the removal; the broker shows it a moment later.
            wait_until(
                lambda: rates_on_added() == set(), timeout_s=30, what=f"no rate left on broker {added}"
            )
            mirrored = blobs.load(client, NAMESPACE, execution_config_map("main"), POOL, STATE_KEY)
            assert mirrored is not None
            fields, document = mirrored
            assert fields["plan.id"] == "plan-a"
            assert json.loads(document)["throttles"]["brokers"] == {}
            assert release_returned_brokers(connect, StateMirror(client, POOL), state_dir) == []
        finally:
            for admin in made:
                admin.close()
            delete_topic(kafka_bed, topic)


def test_a_failed_plan_that_is_not_run_again_is_cancelled_and_leaves_no_throttle(
    kafka_bed: KafkaBed, client: EventsKept, tmp_path: Path
) -> None:
    service = ExecutionService(
        client, tmp_path, Timings(), OperatorMetrics(CollectorRegistry()), namespace=NAMESPACE
    )
    spec = parse_spec({"kafka": {"bootstrapServers": kafka_bed.bootstrap_servers}, "capacity": CAPACITY})
    with (
        topic_with_traffic(kafka_bed, "failed", [[1, 2]]) as traffic,
        closing(KafkaAdmin(kafka_bed.bootstrap_servers)) as admin,
    ):
        # What a Manual execution leaves when it fails mid-copy: its record unfinished, a move in
        # flight (copying at 10 kB/s, so it is still copying), its throttles set.
        now = time.time()
        move = Move(
            traffic.topic, 0, (1, 2), (3, 2), size=2_000_000, status=MoveStatus.IN_FLIGHT, started_at=now
        )
        state = ExecutionState(moves=(move,), created_at=now, updated_at=now, throttle_rate=10_000)
        mirror = StateMirror(client, FAILED)

        def commit(current: ExecutionState) -> ExecutionState:
            mirror.write("plan-b", current, force=True)
            return current

        state = commit(sync_throttles(admin, state, commit))
        admin.alter_reassignments({(traffic.topic, 0): (3, 2)})
        assert ongoing_reassignments(kafka_bed, traffic.topic)

        # A pass whose status says nothing failed (a paused plan, say) leaves the execution alone.
        assert service.release_left_throttles(FAILED, spec, {}, None) == []
        assert ongoing_reassignments(kafka_bed, traffic.topic)

        released = service.release_left_throttles(FAILED, spec, {}, "plan-b")

        assert released == sorted(state.throttled_brokers)
        # The controller has cancelled it; the brokers' metadata shows it a moment later.
        wait_until(
            lambda: (
                not ongoing_reassignments(kafka_bed, traffic.topic)
                and partitions(kafka_bed, traffic.topic)[0][0] == [1, 2]
            ),
            timeout_s=30,
            what="the failed plan's move cancelled, back on brokers 1 and 2",
        )
        assert_no_throttle_left(kafka_bed, traffic.topic)
        recorded = mirror.load()
        assert recorded is not None and recorded[0] == "plan-b" and recorded[1].finished_at is not None
        assert {m.status for m in recorded[1].moves} == {MoveStatus.CANCELLED}
        assert [e.message for _, e in client.events] == [
            "Plan plan-b failed and is not run again: 1 move(s) in flight cancelled and every "
            "throttle it set removed."
        ]
        traffic.assert_all_read_back()
