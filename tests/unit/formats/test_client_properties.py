"""Connection settings: Java client properties → both client libraries, and credentials kept out of text."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_balancer.api import KafkaConnection
from kafka_balancer.errors import InputError
from kafka_balancer.kafka.admin import confluent_config, kafka_python_config, load_properties
from kafka_balancer.reconcile.connection import client_properties
from kafka_balancer_dev.localbed.kafka import SecuredAccess

SECRET = "s3cret-Pa55"


def test_scram_over_tls_reaches_both_libraries_under_their_own_names() -> None:
    props = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="balancer" password="{SECRET}";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/kafka/ca.pem",
    }

    ck = confluent_config("k:9093", props)
    kp = kafka_python_config("k:9093", props)

    assert {k: ck[k] for k in ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")} == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "balancer",
        "sasl.password": SECRET,
    }
    assert ck["ssl.ca.location"] == "/etc/kafka/ca.pem"
    assert "sasl.jaas.config" not in ck
    assert {
        k: kp[k]
        for k in (
            "security_protocol",
            "sasl_mechanism",
            "sasl_plain_username",
            "sasl_plain_password",
            "ssl_cafile",
        )
    } == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "balancer",
        "sasl_plain_password": SECRET,
        "ssl_cafile": "/etc/kafka/ca.pem",
    }
    assert kp["ssl_check_hostname"] is True


def test_an_empty_endpoint_identification_turns_the_hostname_check_off_in_both_libraries() -> None:
    props = {
        "security.protocol": "SSL",
        "ssl.ca.location": "ca.pem",
        "ssl.endpoint.identification.algorithm": "",
    }

    assert confluent_config("k:9093", props)["ssl.endpoint.identification.algorithm"] == "none"
    assert kafka_python_config("k:9093", props)["ssl_check_hostname"] is False


def test_a_java_keystore_truststore_is_refused_in_one_line() -> None:
    props = {"security.protocol": "SSL", "ssl.truststore.location": "/etc/kafka/truststore.jks"}

    with pytest.raises(InputError, match=r"^ssl.truststore.type JKS: only PEM truststores can be read"):
        confluent_config("k:9093", props)


def test_load_properties_reads_what_kafkas_tools_read(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(
        f"# comment\n! also a comment\n\nsecurity.protocol = SASL_PLAINTEXT\nsasl.password={SECRET}\n"
    )

    assert load_properties(path) == {"security.protocol": "SASL_PLAINTEXT", "sasl.password": SECRET}


def test_load_properties_reads_java_properties_syntax_as_kafkas_tools_do(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(
        b"sasl.mechanism : SCRAM-SHA-512\n"  # ':' as the separator
        b"security.protocol SASL_SSL\n"  # whitespace as the separator
        b"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        b'    username="alice" \\\n'  # continued: the next line's leading blanks are dropped
        b'    password="back\\\\slash";\n'  # an escaped backslash
        b"ssl.key.password=caf\\u00e9\n"  # a unicode escape
        b"ssl.key.location=/keys/caf\xe9.pem\n"  # a byte read as ISO-8859-1, as java.util.Properties reads it
        b"   # an indented comment\n"
        b"lone.key\n"  # a key without a value
    )

    assert load_properties(path) == {
        "sasl.mechanism": "SCRAM-SHA-512",
        "security.protocol": "SASL_SSL",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="alice" password="back\\slash";'
        ),
        "ssl.key.password": "caf\u00e9",
        "ssl.key.location": "/keys/caf\u00e9.pem",
        "lone.key": "",
    }
    assert confluent_config("k:9093", load_properties(path))["sasl.username"] == "alice"


def test_a_bad_escape_is_named_without_the_value_around_it(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_text(f"sasl.password={SECRET}\\u12zz\n")

    with pytest.raises(InputError, match=r"client.properties: invalid escape") as err:
        load_properties(path)
    assert SECRET not in str(err.value)


def test_operator_errors_about_a_secret_never_show_its_values() -> None:
    kafka = KafkaConnection.model_validate(
        {
            "bootstrapServers": "k:9093",
            "securityProtocol": "SASL_SSL",
            "sasl": {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-user"}},
        }
    )

    with pytest.raises(InputError) as err:
        client_properties(kafka, {"password": SECRET}, None)
    assert SECRET not in str(err.value)
    assert "no key 'username'" in str(err.value)


def test_a_bed_access_repr_hides_its_password() -> None:
    access = SecuredAccess("PLAIN", "127.0.0.1:9093", {"sasl.username": "u", "sasl.password": SECRET})

    assert SECRET not in repr(access)
    assert SECRET not in str(access)
