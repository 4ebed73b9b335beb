"""How long a broker is away when it restarts: what ``execution.deadBrokerTimeoutSeconds`` must outlast.

    .venv/bin/python bench/bench_broker_restart.py [--mib 2048] [--repeats 3]

Starts a private 3-broker KafkaBed, writes ``--mib`` MiB to partitions that broker 3 holds (as
leader, RF 2), then restarts broker 3 ``--repeats`` times each way: a graceful stop (controlled
shutdown, what a rolling restart does) and a crash (SIGKILL right after more writes: its next start
recovers the logs it had not flushed). For each: how long the stop took until the broker left the
metadata, how long the start took until it was unfenced, and until every one of its partitions had
it back in the ISR; the broker's away time is the stop and the start. One JSON line per way; medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

TOPIC = "restart"
PARTITIONS = 6
RESTARTED = 3
RECORD = 64 * 1024


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=2048, help="MiB the restarted broker holds")
    parser.add_argument("--fresh-mib", type=int, default=256, help="MiB written just before a crash")
    parser.add_argument("--repeats", type=int, default=3)
    return parser.parse_args(argv)


def write(bed: KafkaBed, mib: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bed.bootstrap_servers,
            "acks": "1",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.kbytes": 256 * 1024,
        }
    )
    payload = os.urandom(RECORD)  # incompressible, as most production payloads are once batched
    for index in range(mib * 1024 * 1024 // RECORD):
        while True:
            try:
                producer.produce(TOPIC, payload, partition=index % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} records not delivered")


def in_sync(admin: AdminClient) -> bool:
    meta = admin.list_topics(topic=TOPIC, timeout=10).topics[TOPIC]
    return all(RESTARTED in p.isrs for p in meta.partitions.values())


def restart(bed: KafkaBed, admin: AdminClient, crash: bool) -> dict[str, float]:
    started = time.monotonic()
    bed.stop_broker(RESTARTED, crash=crash)
    stopped = time.monotonic()
    bed.restart_broker(RESTARTED)
    unfenced = time.monotonic()
    wait_until(lambda: in_sync(admin), timeout_s=600, what=f"broker {RESTARTED} back in every ISR")
    caught_up = time.monotonic()
    return {
        "stop_s": stopped - started,
        "start_s": unfenced - stopped,
        "away_s": unfenced - started,
        "in_sync_s": caught_up - started,
    }


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    libs = provisioned_directory("kafka/provision.sh")
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as run:
        bed = KafkaBed(libs, Path(run), brokers=3, racks=3)
        bed.start()
        try:
            admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
            replicas = [[RESTARTED, 1 + p % 2] for p in range(PARTITIONS)]
            [future] = admin.create_topics(
                [NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=replicas)]
            ).values()
            future.result(timeout=60)
            began = time.monotonic()
            write(bed, options.mib)
            wrote_s = time.monotonic() - began
            for crash in (False, True):
                runs = []
                for _ in range(options.repeats):
                    if crash:
                        write(bed, options.fresh_mib)
                    runs.append(restart(bed, admin, crash))
                figures = {k: round(statistics.median(r[k] for r in runs), 1) for k in runs[0]}
                line = {
                    "way": "crash" if crash else "graceful",
                    "mib": options.mib,
                    "fresh_mib": options.fresh_mib if crash else 0,
                    "repeats": options.repeats,
                    **{f"median_{k}": v for k, v in figures.items()},
                    "max_away_s": round(max(r["away_s"] for r in runs), 1),
                    "write_s": round(wrote_s, 1),
                    "load_1m": round(os.getloadavg()[0], 2),
                    "cpus": os.cpu_count(),
                    "machine": platform.machine(),
                }
                print(json.dumps(line), flush=True)
        finally:
            bed.stop()


if __name__ == "__main__":
    main()
