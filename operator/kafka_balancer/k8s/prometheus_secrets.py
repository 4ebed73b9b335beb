"""``spec.prometheus`` with its credentials: the bearer token and CA certificate from the pool's Secrets.

Read at every pass, so a rotated token or CA is picked up without a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafka_balancer.api import Prometheus
from kafka_balancer.errors import InputError
from kafka_balancer.k8s.pool_secrets import ReadSecret, pool_secret
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.prometheus.settings import PrometheusSettings

CA_FILE = "prometheus-ca.crt"


@dataclass(frozen=True)
class PoolSecrets:
    """How the operator reads a Secret (namespace, name → data and annotations, None if missing),
    and the folder below which it writes the files a client needs (one folder per pool, mode 0700;
    files 0600)."""

    read: ReadSecret
    folder: Path


def prometheus_settings(spec: Prometheus, pool: PoolId, secrets: PoolSecrets | None) -> PrometheusSettings:
    """The source settings of ``spec``. :class:`InputError` names the field when a referenced Secret
    or key is missing."""
    token_ref, ca_ref = spec.bearer_token_secret_ref, spec.ca_secret_ref
    if token_ref is None and ca_ref is None:
        return PrometheusSettings.from_spec(spec)
    if secrets is None:
        raise InputError("prometheus: Secret references need the operator's access to Kubernetes")
    namespace = pool.namespace
    token = None
    if token_ref is not None:
        raw = _value(secrets, pool, "bearerTokenSecretRef", token_ref.name, token_ref.key)
        try:
            token = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InputError(
                f"prometheus.bearerTokenSecretRef: key {token_ref.key!r} of Secret {token_ref.name} "
                "is not UTF-8 text"
            ) from None
    ca_file = None
    if ca_ref is not None:
        pem = _value(secrets, pool, "caSecretRef", ca_ref.name, ca_ref.key)
        folder = secrets.folder / f"{namespace}.{pool.name}"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        ca_file = folder / CA_FILE
        ca_file.touch(mode=0o600)
        ca_file.write_bytes(pem)
    return PrometheusSettings.from_spec(spec, ca_file=ca_file, bearer_token=token)


def _value(secrets: PoolSecrets, pool: PoolId, field: str, name: str, key: str) -> bytes:
    namespace = pool.namespace
    data = pool_secret(secrets.read, pool, f"prometheus.{field}", name)
    if data is None:
        raise InputError(f"prometheus.{field}: Secret {namespace}/{name} is missing")
    if key not in data:
        raise InputError(f"prometheus.{field}: Secret {namespace}/{name} has no key {key!r}")
    return data[key]
