"""Kafka client properties of a pool, with credentials taken from its Secrets (never logged)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kafka_balancer.api import KafkaConnection
from kafka_balancer.errors import InputError

# Properties whose values are credentials.
SECRET_KEYS = frozenset({"sasl.password", "sasl.jaas.config", "ssl.key.password"})


class ClientProperties(dict[str, str]):
    """Client properties whose repr (a log line, an error, a debugger) shows no credential."""

    def __repr__(self) -> str:
        shown = {key: "<hidden>" if key in SECRET_KEYS else value for key, value in self.items()}
        return f"ClientProperties({shown!r})"

    __str__ = __repr__


def client_properties(
    kafka: KafkaConnection, sasl_secret: Mapping[str, str] | None, tls_files: Mapping[str, Path] | None
) -> ClientProperties:
    """Java-style client properties (what the kafka layer's admin clients take).

    ``sasl_secret``: the decoded data of ``kafka.sasl.secretRef``; ``tls_files``: where the keys of
    ``kafka.tls.secretRef`` (``ca.crt``, ``tls.crt``, ``tls.key``) were written.
    """
    props = ClientProperties({"security.protocol": kafka.security_protocol})
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
