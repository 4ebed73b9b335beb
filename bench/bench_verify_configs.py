"""The executor's throttle check over many topics: reading their configs one by one vs in batches.

    .venv/bin/python bench/bench_verify_configs.py [--topics 100,1000] [--repeats 5]

Starts a private 3-broker KafkaBed, creates the topics (1 partition, RF 1: the configs are what is
read, not data), then times ``KafkaAdmin.dynamic_configs("topic", names)`` — what the verification
at the end of an execution (and each settle poll) reads for the plan's topics — with one topic per
request and with the batches the executor uses. One JSON line per size and mode; medians.
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

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer.kafka import admin as admin_module
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

CREATE_AT_ONCE = 200


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", default="100,1000", help="comma-separated topic counts (cumulative)")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args(argv)
    options.topics = sorted(int(n) for n in options.topics.split(","))
    return options


def add_topics(bed: KafkaBed, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    for start in range(0, len(names), CREATE_AT_ONCE):
        new = [
            NewTopic(n, num_partitions=1, replication_factor=1) for n in names[start : start + CREATE_AT_ONCE]
        ]
        for future in admin.create_topics(new, operation_timeout=60).values():
            future.result(timeout=120)


def timed(admin: KafkaAdmin, names: list[str], per_request: int, repeats: int) -> list[float]:
    admin_module.TOPICS_PER_DESCRIBE = per_request
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        found = admin.dynamic_configs("topic", names)
        seconds.append(time.perf_counter() - started)
        assert len(found) == len(names)
    return seconds


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    batch = admin_module.TOPICS_PER_DESCRIBE
    libs = provisioned_directory("kafka/provision.sh")
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        bed = KafkaBed(libs, Path(tmp) / "bed", brokers=3, racks=3)
        try:
            bed.start()
            print(
                json.dumps({"machine": platform.platform(), "cpus": os.cpu_count(), "options": vars(options)})
            )
            names: list[str] = []
            for size in options.topics:
                more = [f"verify-{i:05d}" for i in range(len(names), size)]
                add_topics(bed, more)
                names += more
                admin = KafkaAdmin(bed.bootstrap_servers)
                try:
                    for mode, per_request in (("one by one", 1), ("batched", batch)):
                        seconds = timed(admin, names, per_request, options.repeats)
                        line = {"topics": size, "mode": mode, "per_request": per_request}
                        line |= {
                            "median_s": round(statistics.median(seconds), 3),
                            "runs_s": [round(s, 3) for s in seconds],
                        }
                        print(json.dumps(line), flush=True)
                finally:
                    admin.close()
        finally:
            bed.stop()


if __name__ == "__main__":
    main()
