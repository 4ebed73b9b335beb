"""The CLI over secured listeners of a real bed: SASL PLAIN, SCRAM-SHA-256/512, mutual TLS and SASL_SSL.

Each command runs as a subprocess with ``--command-config`` (a Java properties file), so what a user
sees on stdout/stderr is what is checked: the cluster is read and a partition moves, and a refused
login fails in one line that names the failure and never shows a password.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.kafka import KafkaBed, SecuredAccess

KINDS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "SSL", "SASL_SSL"]
CLI = [sys.executable, "-m", "kafka_balancer.cli"]
SYSTEM_CA = Path("/etc/ssl/certs/ca-certificates.crt")
# kafka-topics.sh's class.
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"


@pytest.fixture(scope="module")
def secured_bed(kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBed]:
    """3 brokers in racks a, b, c with SASL_PLAINTEXT, SSL and SASL_SSL listeners next to PLAINTEXT."""
    bed = KafkaBed(kafka_libs, tmp_path_factory.mktemp("secured-bed"), brokers=3, racks=3, secured=True)
    try:
        bed.start()
    except BedError as err:
        pytest.fail(f"the secured Kafka bed did not start: {err}", pytrace=False)
    try:
        yield bed
    finally:
        bed.stop()


def _topic(bed: KafkaBed, assignment: list[list[int]], messages: int = 0) -> str:
    """A topic created (and filled) over the bed's PLAINTEXT listener: setup, not the thing tested."""
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(timeout=60)
    if messages:
        producer = Producer({"bootstrap.servers": bed.bootstrap_servers, "acks": "all"})
        for i in range(messages):
            producer.produce(topic, value=f"m{i}".encode() * 100, partition=i % len(assignment))
        assert producer.flush(60) == 0
    return topic


def _replicas(bed: KafkaBed, topic: str) -> dict[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": bed.bootstrap_servers})
    meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
    return {p: list(m.replicas) for p, m in meta.partitions.items()}


def _cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)


def _snapshot(access: SecuredAccess, config: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return _cli(
        "snapshot",
        "--bootstrap-server", access.bootstrap_servers,
        "--command-config", str(config),
        "--window", "1s", "--interval", "1s",
        "--disk-capacity", "1e12", "--network-capacity", "1.25e8", "--cpu-capacity", "8",
        "--output", str(output),
    )  # fmt: skip


def _execute(access: SecuredAccess, config: Path, plan: Path) -> subprocess.CompletedProcess[str]:
    return _cli(
        "execute",
        "--plan", str(plan),
        "--bootstrap-server", access.bootstrap_servers,
        "--command-config", str(config),
        "--throttle", "50000000",
        "--poll-interval", "0.5",
    )  # fmt: skip


def _secret_values(access: SecuredAccess) -> list[str]:
    return [v for k, v in access.properties.items() if "password" in k]


@pytest.mark.parametrize("kind", KINDS)
def test_snapshot_reads_the_cluster_over_a_secured_listener(
    secured_bed: KafkaBed, kind: str, tmp_path: Path
) -> None:
    access = secured_bed.secured_access(kind)
    topic = _topic(secured_bed, [[1, 2], [2, 3], [3, 1]])
    output = tmp_path / "snapshot.json"

    done = _snapshot(access, access.write(tmp_path / "client.properties"), output)

    assert done.returncode == 0, done.stderr
    assert access.bootstrap_servers != secured_bed.bootstrap_servers
    for secret in _secret_values(access):
        assert secret not in done.stdout + done.stderr
    doc = json.loads(output.read_text())
    assert {b["id"]: b["rack"] for b in doc["brokers"]} == {1: "a", 2: "b", 3: "c"}
    assert {p["partition"]: p["replicas"] for p in doc["partitions"] if p["topic"] == topic} == {
        0: [1, 2],
        1: [2, 3],
        2: [3, 1],
    }


@pytest.mark.parametrize("kind", KINDS)
def test_execute_moves_a_partition_over_a_secured_listener(
    secured_bed: KafkaBed, kind: str, tmp_path: Path
) -> None:
    access = secured_bed.secured_access(kind)
    topic = _topic(secured_bed, [[1, 2]], messages=200)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [3, 1]}]})
    )

    done = _execute(access, access.write(tmp_path / "client.properties"), plan)

    assert done.returncode == 0, done.stdout + done.stderr
    for secret in _secret_values(access):
        assert secret not in done.stdout + done.stderr
    assert _replicas(secured_bed, topic) == {0: [3, 1]}
    state = json.loads(plan.with_name(plan.name + ".state.json").read_text())
    assert [m["status"] for m in state["moves"]] == ["done"]


def test_a_login_written_over_continued_lines_as_kafkas_docs_write_it_reads_as_kafkas_tools_read_it(
    secured_bed: KafkaBed, tmp_path: Path
) -> None:
    access = secured_bed.secured_access("SCRAM-SHA-512")
    topic = _topic(secured_bed, [[1, 2]])
    # As Kafka's documentation writes a client's JAAS login: one property over three lines.
    config = tmp_path / "client.properties"
    config.write_text(
        f"security.protocol={access.properties['security.protocol']}\n"
        f"sasl.mechanism : {access.properties['sasl.mechanism']}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{access.properties["sasl.username"]}" \\\n'
        f'    password="{access.properties["sasl.password"]}";\n'
    )
    theirs = secured_bed.run_tool(
        TOPIC_COMMAND, ["--command-config", str(config), "--list"], bootstrap_servers=access.bootstrap_servers
    )
    assert theirs.returncode == 0 and topic in theirs.stdout.split(), theirs.stderr

    ours = _snapshot(access, config, tmp_path / "snapshot.json")

    assert ours.returncode == 0, ours.stderr
    assert topic in {p["topic"] for p in json.loads((tmp_path / "snapshot.json").read_text())["partitions"]}


@pytest.mark.parametrize("kind", ["PLAIN", "SCRAM-SHA-512", "SASL_SSL"])
@pytest.mark.parametrize("command", ["snapshot", "execute"])
def test_a_wrong_password_fails_in_one_line_that_never_shows_it(
    secured_bed: KafkaBed, kind: str, command: str, tmp_path: Path
) -> None:
    access = secured_bed.secured_access(kind)
    wrong = f"wrong-{uuid.uuid4().hex}"
    refused = SecuredAccess(kind, access.bootstrap_servers, {**access.properties, "sasl.password": wrong})
    config = refused.write(tmp_path / "client.properties")
    topic = _topic(secured_bed, [[1, 2]])
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 3]}]})
    )

    if command == "snapshot":
        done = _snapshot(refused, config, tmp_path / "snapshot.json")
    else:
        done = _execute(refused, config, plan)

    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"kafka-balancer {command}: authentication failed at {access.bootstrap_servers}"
    )
    assert "Traceback" not in done.stdout + done.stderr
    for secret in (wrong, *_secret_values(access)):
        assert secret not in done.stdout + done.stderr
    assert not (tmp_path / "snapshot.json").exists()
    assert not plan.with_name(plan.name + ".state.json").exists()
    assert _replicas(secured_bed, topic) == {0: [1, 2]}


def test_a_client_that_does_not_trust_the_brokers_certificate_is_refused_in_one_line(
    secured_bed: KafkaBed, tmp_path: Path
) -> None:
    access = secured_bed.secured_access("SSL")
    untrusting = SecuredAccess(
        "SSL", access.bootstrap_servers, {**access.properties, "ssl.ca.location": str(SYSTEM_CA)}
    )

    done = _snapshot(untrusting, untrusting.write(tmp_path / "client.properties"), tmp_path / "snapshot.json")

    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"kafka-balancer snapshot: TLS handshake failed at {access.bootstrap_servers}")
    assert "certificate verify failed" in lines[0]


def test_a_client_without_a_certificate_is_refused_by_the_mutual_tls_listener_in_one_line(
    secured_bed: KafkaBed, tmp_path: Path
) -> None:
    access = secured_bed.secured_access("SSL")
    assert {"ssl.certificate.location", "ssl.key.location"} <= set(access.properties)  # mutual TLS
    anonymous = SecuredAccess(
        "SSL",
        access.bootstrap_servers,
        {
            k: v
            for k, v in access.properties.items()
            if k not in ("ssl.certificate.location", "ssl.key.location")
        },
    )

    done = _snapshot(anonymous, anonymous.write(tmp_path / "client.properties"), tmp_path / "snapshot.json")

    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert lines[0].startswith(
        "kafka-balancer snapshot: TLS handshake failed (the broker refused the client certificate) "
        f"at {access.bootstrap_servers}"
    ), lines[0]
    assert not (tmp_path / "snapshot.json").exists()
