"""The operator as users run it: a pod installed by the chart, balancing a skewed topic in Auto mode
while a producer writes, with every message read back (`kubectl get bp,bg` tells the state), warming
a new broker up and draining one into its own rack as the operator process does in tests/e2e."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.e2e.conftest import wait_for
from tests.e2e.objects import PLAN_TIMEOUT_S, apply, goal, pool
from tests.e2e.test_lifecycle import (
    BALANCE_TIMEOUT_S,
    GOALS,
    assert_clean,
    balanced,
    drain_scenario,
    pool_status,
    rack_aware,
    replica_counts,
    traffic,
    warm_up_scenario,
)
from tests.support.kafka_checks import create_topic

from .conftest import OperatorPods, namespace_of


def test_the_in_cluster_operator_balances_a_skewed_topic_under_traffic(
    node_bed: node.NodeBed, operator_release: float, pod_kafka: KafkaBed
) -> None:
    # Its pool is deleted at the end: it would go on balancing its topic beside later tests.
    with namespace_of(node_bed, "kb-node-balance") as namespace:
        # 8 partitions, RF 2, all on brokers 1 and 2: brokers 3 and 4 are empty.
        topic = create_topic(pod_kafka, "node-auto", [[1, 2] if p % 2 else [2, 1] for p in range(8)])

        with traffic(pod_kafka, topic):
            # The pod reaches the brokers on the node's bridge, never on this machine's loopback.
            apply(
                node_bed.api,
                namespace,
                pool("main", pod_kafka.pod_bootstrap_servers, "Auto", topic),
                *(goal(name, "main", **g) for name, g in GOALS),
            )
            applied = time.monotonic()
            wait_for(
                lambda: pool_status(node_bed.api, namespace).get("plan", {}).get("id"),
                PLAN_TIMEOUT_S,
                "the pool's first plan",
            )
            print(f"pool applied → its first plan in-cluster: {time.monotonic() - applied:.1f}s")
            wait_for(balanced(node_bed.api, namespace), BALANCE_TIMEOUT_S, "the pool to report Balanced")

        counts = replica_counts(pod_kafka, topic)
        assert sorted(counts) == [1, 2, 3, 4] and all(3 <= n <= 5 for n in counts.values()), counts
        assert rack_aware(pod_kafka, topic)
        assert_clean(pod_kafka, topic)
        shown = node_bed.kubectl("get", "bp,bg", "-n", namespace)
        assert shown.returncode == 0, shown.stderr
        print(shown.stdout)
        pool_line = next(line for line in shown.stdout.splitlines() if line.startswith("brokerpool"))
        assert "Auto" in pool_line and "True" in pool_line, shown.stdout


def test_a_new_broker_is_warmed_up_step_by_step_from_its_own_rack_in_cluster(
    node_bed: node.NodeBed, pods: OperatorPods, kafka_bed_factory: Callable[..., KafkaBed]
) -> None:
    bed = kafka_bed_factory(brokers=3, racks=3, pod_host=node.NODE_IP)  # its own: it gains a broker
    bed.start()
    with namespace_of(node_bed, "kb-node-warm-up") as namespace:
        warm_up_scenario(node_bed.api, bed, namespace, pods, in_cluster=True)


def test_a_drained_broker_empties_into_its_own_rack_in_cluster(
    node_bed: node.NodeBed, pods: OperatorPods, kafka_bed_factory: Callable[..., KafkaBed]
) -> None:
    bed = kafka_bed_factory(brokers=4, racks=3, pod_host=node.NODE_IP)  # its own: broker 4 is stopped
    bed.start()
    with namespace_of(node_bed, "kb-node-drain") as namespace:
        drain_scenario(node_bed.api, bed, namespace, pods, in_cluster=True)
