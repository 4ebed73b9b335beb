"""Reading a topic back for the no-message-lost checks: per-key counts and per-key sha256.

The demo's own check (``kafka_balancer_dev.demo.traffic.read_back``), so the tests and the demo compare
messages the same way: consume ``topic`` from the start until ``count`` messages arrived (or the
deadline), return per-key counts and per-key sha256 of the values in order.
"""

from __future__ import annotations

from kafka_balancer_dev.demo.traffic import Digest
from kafka_balancer_dev.demo.traffic import read_back as consume_digest

__all__ = ["Digest", "consume_digest"]
