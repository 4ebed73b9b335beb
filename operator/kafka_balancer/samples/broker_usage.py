"""Broker resource usage from a source outside Kafka (the Admin API has none): what fills the broker
samples' ``cpu``, ``network_in`` and ``network_out`` columns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class BrokerUsage:
    """Average use over an interval; None where the source has no value for this broker."""

    cpu: float | None  # cores
    network_in: float | None  # bytes/s, produce and replication
    network_out: float | None  # bytes/s, consumers and replication


class BrokerUsageSource(Protocol):
    def usage(self, end_ms: int, interval_ms: int) -> Mapping[int, BrokerUsage]:
        """Broker id → its usage over ``(end_ms − interval_ms, end_ms]``.

        Raises :class:`kafka_balancer.errors.MetricsSourceError` when the source cannot answer.
        """
        ...
