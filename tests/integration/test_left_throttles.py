"""The operator removes a throttle an execution had to leave on a dead broker once that broker is back.

Real Kafka bed and real apiserver: the execution state is mirrored in the pool's ConfigMap as the
operator keeps it; the broker really goes down and comes back with its data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.kafka_checks import create_topic, delete_topic, extra_broker

from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.execution import inherited_throttles, release_returned_brokers
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.state_mirror import STATE_KEY, StateMirror
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.execution_state import BROKER_RATES, ExecutionState, Move, MoveStatus
from kafka_balancer.reconcile.pool import execution_config_map
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

NAMESPACE = "kb-test-left-throttles"
POOL = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-000000000002")


@pytest.fixture
def client(kube_bed: kube.KubeBed) -> Iterator[Kube]:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield Kube(str(kube_bed.kubeconfig))
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
