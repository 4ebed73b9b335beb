"""Collector overhead: the requests Kafka's brokers receive per collector pass, counted by the brokers.

    .venv/bin/python bench/bench_collector_overhead.py [--sizes 100,1000] [--topic-partitions 100]
        [--groups 10] [--passes 10] [--interval 3]

Starts a private 3-broker KafkaBed (racks a, b, c) whose brokers run the Prometheus JMX exporter
(``hack/prometheus/provision.sh``), so each broker's own request counters
(``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=…``) can be read over HTTP. Per
size (cumulative: topics of --topic-partitions partitions, RF 3, are added until the bed holds that
many partitions, each with a few records) --groups consumer groups hold committed offsets on one
topic each. Then three windows of --passes × --interval seconds each:

- idle: no collector, the bed's own traffic (followers' fetches) as the baseline;
- operator: each pass as the operator makes it, on fresh clients (``observe_cluster``: the
  connection check, then the pass);
- snapshot: each pass on one long-lived reader, as ``kafka-balancer snapshot`` makes it.

Each window's requests by API, divided by the passes, is the cost of one pass as the brokers saw
it (APIs the idle window saw too are the bed's own: left out, and listed); the collector's own
count (``Observation.requests``, which leaves out the clients' connection set-up, metadata
refreshes and coordinator lookups) is printed next to it.
Requests per minute follow for the operator's default interval (``detectionIntervalSeconds`` 60)
and the snapshot command's (``--interval`` 10s). One JSON line per size and mode.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic  # its real home; confluent_kafka.admin does not re-export it typed

from kafka_balancer.kafka.collector import AdminReader, Observation, observe, observe_cluster
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until
from kafka_balancer_dev.localbed.provisioning import provisioned_directory

REQUESTS = re.compile(r'^kafka_network_requestmetrics_requests_total\{.*?request="(\w+)".*\}\s+(\S+)$')
RECORDS_PER_PARTITION = 5
OPERATOR_INTERVAL_S = 60  # BrokerPool detectionIntervalSeconds default
SNAPSHOT_INTERVAL_S = 10  # kafka-balancer snapshot --interval default


def broker_requests(endpoints: Sequence[str]) -> Counter[str]:
    """Requests received so far by API name, summed over brokers and API versions."""
    total: Counter[str] = Counter()
    for endpoint in endpoints:
        with urllib.request.urlopen(f"http://{endpoint}/metrics", timeout=10) as response:
            for line in response.read().decode().splitlines():
                found = REQUESTS.match(line)
                if found:
                    total[found.group(1)] += int(float(found.group(2)))
    return total


def settled_requests(endpoints: Sequence[str], moving: set[str]) -> Counter[str]:
    """The counters once every API outside ``moving`` (the bed's own background traffic) has stopped
    changing: a broker counts a request when its response has gone out, shortly after the client has it."""
    last = broker_requests(endpoints)
    changed: set[str] = set()

    def stable() -> Counter[str] | None:
        nonlocal last, changed
        now = broker_requests(endpoints)
        changed = {api for api in set(now) | set(last) if api not in moving and now[api] != last[api]}
        last = now
        return None if changed else now

    try:
        return wait_until(
            stable, timeout_s=30, what="the brokers' request counters to settle", interval_s=0.5
        )
    except BedError as err:
        raise BedError(f"{err}; still counting: {sorted(changed)}") from err


def add_topics(bed: KafkaBed, first: int, count: int, partitions: int) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    names = [f"load-{i:03d}" for i in range(first, first + count)]
    new = [NewTopic(name, num_partitions=partitions, replication_factor=3) for name in names]
    for future in admin.create_topics(new, operation_timeout=60).values():
        future.result(timeout=120)

    def led() -> bool:
        topics = admin.list_topics(timeout=10).topics
        return all(
            name in topics
            and len(topics[name].partitions) == partitions
            and all(p.leader >= 0 for p in topics[name].partitions.values())
            for name in names
        )

    wait_until(led, timeout_s=120, what=f"leaders for {count} new topics")
    producer = Producer({"bootstrap.servers": bed.bootstrap_servers, "linger.ms": 50})
    for name in names:
        for p in range(partitions):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce(name, value=os.urandom(100), partition=p)
            producer.poll(0)
    if producer.flush(120) != 0:
        raise BedError("records for the new topics were not delivered within 120s")
    return names


def commit_groups(bed: KafkaBed, topics: Sequence[str], groups: int, partitions: int) -> None:
    """Group g commits its offsets on topic g (mod the topics), as a consumer that read it all would."""
    for g in range(groups):
        topic = topics[g % len(topics)]
        consumer = Consumer(
            {
                "bootstrap.servers": bed.bootstrap_servers,
                "group.id": f"bench-group-{g}",
                "enable.auto.commit": False,
            }
        )
        try:
            consumer.commit(
                offsets=[TopicPartition(topic, p, RECORDS_PER_PARTITION) for p in range(partitions)],
                asynchronous=False,
            )
        finally:
            consumer.close()


def window(
    endpoints: Sequence[str], moving: set[str], passes: int, interval_s: float, one_pass: Callable[[], Any]
) -> tuple[Counter[str], list[float], list[Any]]:
    """Requests the brokers received during ``passes`` calls of ``one_pass``, their wall times and results."""
    before = settled_requests(endpoints, moving)
    walls, results = [], []
    next_start = time.monotonic()
    for _ in range(passes):
        time.sleep(max(0.0, next_start - time.monotonic()))
        next_start = time.monotonic() + interval_s
        started = time.perf_counter()
        results.append(one_pass())
        walls.append(time.perf_counter() - started)
    time.sleep(max(0.0, next_start - time.monotonic()))  # the window is passes × interval long
    return settled_requests(endpoints, moving) - before, walls, results


def per_pass(received: Counter[str], idle: Counter[str], passes: int) -> dict[str, float]:
    """Requests per pass by API. The APIs of the bed's own traffic (followers' fetches: the collector
    sends none) are left out, their counts vary more between windows than any pass could add."""
    apis = sorted(api for api in received if idle[api] == 0)
    return {api: round(received[api] / passes, 1) for api in apis}


def report(
    size: int,
    mode: str,
    costs: dict[str, float],
    walls: list[float],
    own: list[Observation],
    idle: Counter[str],
) -> dict[str, Any]:
    total = sum(costs.values())
    counted: Counter[str] = Counter()
    for observation in own:
        counted.update(observation.requests)
    return {
        "partitions": size,
        "mode": mode,
        "requests_per_pass": round(total, 1),
        "by_api": costs,
        "collector_count_per_pass": {api: n / len(own) for api, n in sorted(counted.items())},
        "requests_per_minute": {
            f"every_{OPERATOR_INTERVAL_S}s": round(total * 60 / OPERATOR_INTERVAL_S, 1),
            f"every_{SNAPSHOT_INTERVAL_S}s": round(total * 60 / SNAPSHOT_INTERVAL_S, 1),
        },
        "pass_wall_s_median": round(statistics.median(walls), 3),
        "background_apis_left_out": sorted(api for api, n in idle.items() if n > 0),
        "partitions_seen": len(own[-1].partitions),
    }


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100,1000", help="partition counts, ascending (topics are added)")
    parser.add_argument("--topic-partitions", type=int, default=100)
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between pass starts")
    options = parser.parse_args(argv)
    options.sizes = [int(s) for s in options.sizes.split(",")]
    if options.sizes != sorted(options.sizes) or any(s % options.topic_partitions for s in options.sizes):
        parser.error("--sizes must ascend and be multiples of --topic-partitions")
    return options


def measure(bed: KafkaBed, size: int, options: argparse.Namespace) -> list[dict[str, Any]]:
    """The idle, operator and snapshot windows on the bed as it is now (``size`` partitions)."""
    endpoints = list(bed.metrics_endpoints.values())
    # Followers fetch all the time; those counters never settle and are subtracted instead.
    moving = {"Fetch", "FetchFollower"}
    idle, _, _ = window(endpoints, moving, options.passes, options.interval, lambda: None)
    moving |= {api for api, n in idle.items() if n > 0}
    received, walls, own = window(
        endpoints,
        moving,
        options.passes,
        options.interval,
        lambda: observe_cluster(bed.bootstrap_servers, {}),
    )
    reports = [report(size, "operator", per_pass(received, idle, options.passes), walls, own, idle)]
    reader = AdminReader(bed.bootstrap_servers)
    try:
        received, walls, own = window(
            endpoints, moving, options.passes, options.interval, lambda: observe(reader)
        )
    finally:
        reader.close()
    reports.append(report(size, "snapshot", per_pass(received, idle, options.passes), walls, own, idle))
    return reports


def main(argv: Sequence[str] | None = None) -> None:
    options = parse(argv)
    libs = provisioned_directory("kafka/provision.sh")
    agent = provisioned_directory("prometheus/provision.sh")
    with tempfile.TemporaryDirectory(prefix="bench-collector-") as tmp:
        bed = KafkaBed(libs, Path(tmp) / "bed", brokers=3, racks=3, metrics_agent=agent)
        try:
            bed.start()
            print(
                json.dumps({"machine": platform.platform(), "cpus": os.cpu_count(), "options": vars(options)})
            )
            topics: list[str] = []
            for size in options.sizes:
                missing = size // options.topic_partitions - len(topics)
                topics += add_topics(bed, len(topics), missing, options.topic_partitions)
                commit_groups(bed, topics, options.groups, options.topic_partitions)
                for line in measure(bed, size, options):
                    print(json.dumps(line), flush=True)
        finally:
            bed.stop()


if __name__ == "__main__":
    main()
