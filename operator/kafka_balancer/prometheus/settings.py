"""What the Prometheus source asks and how it finds the broker id in an answer.

The defaults are ``spec.prometheus``'s (:mod:`kafka_balancer.api` documents the queries), so a pool,
the CLI's settings file and a bare ``PrometheusSettings(url=...)`` ask the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kafka_balancer.api import (
    BROKER_ID_PATTERN,
    CPU_QUERY,
    MIN_RANGE_S,
    NETWORK_IN_QUERY,
    NETWORK_OUT_QUERY,
    PrometheusQuerying,
)


@dataclass(frozen=True)
class PrometheusSettings:
    """Where Prometheus is and what to ask it; queries are templates with ``{label}`` and ``{range}``."""

    url: str
    broker_label: str = "pod"
    broker_id_pattern: re.Pattern[str] = field(default_factory=lambda: re.compile(BROKER_ID_PATTERN))
    cpu_query: str = CPU_QUERY
    network_in_query: str = NETWORK_IN_QUERY
    network_out_query: str = NETWORK_OUT_QUERY
    min_range_s: int = MIN_RANGE_S
    timeout_s: float = 10.0
    ca_file: Path | None = None
    bearer_token: str | None = field(default=None, repr=False)

    def render(self, template: str, interval_ms: int) -> str:
        """The query for one interval: the range is the interval, at least ``min_range_s``."""
        range_s = max(self.min_range_s, -(-interval_ms // 1000))
        return template.format(label=self.broker_label, range=f"{range_s}s")

    @classmethod
    def from_spec(
        cls, spec: PrometheusQuerying, *, ca_file: Path | None = None, bearer_token: str | None = None
    ) -> PrometheusSettings:
        """The settings of a pool's ``spec.prometheus`` or of the CLI's settings file."""
        return cls(
            url=spec.url,
            broker_label=spec.broker_label,
            broker_id_pattern=re.compile(spec.broker_id_pattern),
            cpu_query=spec.queries.cpu,
            network_in_query=spec.queries.network_in,
            network_out_query=spec.queries.network_out,
            min_range_s=spec.min_range_seconds,
            ca_file=ca_file,
            bearer_token=bearer_token,
        )
