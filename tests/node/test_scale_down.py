"""Scaling the StatefulSet that runs a pool's brokers, as users do it.

A scale-down: the chart's webhook (its Service, certificate and configuration) asked by the apiserver,
the operator's pod draining the leaving broker into its rack, the StatefulSet controller deleting its
pod once the retried scale-down goes through. Refused through the scale subresource (`kubectl scale`)
and through the manifest (`kubectl apply`, as a GitOps sync sends it); retried through the manifest, it
goes through. A scale-up: let through by the same webhook, its new broker warmed up step by step.

Kafka runs as the StatefulSet ``kafka`` (tests/node/kafka_statefulset.py: node.id 100 + ordinal, racks
a, b, c, a, then b for ordinal 4), a producer writing all along.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_balancer.k8s.executions import kafka_admin
from kafka_balancer_dev.localbed import kafka_statefulset as sts
from kafka_balancer_dev.localbed import kube, node
from tests.e2e.conftest import wait_for
from tests.e2e.objects import apply, events, get, goal, pool
from tests.e2e.test_lifecycle import BALANCE_TIMEOUT_S, assert_clean, balanced, pool_status, watch_warm_up
from tests.e2e.test_scale_down import annotation, broker_state, replicas_of_set, scale
from tests.support.kafka_checks import partitions, topic_with_traffic, under_replicated

from .conftest import OWN_TOPIC_GOALS, OperatorPods
from .kafka_statefulset import KafkaStatefulSet

LEAVING = sts.broker_id(3)  # the pod of ordinal 3, rack a, as broker 100
# 12 partitions, RF 2, rack-aware: broker 103 holds 5 replicas, none beside broker 100 (its rack).
PAIRS = ((0, 1), (1, 2), (2, 3), (3, 1), (0, 2), (1, 3), (2, 0), (3, 2), (1, 0), (2, 1), (0, 2), (3, 1))


def apply_replicas(api: kube.KubeBed, namespace: str, name: str, replicas: int) -> tuple[bool, str]:
    """``kubectl apply`` of the StatefulSet's manifest with ``replicas``, as a user or a GitOps sync
    sends it: the live object's spec, without what the apiserver writes."""
    live = get(api, namespace, "statefulset", name)
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": live["metadata"].get("labels", {})},
        "spec": {**live["spec"], "replicas": replicas},
    }
    done = api.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
    return done.returncode == 0, (done.stderr or done.stdout).strip()


def apply_pool_of_set(kafka: KafkaStatefulSet, api: kube.KubeBed, topic: str, **spec: Any) -> None:
    """An Auto pool ``main`` of ``topic`` naming the brokers' StatefulSet, in its namespace, with the
    goals of the pool's own topic."""
    apply(
        api,
        kafka.namespace,
        pool(
            "main",
            kafka.spec.bootstrap_servers,
            "Auto",
            topic,
            statefulSet={"name": sts.BROKERS, "brokerIdOffset": sts.BROKER_ID_OFFSET},
            **spec,
        ),
        *(goal(name, "main", **g) for name, g in OWN_TOPIC_GOALS),
    )


@pytest.fixture
def scale_down_pool(
    node_bed: node.NodeBed, pods: OperatorPods, kafka_statefulset: KafkaStatefulSet
) -> Iterator[str]:
    """An Auto pool ``main`` naming the StatefulSet, in its namespace. At the end the StatefulSet is
    scaled back to 4 (through the webhook: a scale-up withdraws the record and the operator uncordons
    the broker that joins again) and the pool deleted, for the tier's other tests."""
    namespace = kafka_statefulset.namespace
    try:
        yield namespace
    finally:
        try:
            kafka_statefulset.scale(kafka_statefulset.spec.brokers)
            wait_for(
                lambda: not pool_status(node_bed.api, namespace).get("cordonedBrokers"),
                120,
                f"broker {LEAVING} uncordoned",
                pods,
            )
        finally:
            node_bed.kubectl("delete", "bp,bg", "--all", "-n", namespace, "--timeout=180s", timeout_s=200.0)


def test_a_scale_down_of_the_brokers_statefulset_waits_for_the_drain_then_removes_the_pod(
    node_bed: node.NodeBed,
    pods: OperatorPods,
    kafka_statefulset: KafkaStatefulSet,
    scale_down_pool: str,
) -> None:
    kafka, api, namespace = kafka_statefulset, node_bed.api, scale_down_pool
    racks = kafka.racks
    assignment = [[sts.broker_id(a), sts.broker_id(b)] for a, b in PAIRS]

    with topic_with_traffic(kafka, "node-scale-down", assignment) as traffic:
        topic = traffic.topic
        apply_pool_of_set(kafka, api, topic)
        wait_for(balanced(api, namespace), BALANCE_TIMEOUT_S, "the pool to be Balanced", pods)
        start = {p: replicas for p, (replicas, _, _) in partitions(kafka, topic).items()}
        held = [p for p, replicas in start.items() if LEAVING in replicas]
        assert held
        with kafka_admin(kafka.bootstrap_servers, {}, 10.0) as admin:
            sizes = admin.partition_sizes([(topic, p) for p in held], brokers=[LEAVING])
            # The webhook counts every replica the broker holds: the tier's other topics on this
            # StatefulSet's Kafka (__consumer_offsets among them) leave with it too.
            on_leaving = sum(LEAVING in state.replicas for state in admin.partitions().values())
        moved_bytes = {p: sizes[(topic, p, LEAVING)] for p in held}

        # The apiserver calls the chart's webhook through its Service: refused with the pool's sentence.
        requested = time.monotonic()
        allowed, said = scale(api, namespace, sts.BROKERS, 3)
        assert not allowed
        assert (
            f"StatefulSet {namespace}/{sts.BROKERS}: scale-down to 3 replicas held back: brokers "
            f"[{LEAVING}] still hold {on_leaving} replicas"
        ) in said, said
        assert f"BrokerPool {namespace}/main drains them into their racks" in said, said
        assert replicas_of_set(api, namespace, sts.BROKERS) == 4
        assert annotation(api, namespace) == {
            "statefulSet": sts.BROKERS,
            "replicas": 3,
            "brokers": [LEAVING],
            "replicasHeld": on_leaving,
        }
        # The same count in the manifest, as kubectl apply or a GitOps sync sends it: the same answer.
        allowed, said = apply_replicas(api, namespace, sts.BROKERS, 3)
        assert not allowed and "scale-down to 3 replicas held back" in said, said
        assert replicas_of_set(api, namespace, sts.BROKERS) == 4

        wait_for(
            lambda: broker_state(api, namespace, LEAVING) == "Drained",
            BALANCE_TIMEOUT_S,
            f"broker {LEAVING} to be Drained",
            pods,
        )
        # Retried the GitOps way, once the broker is empty: it goes through.
        allowed, said = apply_replicas(api, namespace, sts.BROKERS, 3)
        assert allowed, said
        wait_for(
            lambda: len(kafka.broker_pods()) == 3 and sorted(kafka.registered()) == [100, 101, 102],
            180,
            f"pod {sts.BROKERS}-3 gone and broker {LEAVING} fenced",
            pods,
        )
        took = time.monotonic() - requested
        after = {p: replicas for p, (replicas, _, _) in partitions(kafka, topic).items()}
        traffic.assert_all_read_back()
        # While the topic exists (the block deletes it): nothing under-replicated, no throttle left.
        assert under_replicated(kafka) == []
        assert_clean(kafka, topic)

    # Every replica the broker held moved to a broker of its rack: nothing crossed racks.
    across = {p: moved_bytes[p] for p in held if not any(racks[b] == racks[LEAVING] for b in after[p])}
    assert all(LEAVING not in replicas for replicas in after.values())
    assert across == {}, f"moved across racks: {across}; {start} -> {after}"
    assert pool_status(api, namespace).get("cordonedBrokers") == [LEAVING]
    print(
        f"\nnode scale-down: first request → pod {sts.BROKERS}-3 gone {took:.1f}s; "
        f"{len(held)} replicas, {sum(moved_bytes.values())} bytes moved, "
        f"{sum(across.values())} bytes across racks"
    )


JOINING = sts.broker_id(4)  # the pod of ordinal 4, rack b, as broker 104
WARM_UP_STEPS = 2


@pytest.fixture
def scale_up_pool(
    node_bed: node.NodeBed, pods: OperatorPods, kafka_statefulset: KafkaStatefulSet
) -> Iterator[str]:
    """The StatefulSet's namespace, for an Auto pool ``main`` naming it. At the end the pool is deleted
    first, so that no pool holds back the StatefulSet's scale-down back to 4 (its broker 104 holds
    nothing once the test's topic is gone: the pool moves only that topic)."""
    namespace = kafka_statefulset.namespace
    try:
        yield namespace
    finally:
        try:
            node_bed.kubectl("delete", "bp,bg", "--all", "-n", namespace, "--timeout=180s", timeout_s=200.0)
        finally:
            kafka_statefulset.scale(kafka_statefulset.spec.brokers)


def test_a_scale_up_of_the_brokers_statefulset_warms_the_new_broker_up_step_by_step(
    node_bed: node.NodeBed,
    pods: OperatorPods,
    kafka_statefulset: KafkaStatefulSet,
    scale_up_pool: str,
) -> None:
    kafka, api, namespace = kafka_statefulset, node_bed.api, scale_up_pool
    assignment = [[sts.broker_id(a), sts.broker_id(b)] for a, b in PAIRS]

    with topic_with_traffic(kafka, "node-scale-up", assignment) as traffic:
        topic = traffic.topic
        apply_pool_of_set(kafka, api, topic, warmUp={"duration": "60s", "steps": WARM_UP_STEPS})
        wait_for(balanced(api, namespace), BALANCE_TIMEOUT_S, "the 4-broker pool to be Balanced", pods)
        start = {p: replicas for p, (replicas, _, _) in partitions(kafka, topic).items()}

        # `kubectl scale` through the same webhook that holds a scale-down back: let through at once.
        requested = time.monotonic()
        kafka.scale(5)
        registered = time.monotonic()
        warm_up = watch_warm_up(api, namespace, kafka, topic, JOINING, pods)
        finished = time.monotonic()
        seen, first_step = warm_up.most, warm_up.first_step
        after = {p: replicas for p, (replicas, _, _) in partitions(kafka, topic).items()}
        racks = kafka.racks
        traffic.assert_all_read_back()
        assert under_replicated(kafka) == []
        assert_clean(kafka, topic)

    full = sum(len(r) for r in start.values()) / 5  # replicas per broker once the new one is fully warm
    assert sorted(seen) == list(range(1, WARM_UP_STEPS + 1)), f"every warm-up step shows in status: {seen}"
    for step, most in seen.items():
        # Never more than its share of a full broker (one replica of rounding): never full at once.
        assert most <= math.ceil(full * step / WARM_UP_STEPS) + 1, f"step {step}: {most} replicas ({seen})"
    held_at_end = sum(JOINING in replicas for replicas in after.values())
    # Fully warm: inside the spread goal's band of a full broker (±10 %, whole replicas).
    assert math.floor(full * 0.9) <= held_at_end <= math.ceil(full * 1.1), after
    assert all(len({racks[b] for b in replicas}) == len(replicas) for replicas in after.values()), after
    # It took replicas in its first step already, from whichever brokers the plan chose: a partition
    # with no replica in rack b may send it one from another rack and stay rack-aware.
    assert first_step, seen
    assert "WarmUpStep" in {e["reason"] for e in events(api, namespace)}
    print(
        f"\nnode scale-up: kubectl scale → broker {JOINING} registered {registered - requested:.1f}s, "
        f"→ warm and Balanced {finished - registered:.1f}s later; most replicas per step {seen}"
    )
