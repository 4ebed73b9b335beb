"""``spec.prometheus`` credentials from the pool's Secrets, against an in-memory Secret store."""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_balancer.api import Prometheus
from kafka_balancer.errors import InputError
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.prometheus_secrets import PoolSecrets, prometheus_settings

POOL = PoolId("team-a", "main", "uid-main")
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _secrets(tmp_path: Path, store: Mapping[tuple[str, str], Mapping[str, bytes]]) -> PoolSecrets:
    return PoolSecrets(lambda namespace, name: store.get((namespace, name)), tmp_path / "tls")


def _spec(**fields: Any) -> Prometheus:
    return Prometheus.model_validate({"url": "https://prom.monitoring:9090", **fields})


def test_the_token_and_ca_come_from_the_pools_secrets(tmp_path: Path) -> None:
    store = {
        ("team-a", "prom"): {"token": b"s3cret\n", "ca.crt": CA},
        ("team-b", "prom"): {"token": b"other"},
    }
    spec = _spec(bearerTokenSecretRef={"name": "prom"}, caSecretRef={"name": "prom"})
    settings = prometheus_settings(spec, POOL, _secrets(tmp_path, store))

    assert settings.bearer_token == "s3cret"
    assert settings.ca_file is not None and settings.ca_file.read_bytes() == CA
    assert stat.S_IMODE(settings.ca_file.stat().st_mode) == 0o600
    assert settings.ca_file.parent == tmp_path / "tls" / "team-a.main"
    assert "s3cret" not in repr(settings)


def test_other_keys_can_be_named(tmp_path: Path) -> None:
    store = {("team-a", "gw"): {"bearer": b"t0ken", "root.pem": CA}}
    spec = _spec(
        bearerTokenSecretRef={"name": "gw", "key": "bearer"}, caSecretRef={"name": "gw", "key": "root.pem"}
    )
    settings = prometheus_settings(spec, POOL, _secrets(tmp_path, store))
    assert settings.bearer_token == "t0ken"
    assert settings.ca_file is not None and settings.ca_file.read_bytes() == CA


def test_without_secret_references_no_secret_is_read() -> None:
    settings = prometheus_settings(_spec(), POOL, None)
    assert (settings.bearer_token, settings.ca_file) == (None, None)


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ({}, "prometheus.bearerTokenSecretRef: Secret team-a/prom is missing"),
        (
            {("team-a", "prom"): {"password": b"x"}},
            "prometheus.bearerTokenSecretRef: Secret team-a/prom has no key 'token'",
        ),
        ({("team-a", "prom"): {"token": b"\xff\xfe"}}, "is not UTF-8 text"),
        ({("team-b", "prom"): {"token": b"x"}}, "Secret team-a/prom is missing"),  # the pool's namespace only
    ],
)
def test_a_missing_secret_or_key_is_named(
    tmp_path: Path, store: Mapping[tuple[str, str], Mapping[str, bytes]], message: str
) -> None:
    spec = _spec(bearerTokenSecretRef={"name": "prom"})
    with pytest.raises(InputError, match=message):
        prometheus_settings(spec, POOL, _secrets(tmp_path, store))


def test_a_ca_is_refused_for_a_plain_http_url() -> None:
    with pytest.raises(ValidationError, match="caSecretRef is only used with an https:// url"):
        Prometheus.model_validate({"url": "http://prom:9090", "caSecretRef": {"name": "prom"}})
