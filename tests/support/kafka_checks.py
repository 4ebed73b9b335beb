"""What the no-loss and clean-up checks on the real Kafka bed share: a checksumming writer, topic
creation with an exact assignment, partition state, throttles and reassignments left behind."""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.cimpl import NewTopic
from kafka import KafkaAdminClient
from kafka import errors as kp_errors

from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.procs import wait_until

from .messages import Digest, consume_digest

T = TypeVar("T")


class Cluster(Protocol):
    """What the checks read of a Kafka cluster: where this machine's clients bootstrap, and the rack of
    each running broker (the bed's processes, or the node tier's StatefulSet)."""

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def racks(self) -> Mapping[int, str | None]: ...


THROTTLES = {
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    # The throttle of copies between a broker's own log dirs (AlterReplicaLogDirs).
    "replica.alter.log.dirs.io.max.bytes.per.second",
}


def admin_of(bed: Cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": bed.bootstrap_servers})


def create_topic(bed: Cluster, prefix: str, assignment: list[list[int]]) -> str:
    """A fresh topic named ``prefix-<random>`` whose partition p has exactly ``assignment[p]``."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = admin_of(bed)
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)
    wait_until(lambda: len(partitions(bed, topic)) == len(assignment), timeout_s=30, what=f"{topic} metadata")
    return topic


def delete_topic(bed: Cluster, topic: str) -> None:
    """Delete a topic and wait until metadata no longer lists it (works with a replica's broker down)."""
    admin = admin_of(bed)
    admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=60)
    wait_until(
        lambda: topic not in admin.list_topics(timeout=10).topics, timeout_s=30, what=f"{topic} deleted"
    )


@contextmanager
def extra_broker(bed: KafkaBed, rack: str) -> Iterator[int]:
    """One more broker of the shared bed for a test that may stop and restart it; stopped at the end
    if it is running. Delete the test's topics inside the block: none may stay on a stopped broker."""
    added = bed.add_broker(rack=rack)
    try:
        yield added
    finally:
        if added in bed.racks:
            bed.stop_broker(added)


def replicas_on_missing_brokers(bed: Cluster) -> list[str]:
    """Every partition of the cluster naming a broker that is not in the cluster metadata."""
    metadata = admin_of(bed).list_topics(timeout=10)
    return sorted(
        f"{name}-{p} on {sorted(set(m.replicas) - set(metadata.brokers))}"
        for name, meta in metadata.topics.items()
        for p, m in meta.partitions.items()
        if not set(m.replicas) <= set(metadata.brokers)
    )


def partitions(bed: Cluster, topic: str) -> dict[int, tuple[list[int], int, set[int]]]:
    """partition → (replicas, leader, isr) from metadata."""
    meta = admin_of(bed).list_topics(topic=topic, timeout=10).topics[topic]
    return {p: (list(m.replicas), m.leader, set(m.isrs)) for p, m in meta.partitions.items()}


def under_replicated(bed: Cluster) -> list[str]:
    """Every partition of the cluster whose ISR is smaller than its replica set."""
    topics = admin_of(bed).list_topics(timeout=10).topics
    return sorted(
        f"{name}-{p}"
        for name, meta in topics.items()
        for p, m in meta.partitions.items()
        if set(m.isrs) != set(m.replicas)
    )


def throttles_left(bed: Cluster, topic: str) -> list[str]:
    """Replication throttles set on any running broker or on ``topic``."""
    return [*broker_throttles(bed), *_throttles(bed, [ConfigResource("topic", topic)])]


def _throttles(bed: Cluster, resources: list[ConfigResource]) -> list[str]:
    admin = admin_of(bed)
    left = []
    for resource in resources:  # one a request: a broker answers for itself alone
        [future] = admin.describe_configs([resource], request_timeout=30).values()
        for entry in future.result(timeout=30).values():
            if entry.name in THROTTLES and entry.value and not entry.is_default:
                left.append(f"{resource.name}: {entry.name}={entry.value}")
    return left


def assert_no_throttle_left(bed: Cluster, topic: str, timeout_s: float = 30.0) -> None:
    """No replication throttle on any running broker or on ``topic`` within ``timeout_s``: a broker
    shows a removal the controller has committed a moment later (and a topic's configs are read from
    any broker)."""
    deadline = time.monotonic() + timeout_s
    while (left := throttles_left(bed, topic)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], f"throttles still set after {timeout_s:.0f}s: {left}"


def ongoing_reassignments(bed: Cluster, topic: str | None = None, timeout_s: float = 30.0) -> list[Any]:
    """The reassignments of ``topic`` (of every topic: None) Kafka's controller reports, asked through
    a fresh client until one gets an answer: a broker just thawed serves its metadata from before the
    freeze, and a client bootstrapped from it may address the request to a broker that has left
    (UnknownBrokerIdError)."""
    deadline = time.monotonic() + timeout_s
    while True:
        admin = KafkaAdminClient(bootstrap_servers=bed.bootstrap_servers.split(","))
        try:
            return [tp for tp in admin.list_partition_reassignments() if topic in (None, tp.topic)]
        except (kp_errors.UnknownBrokerIdError, kp_errors.NodeNotReadyError):
            if time.monotonic() > deadline:
                raise
        finally:
            admin.close()
        time.sleep(0.5)


def broker_throttles(bed: Cluster) -> list[str]:
    """The replication throttle configs set on the running brokers, as ``broker: name=value``."""
    return _throttles(bed, [ConfigResource("broker", str(b)) for b in sorted(bed.racks)])


def remove_broker_throttles(bed: Cluster, left: list[str]) -> None:
    """Remove the configs :func:`broker_throttles` listed."""
    admin = admin_of(bed)
    names: dict[str, list[str]] = defaultdict(list)
    for item in left:
        broker, setting = item.split(": ", 1)
        names[broker].append(setting.split("=", 1)[0])
    for broker, configs in names.items():
        entries = [ConfigEntry(n, None, incremental_operation=AlterConfigOpType.DELETE) for n in configs]
        [done] = admin.incremental_alter_configs(
            [ConfigResource("broker", broker, incremental_configs=entries)]
        ).values()
        done.result(timeout=30)


class Writer:
    """Produces keyed messages (acks=all, idempotent) and remembers per-key counts and sha256 of the
    values, in order, to compare with what a consumer reads back."""

    def __init__(self, bed: Cluster, topic: str) -> None:
        self.topic = topic
        config = {"bootstrap.servers": bed.bootstrap_servers, "acks": "all", "enable.idempotence": True}
        self.producer = Producer({**config, "linger.ms": 5})
        self.counts: Counter[str] = Counter()
        self.digests: defaultdict[str, Any] = defaultdict(hashlib.sha256)
        self.failures: list[KafkaError] = []
        self.rng = random.Random(11)
        self.sent = 0
        self.stop = threading.Event()

    def _delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self.failures.append(err)

    def write(self, count: int, size: int) -> None:
        for _ in range(count):
            key = f"key-{self.sent % 31}"
            value = self.rng.randbytes(size)
            self.producer.produce(self.topic, key=key.encode(), value=value, on_delivery=self._delivered)
            self.producer.poll(0)
            self.counts[key] += 1
            self.digests[key].update(value)
            self.sent += 1
        assert self.producer.flush(60) == 0, "messages still undelivered after 60s"

    def write_until_stopped(self, bytes_per_second: int = 40_000) -> None:
        """Writes at a steady pace until stopped. Paced well below the tests' throttles: a producer
        outpacing a throttled copy keeps the new replica from ever catching up, and an unpaced one
        writes as fast as the machine allows, so how long a move takes would depend on the machine."""
        started, written = time.monotonic(), 0
        while not self.stop.is_set():
            self.write(50, 300)
            written += 50 * 300
            self.stop.wait(max(0.0, started + written / bytes_per_second - time.monotonic()))

    def result(self) -> Digest:
        assert not self.failures, self.failures[:3]
        return self.counts, {k: d.hexdigest() for k, d in self.digests.items()}


@contextmanager
def writing_and_sampling(writer: Writer, sample: Callable[[], T], every_s: float) -> Iterator[list[T]]:
    """For the block: ``writer`` produces in a thread and another collects ``sample()`` every
    ``every_s`` seconds into the list yielded; both are stopped and joined on the way out."""
    seen: list[T] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.append(sample())
            stop.wait(every_s)

    watcher = threading.Thread(target=watch)
    background = threading.Thread(target=writer.write_until_stopped)
    watcher.start()
    background.start()
    try:
        yield seen
    finally:
        writer.stop.set()
        stop.set()
        background.join(timeout=60)
        watcher.join(timeout=30)


class Traffic:
    """Keyed messages written all along (acks=all): what was sent is compared with what is read back."""

    def __init__(self, bed: Cluster, topic: str) -> None:
        self.bed = bed
        self.topic = topic
        self.writer = Writer(bed, topic)
        self.writer.write(4_000, 500)
        self.thread = threading.Thread(target=self.writer.write_until_stopped)
        self.thread.start()

    def stop(self) -> None:
        self.writer.stop.set()
        self.thread.join(timeout=120)

    def assert_all_read_back(self) -> None:
        self.stop()
        sent = self.writer.result()
        received = consume_digest(self.bed.bootstrap_servers, self.topic, self.writer.sent)
        assert sum(received[0].values()) == self.writer.sent, "messages lost"
        assert received == sent
        print(f"\n{self.writer.sent} messages written, all read back")


@contextmanager
def topic_with_traffic(bed: Cluster, prefix: str, assignment: list[list[int]]) -> Iterator[Traffic]:
    """A new topic with traffic on it; the writer is stopped before the topic goes, even when the test
    failed (a writer left running would fail on the deleted topic in whatever test runs next)."""
    topic = create_topic(bed, prefix, assignment)
    try:
        traffic = Traffic(bed, topic)
        try:
            yield traffic
        finally:
            traffic.stop()
    finally:
        delete_topic(bed, topic)
