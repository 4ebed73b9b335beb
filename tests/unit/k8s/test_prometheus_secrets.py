"""``spec.prometheus`` credentials from the pool's Secrets, against an in-memory Secret store."""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_balancer.api import BrokerPoolSpec, Prometheus
from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.k8s.pool_secrets import POOLS_ANNOTATION
from kafka_balancer.k8s.port import PoolId, SecretData
from kafka_balancer.k8s.prometheus_secrets import PoolSecrets, prometheus_settings

POOL = PoolId("team-a", "main", "uid-main")
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def _secrets(
    tmp_path: Path, store: Mapping[tuple[str, str], Mapping[str, bytes]], meant: str = "main"
) -> PoolSecrets:
    """Secrets whose writer annotated each for the pools ``meant`` names."""

    def read(namespace: str, name: str) -> SecretData | None:
        data = store.get((namespace, name))
        return None if data is None else SecretData(data, {POOLS_ANNOTATION: meant})

    return PoolSecrets(read, tmp_path / "tls")


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


@pytest.mark.parametrize("meant", ["", "other", "mainly", "other,  main2"])
def test_a_secret_not_meant_for_the_pool_is_refused_and_not_read(tmp_path: Path, meant: str) -> None:
    store = {("team-a", "prom"): {"token": b"t0ken", "ca.crt": CA}}
    spec = _spec(bearerTokenSecretRef={"name": "prom"})

    with pytest.raises(InputError) as refused:
        prometheus_settings(spec, POOL, _secrets(tmp_path, store, meant))

    assert str(refused.value) == (
        "prometheus.bearerTokenSecretRef: Secret team-a/prom is not meant for this pool: the operator "
        "uses a Secret only when it carries the annotation kafkabalancer.io/pools naming the pool (main) "
        "or *, which whoever may write the Secret adds"
    )
    assert "t0ken" not in str(refused.value)


@pytest.mark.parametrize("meant", ["main", "*", "other, main", " main ,x"])
def test_a_secret_meant_for_the_pool_or_every_pool_is_used(tmp_path: Path, meant: str) -> None:
    store = {("team-a", "prom"): {"token": b"t0ken"}}
    spec = _spec(bearerTokenSecretRef={"name": "prom"})

    assert prometheus_settings(spec, POOL, _secrets(tmp_path, store, meant)).bearer_token == "t0ken"


def test_a_bearer_token_goes_over_https_only() -> None:
    with pytest.raises(ValidationError, match="a bearer token is sent over https:// only"):
        Prometheus.model_validate({"url": "http://prom:9090", "bearerTokenSecretRef": {"name": "p"}})


def test_a_url_with_a_user_and_password_is_refused_without_showing_them() -> None:
    spec = {
        "kafka": {"bootstrapServers": "k:9092"},
        "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "8"},
        "prometheus": {"url": "https://reader:hunter2@prom:9090"},
    }
    with pytest.raises(ValidationError) as refused:
        BrokerPoolSpec.model_validate(spec)

    said = one_line(refused.value, "spec")
    assert said.startswith("spec.prometheus.url: Value error, must not carry a user or password"), said
    assert "hunter2" not in said and "reader" not in said
