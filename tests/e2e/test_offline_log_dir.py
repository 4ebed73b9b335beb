"""End to end, an offline log dir healed by the operator: a dir of a running broker of the Kafka bed
fails and the pool (spec.selfHealing.enabled, mode Auto) reads it from its own DescribeLogDirs:
condition LogDirFailure and event LogDirOffline name the broker and the dir, gauge
kafka_balancer_offline_log_dirs counts it, and the pool moves exactly the replicas of that dir onto
the other broker of the rack until every partition is fully replicated again. (Messages kept across
the same healing: tests/integration/test_offline_log_dir.py.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from tests.support.kafka_checks import create_topic, delete_topic, extra_broker, partitions
from tests.support.log_dirs import FAILING_DIR, fail_dir

from .conftest import OperatorProcess, wait_for
from .objects import PLAN_TIMEOUT_S, apply, condition, events, get, goal, pool
from .test_lifecycle import metric_samples

HEALING = {"selfHealing": {"enabled": True}}


def test_the_pool_names_an_offline_log_dir_and_moves_its_replicas_onto_their_rack(
    kube_bed: kube.KubeBed, kafka_bed: KafkaBed, operator: OperatorProcess, namespace: str
) -> None:
    racks = kafka_bed.racks
    with extra_broker(kafka_bed, "a") as broker:
        live_a = sorted(b for b, rack in racks.items() if rack == "a" and b != broker)
        b, c = (next(x for x, rack in racks.items() if rack == r) for r in ("b", "c"))
        topic = create_topic(kafka_bed, "e2e-disk", [[broker, b, c]] * 6)
        admin = KafkaAdmin(kafka_bed.bootstrap_servers)
        restore = None
        try:
            # The broker creates a new topic's logs a moment after the topic exists.
            wait_for(
                lambda: sum(t == topic for d in admin.log_dirs([broker])[broker] for t, _ in d.replicas) == 6,
                PLAN_TIMEOUT_S,
                f"broker {broker} to hold its 6 replicas of {topic}",
            )
            [failing] = [d for d in admin.log_dirs([broker])[broker] if d.path.endswith(FAILING_DIR)]
            stranded = sorted(n for t, n in failing.replicas if t == topic)
            assert stranded, f"no replica of {topic} in {failing.path}"
            apply(
                kube_bed,
                namespace,
                pool("main", kafka_bed.bootstrap_servers, "Auto", topic, **HEALING),
                goal("racks", "main", type="RackAware"),
            )
            wait_for(
                lambda: (
                    condition(get(kube_bed, namespace, "bp", "main"), "LogDirFailure").get("reason")
                    == "AllLogDirsOnline"
                ),
                PLAN_TIMEOUT_S,
                "the pool to read every broker's log dirs",
                operator,
            )
            restore = fail_dir(Path(failing.path))
            failed_at = time.monotonic()

            def offline() -> dict[str, Any] | None:
                found = condition(get(kube_bed, namespace, "bp", "main"), "LogDirFailure")
                return found if found.get("reason") == "LogDirsOffline" else None

            said = wait_for(offline, PLAN_TIMEOUT_S, f"the pool to see {failing.path} offline", operator)
            seen_s = time.monotonic() - failed_at

            def healed() -> dict[int, tuple[list[int], int, set[int]]] | None:
                now = partitions(kafka_bed, topic)
                off = all(broker not in now[n][0] for n in stranded)
                return now if off and all(set(r) == isr for r, _, isr in now.values()) else None

            after = wait_for(healed, PLAN_TIMEOUT_S, f"{topic} fully replicated off {failing.path}", operator)
            healed_s = time.monotonic() - failed_at

            def told_healed() -> dict[str, str] | None:
                reasons = {e["reason"]: e["message"] for e in events(kube_bed, namespace)}
                return reasons if "LogDirHealed" in reasons else None

            reasons = wait_for(told_healed, PLAN_TIMEOUT_S, "event LogDirHealed", operator)
            gauge = metric_samples(operator)[
                ("kafka_balancer_offline_log_dirs", (("pool", f"{namespace}/main"),))
            ]
        finally:
            admin.close()
            delete_topic(kafka_bed, topic)
            if restore is not None:
                kafka_bed.stop_broker(broker)
                restore()

    assert (
        f"log dir {failing.path} of broker {broker} is offline ({len(stranded)} replicas)" in said["message"]
    )
    assert "re-homed to other brokers, same rack first" in said["message"]
    assert f"Log dir {failing.path} of broker {broker} is offline" in reasons["LogDirOffline"]
    assert gauge == 1
    for n, (replicas, _, _) in after.items():
        if n in stranded:
            assert set(replicas) - {b, c} <= set(live_a) and len(replicas) == 3, (n, replicas)
        else:
            assert sorted(replicas) == sorted([broker, b, c]), f"partition {n} was not on {failing.path}"
    print(
        f"\noffline log dir: the pool named it {seen_s:.1f} s and had its replicas fully replicated on "
        f"their rack {healed_s:.1f} s after the dir failed"
    )
