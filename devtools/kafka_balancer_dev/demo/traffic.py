"""The demo's live traffic: a keyed producer that remembers what it wrote, and the read-back check."""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer

from kafka_balancer.kafka.client_log import with_client_log
from kafka_balancer_dev.errors import BedError

Digest = tuple[Counter[str], dict[str, str]]


class Traffic:
    """Writes ``rate`` keyed messages a second until stopped (acks=all, idempotent), keeping per-key
    counts and SHA-256 of the values in order, to compare with what a consumer reads back."""

    def __init__(self, bootstrap: str, topic: str, rate: int = 200, size: int = 1_000) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.rate = rate
        self.size = size
        config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        self._producer = Producer(with_client_log({**config, "linger.ms": 5}))
        self._counts: Counter[str] = Counter()
        self._digests: defaultdict[str, Any] = defaultdict(hashlib.sha256)
        self._failures: list[KafkaError] = []
        self._rng = random.Random(3)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo traffic", daemon=True)
        self.sent = 0

    def write(self, count: int) -> None:
        for _ in range(count):
            key = f"key-{self.sent % 64}"
            value = self._rng.randbytes(self.size)
            self._producer.produce(self.topic, key=key.encode(), value=value, on_delivery=self._delivered)
            self._producer.poll(0)
            self._counts[key] += 1
            self._digests[key].update(value)
            self.sent += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> Digest:
        """Stop writing, wait for every delivery; what was written."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        if self._producer.flush(60) != 0 or self._failures:
            raise BedError(f"the demo's producer could not deliver every message: {self._failures[:1]}")
        return self._counts, {key: digest.hexdigest() for key, digest in self._digests.items()}

    def _run(self) -> None:
        while not self._stop.is_set():
            self.write(max(1, self.rate // 10))
            self._stop.wait(0.1)

    def _delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self._failures.append(err)


def read_back(bootstrap: str, topic: str, count: int, timeout_s: float = 120.0) -> Digest:
    """Per-key counts and SHA-256 of ``count`` messages read from the start of ``topic``."""
    consumer = Consumer(
        with_client_log(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"demo-check-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
    )
    counts: Counter[str] = Counter()
    digests: defaultdict[str, Any] = defaultdict(hashlib.sha256)
    # The last offset read of each partition: a rebalance (the group's coordinator moving, as Kafka's
    # own leader rebalancing may move it) starts a partition again from the earliest offset, as no
    # offset is committed, and a message read twice would count twice and spoil its key's digest.
    read: dict[int, int] = {}
    deadline = time.monotonic() + timeout_s
    try:
        consumer.subscribe([topic])
        while sum(counts.values()) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=1.0):
                if msg.error() is not None:
                    raise BedError(f"reading {topic} back: {msg.error()}")
                partition, offset = msg.partition(), msg.offset()
                if partition is None or offset is None or offset <= read.get(partition, -1):
                    continue
                read[partition] = offset
                key = (msg.key() or b"").decode()
                counts[key] += 1
                digests[key].update(msg.value() or b"")
    finally:
        consumer.close()
    return counts, {key: digest.hexdigest() for key, digest in digests.items()}
