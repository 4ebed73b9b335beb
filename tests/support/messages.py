"""Reading a topic back for the no-message-lost checks: per-key counts and per-key sha256."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter, defaultdict
from typing import Any

from confluent_kafka import Consumer

Digest = tuple[Counter[str], dict[str, str]]


def consume_digest(bootstrap_servers: str, topic: str, count: int, timeout_s: float = 120.0) -> Digest:
    """Consume ``topic`` from the start until ``count`` messages arrived (or the deadline); return
    per-key counts and per-key sha256 of the values in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    counts: Counter[str] = Counter()
    digests: defaultdict[str, Any] = defaultdict(hashlib.sha256)
    deadline = time.monotonic() + timeout_s
    try:
        consumer.subscribe([topic])
        while sum(counts.values()) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=1.0):
                assert msg.error() is None, msg.error()
                key = (msg.key() or b"").decode()
                counts[key] += 1
                digests[key].update(msg.value() or b"")
    finally:
        consumer.close()
    return counts, {key: digest.hexdigest() for key, digest in digests.items()}
