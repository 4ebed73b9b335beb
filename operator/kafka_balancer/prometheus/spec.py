"""The Prometheus source as users write it (CLI file, and the same shape a BrokerPool may carry).

``{"url": "...", "brokerLabel": "pod", "brokerIdPattern": "(\\\\d+)$", "minRangeSeconds": 60,
"queries": {"cpu": "...", "networkIn": "...", "networkOut": "..."}, "caFile": "...",
"bearerTokenFile": "..."}``; everything but ``url`` optional (defaults of :mod:`.settings`).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.formats.snapshot import load_json
from kafka_balancer.prometheus import settings as defaults
from kafka_balancer.prometheus.settings import PrometheusSettings


class _Queries(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    cpu: str = defaults.CPU_QUERY
    network_in: str = Field(default=defaults.NETWORK_IN_QUERY, alias="networkIn")
    network_out: str = Field(default=defaults.NETWORK_OUT_QUERY, alias="networkOut")

    @field_validator("cpu", "network_in", "network_out")
    @classmethod
    def _template(cls, query: str) -> str:
        try:
            query.format(label="pod", range="60s")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"not a query template ({exc}); only {{label}} and {{range}} are filled in, "
                "write other braces doubled"
            ) from None
        return query


class PrometheusSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$")
    broker_label: str = Field(default="pod", alias="brokerLabel", pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")
    broker_id_pattern: str = Field(default=defaults.BROKER_ID_PATTERN, alias="brokerIdPattern")
    min_range_seconds: int = Field(default=defaults.MIN_RANGE_S, alias="minRangeSeconds", ge=1)
    queries: _Queries = _Queries()
    ca_file: str | None = Field(default=None, alias="caFile", min_length=1)
    bearer_token_file: str | None = Field(default=None, alias="bearerTokenFile", min_length=1)

    @field_validator("broker_id_pattern")
    @classmethod
    def _one_group(cls, pattern: str) -> str:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if compiled.groups < 1:
            raise ValueError("needs a group capturing the broker id, e.g. (\\d+)$")
        return pattern

    def settings(self, url: str | None = None) -> PrometheusSettings:
        """The source settings; ``url`` (a flag) wins over the file's."""
        chosen = url or self.url
        if chosen is None:
            raise InputError("prometheus: no url (give --prometheus-url or url in the file)")
        if not re.match(r"^https?://\S+$", chosen):
            raise InputError(f"prometheus url {chosen!r}: must start with http:// or https://")
        return PrometheusSettings(
            url=chosen,
            broker_label=self.broker_label,
            broker_id_pattern=re.compile(self.broker_id_pattern),
            cpu_query=self.queries.cpu,
            network_in_query=self.queries.network_in,
            network_out_query=self.queries.network_out,
            min_range_s=self.min_range_seconds,
            ca_file=Path(self.ca_file) if self.ca_file else None,
            bearer_token=self._token(),
        )

    def _token(self) -> str | None:
        if self.bearer_token_file is None:
            return None
        try:
            return Path(self.bearer_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            raise InputError(f"prometheus bearerTokenFile {self.bearer_token_file}: cannot read it") from None


def read_prometheus_spec(path: Path) -> PrometheusSpec:
    try:
        return PrometheusSpec.model_validate(load_json(path, "prometheus config"))
    except ValidationError as exc:
        raise InputError(one_line(exc, f"prometheus config {path.name}")) from None
