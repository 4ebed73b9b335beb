"""Broker cpu and network from a Prometheus HTTP API (``/api/v1/query``), for the collector.

Each query is evaluated at the end of a collection interval over a range that covers it, and must
answer an instant vector with one series per broker, told apart by ``broker_label`` whose value
holds the broker id (``broker_id_pattern``'s first group). Series whose label does not name a
broker are ignored; a broker missing from one query's answer gets None for that resource.
Works with anything that speaks the Prometheus query API (Thanos, Mimir, VictoriaMetrics).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

import requests

from kafka_balancer.errors import MetricsSourceError
from kafka_balancer.prometheus.settings import PrometheusSettings
from kafka_balancer.samples.broker_usage import BrokerUsage

QUERY_PATH = "/api/v1/query"


class PrometheusSource:
    """A :class:`~kafka_balancer.samples.broker_usage.BrokerUsageSource` backed by Prometheus."""

    def __init__(self, settings: PrometheusSettings, session: requests.Session | None = None) -> None:
        self.settings = settings
        self._session = session or requests.Session()
        if settings.bearer_token is not None:
            self._session.headers["Authorization"] = f"Bearer {settings.bearer_token}"

    def close(self) -> None:
        self._session.close()

    def usage(self, end_ms: int, interval_ms: int) -> dict[int, BrokerUsage]:
        s = self.settings
        at_s = end_ms / 1000.0
        cpu = self.per_broker(s.render(s.cpu_query, interval_ms), at_s)
        net_in = self.per_broker(s.render(s.network_in_query, interval_ms), at_s)
        net_out = self.per_broker(s.render(s.network_out_query, interval_ms), at_s)
        return {
            broker: BrokerUsage(cpu.get(broker), net_in.get(broker), net_out.get(broker))
            for broker in sorted(cpu.keys() | net_in.keys() | net_out.keys())
        }

    def check(self, end_ms: int, interval_ms: int, brokers: Collection[int]) -> dict[int, BrokerUsage]:
        """:meth:`usage` of ``brokers``, refusing an answer that names none of them (a wrong label,
        pattern or query; a label like ``instance`` ends in a port, not a broker id)."""
        answered = self.usage(end_ms, interval_ms)
        found = {broker: used for broker, used in answered.items() if broker in brokers}
        if not found:
            s = self.settings
            ids = f"ids {', '.join(map(str, sorted(answered)))}" if answered else "no id"
            raise MetricsSourceError(
                f"Prometheus at {s.url}: the answers name no broker of the cluster through label "
                f"{s.broker_label!r} (pattern {s.broker_id_pattern.pattern!r}: {ids}; brokers "
                f"{', '.join(map(str, sorted(brokers)))}); cpu query: {s.render(s.cpu_query, interval_ms)}"
            )
        return found

    def per_broker(self, query: str, at_s: float) -> dict[int, float]:
        """Broker id → value of an instant query; several series of one broker are summed."""
        found: dict[int, float] = {}
        for series in self._vector(query, at_s):
            label = series.get("metric", {}).get(self.settings.broker_label)
            matched = self.settings.broker_id_pattern.search(label) if isinstance(label, str) else None
            value = _sample_value(series)
            if matched is None or value is None:
                continue
            broker = int(matched.group(1))
            found[broker] = found.get(broker, 0.0) + value
        return found

    def _vector(self, query: str, at_s: float) -> list[Mapping[str, Any]]:
        s = self.settings
        verify: bool | str = str(s.ca_file) if s.ca_file is not None else True
        try:
            response = self._session.get(
                s.url.rstrip("/") + QUERY_PATH,
                params={"query": query, "time": f"{at_s:.3f}"},
                timeout=s.timeout_s,
                verify=verify,
            )
        except requests.exceptions.SSLError:
            raise MetricsSourceError(f"Prometheus at {s.url}: TLS handshake failed") from None
        except requests.RequestException as exc:
            raise MetricsSourceError(f"Prometheus at {s.url}: unreachable ({type(exc).__name__})") from None
        body = _json(response)
        if response.status_code in (401, 403):
            raise MetricsSourceError(f"Prometheus at {s.url}: access refused (HTTP {response.status_code})")
        if body is None or body.get("status") != "success":
            reason = body.get("error") if body else None
            raise MetricsSourceError(
                f"Prometheus at {s.url}: query failed (HTTP {response.status_code}"
                f"{': ' + str(reason) if reason else ''}): {query}"
            )
        data = body.get("data", {})
        if data.get("resultType") != "vector":
            raise MetricsSourceError(
                f"Prometheus at {s.url}: query must give an instant vector, got {data.get('resultType')}: "
                f"{query}"
            )
        result = data.get("result", [])
        return [r for r in result if isinstance(r, dict)]


def _json(response: requests.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _sample_value(series: Mapping[str, Any]) -> float | None:
    """The series' value, None when absent or not a finite non-negative number (NaN from 0/0)."""
    pair = series.get("value")
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    try:
        value = float(pair[1])
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None
