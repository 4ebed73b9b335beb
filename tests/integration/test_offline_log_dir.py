"""A log dir (JBOD) that fails under a running broker of the real Kafka bed, with a producer writing.

What Kafka 4.3.1 does, seen on this bed: the broker marks the dir offline within seconds (its
DescribeLogDirs answer names the dir with KAFKA_STORAGE_ERROR and lists no replica in it), the
replicas there drop out of the ISR and lose leadership, and nothing recreates them: the partitions
stay under-replicated. AlterReplicaLogDirs to the broker's other dir answers KAFKA_STORAGE_ERROR. So
``kafka-balancer snapshot | plan | execute`` re-homes them on another broker of the same rack, and
every partition is whole again with every message kept and no throttle left.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.kafka_checks import (
    Writer,
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    extra_broker,
    partitions,
)
from tests.support.log_dirs import FAILING_DIR, fail_dir
from tests.support.messages import consume_digest

from kafka_balancer.cli import main
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

GOALS = (
    "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancerGoal\nmetadata: {name: racks}\n"
    "spec: {type: RackAware}\n"
)
CAPACITIES = ["--disk-capacity", "1e11", "--network-capacity", "1e8", "--cpu-capacity", "8"]


def test_replicas_on_a_failed_log_dir_are_rehomed_in_their_rack_with_every_message_kept(
    kafka_bed: KafkaBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with extra_broker(kafka_bed, rack="a") as broker:
        topic = create_topic(kafka_bed, "offlinedir", [[broker, 2, 3]] * 6)
        admin = KafkaAdmin(kafka_bed.bootstrap_servers)
        writer = Writer(kafka_bed, topic)
        writer.write(2_000, 300)
        producing = threading.Thread(target=writer.write_until_stopped, daemon=True)
        producing.start()
        restore: Callable[[], None] | None = None
        try:
            # The broker creates a new topic's logs a moment after the topic exists.
            wait_until(
                lambda: sum(t == topic for d in admin.log_dirs([broker])[broker] for t, _ in d.replicas) == 6,
                timeout_s=60,
                what=f"broker {broker} to hold its 6 replicas of {topic}",
            )
            [failing] = [d for d in admin.log_dirs([broker])[broker] if d.path.endswith(FAILING_DIR)]
            stranded = sorted(n for t, n in failing.replicas if t == topic)
            assert stranded, f"no replica of {topic} in {failing.path}"
            restore = fail_dir(Path(failing.path))
            failed_at = time.monotonic()

            def offline() -> bool:
                return not {d.path: d.online for d in admin.log_dirs([broker])[broker]}[failing.path]

            wait_until(offline, timeout_s=60, what=f"{failing.path} offline")
            wait_until(
                lambda: all(broker not in partitions(kafka_bed, topic)[n][2] for n in stranded),
                timeout_s=60,
                what=f"the replicas in {failing.path} out of the ISR",
            )
            # AlterReplicaLogDirs cannot save them: the broker cannot read the replica it would copy.
            [other] = [d.path for d in admin.log_dirs([broker])[broker] if d.path != failing.path]
            refused = admin.alter_replica_log_dirs({(topic, n, broker): other for n in stranded})
            assert refused == dict.fromkeys(((topic, n, broker) for n in stranded), "KafkaStorageError")

            snap = tmp_path / "snapshot.json"
            code = main([
                "snapshot", "--bootstrap-server", kafka_bed.bootstrap_servers, "--window", "4s",
                "--interval", "1s", *CAPACITIES, "--output", str(snap),
            ])  # fmt: skip
            assert code == 0, capsys.readouterr().err
            document = json.loads(snap.read_text())
            # The test's own topic: other tests' topics on the shared bed are not this plan's.
            document["partitions"] = [p for p in document["partitions"] if p["topic"] == topic]
            [seen] = [d for b in document["brokers"] if b["id"] == broker for d in b["logDirs"]
                      if d["path"] == failing.path]  # fmt: skip
            assert seen["online"] is False
            snap.write_text(json.dumps(document))
            goals = tmp_path / "goals.yaml"
            goals.write_text(GOALS)
            plan = tmp_path / "plan.json"
            code = main(["plan", "--snapshot", str(snap), "--goals", str(goals), "--output", str(plan)])
            assert code == 0, capsys.readouterr().err
            moves = {e["partition"]: e["replicas"] for e in json.loads(plan.read_text())["partitions"]}
            assert sorted(moves) == stranded
            rack_a = {b for b, rack in kafka_bed.racks.items() if rack == "a"} - {broker}
            for replicas in moves.values():
                assert broker not in replicas and set(replicas) & rack_a, replicas

            # No --force: the replicas out of the ISR are the ones the plan moves off their broker.
            code = main([
                "execute", "--plan", str(plan), "--bootstrap-server", kafka_bed.bootstrap_servers,
                "--throttle", "10000000",
            ])  # fmt: skip
            assert code == 0, capsys.readouterr().err

            def whole() -> bool:
                now = partitions(kafka_bed, topic)
                off = all(broker not in now[n][0] for n in stranded)
                return off and all(set(r) == isr for r, _, isr in now.values())

            wait_until(
                whole, timeout_s=120, what=f"every partition of {topic} fully replicated off {failing.path}"
            )
            healed_s = time.monotonic() - failed_at
            with capsys.disabled():
                print(f"\noffline log dir: every partition whole again {healed_s:.1f} s after the dir failed")
            assert_no_throttle_left(kafka_bed, topic)
            writer.stop.set()
            producing.join(timeout=60)
            assert consume_digest(kafka_bed.bootstrap_servers, topic, writer.sent) == writer.result()
        finally:
            writer.stop.set()
            producing.join(timeout=60)
            admin.close()
            delete_topic(kafka_bed, topic)
            if restore is not None:
                kafka_bed.stop_broker(broker)
                restore()
