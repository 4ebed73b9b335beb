"""Kafka client properties of a pool, with credentials taken from its Secrets (never logged)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kafka_balancer.api import KafkaConnection
from kafka_balancer.errors import InputError


def client_properties(
    kafka: KafkaConnection, sasl_secret: Mapping[str, str] | None, tls_files: Mapping[str, Path] | None
) -> dict[str, str]:
    """Java-style client properties (what the kafka layer's admin clients take).

    ``sasl_secret``: the decoded data of ``kafka.sasl.secretRef``; ``tls_files``: where the keys of
    ``kafka.tls.secretRef`` (``ca.crt``, ``tls.crt``, ``tls.key``) were written.
    """
    props: dict[str, str] = {"security.protocol": kafka.security_protocol}
    if kafka.sasl is not None:
        ref = kafka.sasl.secret_ref
        if sasl_secret is None:
            raise InputError(f"kafka.sasl.secretRef: Secret {ref.name} is missing")
        for key in (ref.username_key, ref.password_key):
            if key not in sasl_secret:
                raise InputError(f"kafka.sasl.secretRef: Secret {ref.name} has no key {key!r}")
        props["sasl.mechanism"] = kafka.sasl.mechanism
        props["sasl.username"] = sasl_secret[ref.username_key]
        props["sasl.password"] = sasl_secret[ref.password_key]
    if kafka.tls is not None and tls_files:
        names = {
            "ca.crt": "ssl.ca.location",
            "tls.crt": "ssl.certificate.location",
            "tls.key": "ssl.key.location",
        }
        for key, prop in names.items():
            if key in tls_files:
                props[prop] = str(tls_files[key])
    return props
