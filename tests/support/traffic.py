"""A known load on a real Kafka topic: a paced producer and a committing consumer group, each
recording when and to which partition its records went, so measured rates can be checked."""

from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kafka_balancer_dev.localbed.procs import wait_until

Stamp = tuple[float, int]  # (epoch seconds, partition)


def _partition(msg: Message) -> int:
    partition = msg.partition()
    assert partition is not None, "a delivered or consumed record has a partition"
    return partition


def create_topic(bootstrap_servers: str, prefix: str, partitions: int, rf: int) -> str:
    """A fresh topic whose partitions all have a leader."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=30)[topic].result(timeout=60)

    def ready() -> bool:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
        return len(meta.partitions) == partitions and all(p.leader >= 0 for p in meta.partitions.values())

    wait_until(ready, timeout_s=30, what=f"leaders of {topic}")
    return topic


class KnownTraffic:
    """``rate`` records/s of ``value_bytes`` each (keys spread them over the partitions), read by
    one consumer group committing every 500 ms. Use as a context manager."""

    def __init__(self, bootstrap_servers: str, topic: str, rate: int, value_bytes: int) -> None:
        self.topic = topic
        self.rate_msgs = rate
        self.value_bytes = value_bytes
        self.group = f"traffic-{uuid.uuid4().hex[:8]}"
        self.delivered: list[Stamp] = []
        self.consumed: list[Stamp] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 5, "acks": "all"})
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
            }
        )
        self._threads = [threading.Thread(target=self._produce), threading.Thread(target=self._consume)]

    def __enter__(self) -> KnownTraffic:
        self._consumer.subscribe([self.topic])
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
        self._consumer.close()

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered.append((time.time(), _partition(msg)))
        else:
            self.errors.append(str(err))

    def _produce(self) -> None:
        value = b"x" * self.value_bytes
        start = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            # Pacing, not synchronisation: the next record is due at start + sent / rate.
            due = start + sent / self.rate_msgs
            self._producer.poll(max(0.0, due - time.monotonic()))
            if time.monotonic() >= due:
                self._producer.produce(
                    self.topic, value, key=str(sent).encode(), on_delivery=self._on_delivery
                )
                sent += 1
        self._producer.flush(30)

    def _consume(self) -> None:
        while not self._stop.is_set():
            msg = self._consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                self.consumed.append((time.time(), _partition(msg)))

    def wait_flowing(self, timeout_s: float = 60.0) -> None:
        """Until the consumer group has received a second's worth of records."""
        wait_until(
            lambda: len(self.consumed) > self.rate_msgs, timeout_s=timeout_s, what=f"{self.group} to consume"
        )

    def rate(self, stamps: list[Stamp], since: float, until: float, partition: int | None = None) -> float:
        """Bytes/s over (since, until], of one partition or all."""
        count = sum(1 for t, p in stamps if since < t <= until and partition in (None, p))
        return count * self.value_bytes / (until - since)

    def payload(self, until: float, partition: int | None = None) -> int:
        """Bytes delivered up to ``until``."""
        return sum(1 for t, p in self.delivered if t <= until and partition in (None, p)) * self.value_bytes
