"""The CLI's Prometheus settings file: a BrokerPool's ``spec.prometheus`` with local files for its Secrets.

``{"url": "...", "brokerLabel": "pod", "brokerIdPattern": "(\\\\d+)$", "minRangeSeconds": 60,
"queries": {"cpu": "...", "networkIn": "...", "networkOut": "..."}, "caFile": "...",
"bearerTokenFile": "..."}``; everything optional (``url`` may come from ``--prometheus-url``).
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, ValidationError

from kafka_balancer.api import URL_PATTERN, PrometheusQuerying
from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.formats.snapshot import load_json
from kafka_balancer.prometheus.settings import PrometheusSettings


class PrometheusFile(PrometheusQuerying):
    url: str = Field(default="", max_length=2048)  # checked once the flag may have given it
    ca_file: str | None = Field(default=None, alias="caFile", min_length=1)
    bearer_token_file: str | None = Field(default=None, alias="bearerTokenFile", min_length=1)

    def resolve(self, url: str | None = None) -> PrometheusSettings:
        """The source settings; ``url`` (the flag) wins over the file's."""
        chosen = url or self.url
        if not chosen:
            raise InputError("prometheus: no url (give --prometheus-url or url in the file)")
        if not re.match(URL_PATTERN, chosen):
            raise InputError(f"prometheus url {chosen!r}: must start with http:// or https://")
        ca_file = Path(self.ca_file) if self.ca_file else None
        with_url = self.model_copy(update={"url": chosen})
        return PrometheusSettings.from_spec(with_url, ca_file=ca_file, bearer_token=self._token())

    def _token(self) -> str | None:
        if self.bearer_token_file is None:
            return None
        try:
            return Path(self.bearer_token_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            raise InputError(f"prometheus bearerTokenFile {self.bearer_token_file}: cannot read it") from None


def read_prometheus_file(path: Path) -> PrometheusFile:
    try:
        return PrometheusFile.model_validate(load_json(path, "prometheus config"))
    except ValidationError as exc:
        raise InputError(one_line(exc, f"prometheus config {path.name}")) from None
