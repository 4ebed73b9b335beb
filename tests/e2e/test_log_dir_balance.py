"""End to end, a pool balances the log dirs (JBOD) of a broker: a topic whose replicas on one broker
the test piled into one of its dirs, and a pool in Auto mode with the goals IntraBrokerDiskDistribution
and RackAware. The operator reads the dirs with DescribeLogDirs, plans moves between them and carries
them out with AlterReplicaLogDirs under the intra-broker throttle: the broker's dirs end within the
goal's band, each replica in the dir the plan named, the pool's status counts the bytes copied between
dirs apart from those between brokers, and no throttle or under-replicated partition is left."""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from kafka_balancer.kafka.admin import KafkaAdmin, LogDirState
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import (
    create_topic,
    delete_topic,
    extra_broker,
    throttles_left,
    under_replicated,
)

from .conftest import OperatorProcess, wait_for
from .objects import PLAN_TIMEOUT_S, apply, get, goal, pool
from .test_lifecycle import metric_samples

PARTITIONS = 6
MESSAGES_PER_PARTITION = 1_500
MESSAGE_BYTES = 1_000
# IntraBrokerDiskDistribution's default rangePercent: each dir within its broker's mean × (1 ± 10 %).
RANGE = 0.10


def _produce_evenly(bed: KafkaBed, topic: str) -> None:
    """The same bytes into every partition: the dirs can then be balanced to the byte."""
    producer = Producer({"bootstrap.servers": bed.bootstrap_servers, "acks": "all", "linger.ms": 5})
    failures: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    for n in range(MESSAGES_PER_PARTITION * PARTITIONS):
        producer.produce(
            topic,
            value=bytes(MESSAGE_BYTES),
            partition=n % PARTITIONS,
            on_delivery=delivered,
        )
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures[:3]


def _topic_bytes(dirs: tuple[LogDirState, ...], topic: str) -> dict[str, int]:
    """The bytes of ``topic``'s replicas in each dir (and 0 for a dir without any)."""
    return {d.path: sum(size for (t, _), size in d.replicas.items() if t == topic) for d in dirs}


def _dir_of(dirs: tuple[LogDirState, ...], topic: str) -> dict[int, str]:
    return {n: d.path for d in dirs for (t, n) in d.replicas if t == topic}


def test_a_pool_moves_replicas_between_a_brokers_log_dirs_until_they_are_within_the_band(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    racks = kafka_bed.racks
    # A broker of its own: its dirs hold only this topic, so the band is the test's to reach.
    with extra_broker(kafka_bed, "a") as broker:
        b, c = (next(x for x, rack in racks.items() if rack == r) for r in ("b", "c"))
        topic = create_topic(kafka_bed, "e2e-dirs", [[broker, b, c]] * PARTITIONS)
        admin = KafkaAdmin(kafka_bed.bootstrap_servers)
        try:
            _produce_evenly(kafka_bed, topic)
            wait_for(
                lambda: len(_dir_of(admin.log_dirs([broker])[broker], topic)) == PARTITIONS,
                PLAN_TIMEOUT_S,
                f"broker {broker} to hold its {PARTITIONS} replicas of {topic}",
            )
            pile = sorted(d.path for d in admin.log_dirs([broker])[broker])[-1]
            where = _dir_of(admin.log_dirs([broker])[broker], topic)
            refused = admin.alter_replica_log_dirs(
                {(topic, n, broker): pile for n, path in where.items() if path != pile}
            )
            assert refused == {}

            def piled() -> dict[str, int] | None:
                dirs = admin.log_dirs([broker])[broker]
                sizes = _topic_bytes(dirs, topic)
                copying = any(t == topic for d in dirs for t, _ in d.future)
                done = set(_dir_of(dirs, topic).values()) == {pile} and not copying
                return (
                    sizes
                    if done and sizes[pile] >= PARTITIONS * MESSAGES_PER_PARTITION * MESSAGE_BYTES
                    else None
                )

            before = wait_for(piled, PLAN_TIMEOUT_S, f"every replica of {topic} on broker {broker} in {pile}")
            apply(
                kube_bed,
                namespace,
                pool("main", kafka_bed.bootstrap_servers, "Auto", topic),
                goal("dirs", "main", type="IntraBrokerDiskDistribution"),
                goal("racks", "main", type="RackAware"),
            )
            applied_at = time.monotonic()

            def balanced() -> dict[str, int] | None:
                dirs = admin.log_dirs([broker])[broker]
                sizes = _topic_bytes(dirs, topic)
                mean = sum(sizes.values()) / len(sizes)
                within = all(abs(size - mean) <= RANGE * mean for size in sizes.values())
                copying = any(t == topic for d in dirs for t, _ in d.future)
                return sizes if within and not copying else None

            after = wait_for(balanced, PLAN_TIMEOUT_S, f"broker {broker}'s dirs within the band", operator)
            balanced_s = time.monotonic() - applied_at

            def executed() -> dict[str, Any] | None:
                found: dict[str, Any] = get(kube_bed, namespace, "bp", "main").get("status", {})
                return found if found.get("execution", {}).get("phase") == "Succeeded" else None

            status = wait_for(executed, PLAN_TIMEOUT_S, "the pool's execution to succeed", operator)
            # The execution's state (mirrored into <pool>-execution) keeps the dirs its plan named.
            recorded = get(kube_bed, namespace, "configmap", "main-execution")
            moves = json.loads(recorded["data"]["state.json"])["moves"]
            final = _dir_of(admin.log_dirs([broker])[broker], topic)
            gauge = metric_samples(operator)[
                ("kafka_balancer_execution_log_dir_bytes_moved", (("pool", f"{namespace}/main"),))
            ]
            throttles = throttles_left(kafka_bed, topic)
            lagging = under_replicated(kafka_bed)
        finally:
            admin.close()
            delete_topic(kafka_bed, topic)

    # Each replica of the broker the plan named a dir for sits in that dir, out of the pile.
    named = {
        m["partition"]: m["logDirs"][m["target"].index(broker)]
        for m in moves
        if m["topic"] == topic and m["logDirs"] and m["logDirs"][m["target"].index(broker)] != "any"
    }
    assert named and all(path != pile for path in named.values()), moves
    assert {n: final[n] for n in named} == named
    execution = status["execution"]
    moved = sum(before.values()) - after[pile]
    assert execution["dirBytesTotal"] >= moved > 0, (execution, before, after)
    assert execution["dirBytesDone"] == execution["dirBytesTotal"]
    assert gauge == execution["dirBytesDone"]
    assert throttles == []
    assert lagging == []
    print(
        f"\nlog dirs: broker {broker}'s dirs went from {before} to {after} bytes of {topic}, within the "
        f"band {balanced_s:.1f} s after the pool was applied; {execution['dirBytesTotal']} bytes copied "
        f"between dirs, {execution['bytesTotal']} between brokers"
    )
