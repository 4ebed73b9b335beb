"""The ACLs of docs/security.md on a real bed with KRaft's StandardAuthorizer (nothing allowed without
an ACL): with exactly the documented ones a SCRAM principal reads the whole cluster as the operator
does and executes a throttled plan under traffic; with one taken away, it cannot; and a topic or a
group that a deny ACL hides from it stops the collection, which names it, instead of a plan made on
part of the cluster.

The ACLs are read from the ``kafka-acls.sh`` commands of docs/security.md, so the page and the test
cannot drift apart. One bed serves the module; each test grants what it needs and takes it back.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client import CollectorRegistry
from tests.support.acls import CERTIFICATE_PRINCIPAL, documented, granted
from tests.support.executor_cli import cli, read_state, write_plan
from tests.support.kafka_checks import (
    admin_of,
    assert_no_throttle_left,
    create_topic,
    delete_topic,
    ongoing_reassignments,
    partitions,
    topic_with_traffic,
)

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import KafkaAccessDenied
from kafka_balancer.k8s.executions import ExecutionService
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.pool_secrets import POOLS_ANNOTATION
from kafka_balancer.k8s.pools import PoolService
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.collector import observe_cluster
from kafka_balancer.kafka.cordon import ready_to_leave
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import CLUSTER_RESOURCE, Acl, KafkaBed, SecuredAccess

pytestmark = pytest.mark.integration


@pytest.fixture
def access(acl_bed: KafkaBed) -> SecuredAccess:
    return acl_bed.secured_access("SCRAM-SHA-512")


@pytest.fixture
def operator_acls(acl_bed: KafkaBed) -> Iterator[None]:
    with granted(acl_bed, documented("The operator")):
        yield


def _cluster_partitions(bed: KafkaBed) -> set[tuple[str, int]]:
    """Every partition, as the bed's super user sees them (an admin client: a consumer's group would
    make Kafka create its offsets topic meanwhile)."""
    topics = admin_of(bed).list_topics(timeout=10).topics
    return {(t, p) for t, meta in topics.items() for p in meta.partitions}


def _group_with_offsets(bed: KafkaBed, topic: str) -> str:
    """A consumer group with an offset committed on ``topic`` (by the bed's super user)."""
    group = f"billing-{topic}"
    consumer = Consumer({"bootstrap.servers": bed.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    return group


def _snapshot(access: SecuredAccess, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = access.write(tmp_path / "client.properties")
    process = cli(
        "snapshot",
        "--bootstrap-server", access.bootstrap_servers,
        "--command-config", str(config),
        "--window", "1s", "--interval", "1s",
        "--disk-capacity", "1e12", "--network-capacity", "1.25e8", "--cpu-capacity", "8",
        "--output", str(tmp_path / "snapshot.json"),
    )  # fmt: skip
    stdout, stderr = process.communicate(timeout=180)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.usefixtures("operator_acls")
def test_the_operators_acls_read_the_whole_cluster_and_execute_a_throttled_plan_under_traffic(
    acl_bed: KafkaBed, access: SecuredAccess, tmp_path: Path
) -> None:
    with topic_with_traffic(acl_bed, "acl", [[1, 2], [2, 3], [3, 1]]) as traffic:
        seen = observe_cluster(access.bootstrap_servers, access.properties)
        assert set(seen.partitions) == _cluster_partitions(acl_bed)
        assert all(seen.sizes[(traffic.topic, p)] > 0 for p in range(3))
        plan = write_plan(tmp_path / "plan.json", traffic.topic, {0: [3, 1], 1: [1, 2], 2: [2, 3]})
        execute = cli(
            "execute",
            "--plan", str(plan),
            "--bootstrap-server", access.bootstrap_servers,
            "--command-config", str(access.write(tmp_path / "client.properties")),
            "--throttle", "2000000",
            "--poll-interval", "0.5",
        )  # fmt: skip
        stdout, stderr = execute.communicate(timeout=300)
        assert execute.returncode == 0, stdout + stderr
        state = read_state(plan.with_name(plan.name + ".state.json"))
        assert [m["status"] for m in state["moves"]] == ["done"] * 3
        assert state["throttleRate"] == 2_000_000
        assert ongoing_reassignments(acl_bed, traffic.topic) == []
        assert_no_throttle_left(acl_bed, traffic.topic)
        traffic.assert_all_read_back()


@pytest.mark.usefixtures("operator_acls")
def test_a_topic_whose_describe_is_denied_stops_the_collection_naming_it(
    acl_bed: KafkaBed, access: SecuredAccess, tmp_path: Path
) -> None:
    hidden = create_topic(acl_bed, "hidden", [[1, 2], [2, 3]])
    deny = [Acl("topic", hidden, "Describe", allow=False)]
    try:
        with granted(acl_bed, deny):
            with pytest.raises(KafkaAccessDenied) as raised:
                observe_cluster(access.bootstrap_servers, access.properties)
            assert f"1 topic(s) it may not describe: {hidden}" in str(raised.value)
            assert access.bootstrap_servers in str(raised.value)

            done = _snapshot(access, tmp_path)

            assert done.returncode == 1
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1, done.stderr
            assert lines[0].startswith("kafka-balancer snapshot: Kafka's ACLs keep part of the cluster")
            assert hidden in lines[0]
            assert not (tmp_path / "snapshot.json").exists()
        # The deny alone made the difference: taken back, the same principal reads it all.
        seen = observe_cluster(access.bootstrap_servers, access.properties)
        assert (hidden, 0) in seen.partitions
    finally:
        delete_topic(acl_bed, hidden)


@pytest.mark.usefixtures("operator_acls")
def test_a_group_whose_offsets_are_refused_stops_the_collection_naming_it(
    acl_bed: KafkaBed, access: SecuredAccess
) -> None:
    topic = create_topic(acl_bed, "grouped", [[1, 2]])
    group = _group_with_offsets(acl_bed, topic)
    try:
        observe_cluster(access.bootstrap_servers, access.properties)  # the group is readable
        with (
            granted(acl_bed, [Acl("group", group, "Describe", allow=False)]),
            pytest.raises(KafkaAccessDenied, match=rf"1 group\(s\) it may not read the offsets of: {group}"),
        ):
            observe_cluster(access.bootstrap_servers, access.properties)
    finally:
        delete_topic(acl_bed, topic)


@pytest.mark.parametrize("left_out", range(3))
def test_the_snapshot_needs_each_of_its_acls(
    acl_bed: KafkaBed, access: SecuredAccess, tmp_path: Path, left_out: int
) -> None:
    acls = documented("kafka-balancer snapshot")
    assert len(acls) == 3
    topic = create_topic(acl_bed, "snap", [[1, 2]])
    _group_with_offsets(acl_bed, topic)  # what the groups' Describe is for
    try:
        with granted(acl_bed, acls):
            done = _snapshot(access, tmp_path)
            assert done.returncode == 0, done.stderr
            partitions = json.loads((tmp_path / "snapshot.json").read_text())["partitions"]
            assert {(p["topic"], p["partition"]) for p in partitions} == _cluster_partitions(acl_bed)
        with granted(acl_bed, [a for i, a in enumerate(acls) if i != left_out]):
            done = _snapshot(access, tmp_path)
            assert done.returncode == 1, f"snapshot without {acls[left_out]} exited 0: {done.stderr}"
            assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    finally:
        delete_topic(acl_bed, topic)


def _execute(access: SecuredAccess, plan: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    process = cli(
        "execute",
        "--plan", str(plan),
        "--bootstrap-server", access.bootstrap_servers,
        "--command-config", str(access.write(tmp_path / "client.properties")),
        "--throttle", "2000000",
        "--poll-interval", "0.5",
    )  # fmt: skip
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("left_out", [None, 0, 1, 2, 3])
def test_execute_needs_each_of_its_acls(
    acl_bed: KafkaBed, access: SecuredAccess, tmp_path: Path, left_out: int | None
) -> None:
    acls = documented("kafka-balancer execute and cancel")
    assert len(acls) == 4
    topic = create_topic(acl_bed, "exec", [[1, 2]])
    plan = write_plan(tmp_path / "plan.json", topic, {0: [3, 1]})
    try:
        with granted(acl_bed, [a for i, a in enumerate(acls) if i != left_out]):
            done = _execute(access, plan, tmp_path)
        moved = partitions(acl_bed, topic)[0][0]
        print(
            f"\nwithout {acls[left_out] if left_out is not None else 'nothing'}: exit {done.returncode}, "
            f"{done.stderr.strip().splitlines()[-1:]}"
        )
        if left_out is None:
            assert done.returncode == 0, done.stdout + done.stderr
            assert moved == [3, 1]
        else:
            assert done.returncode != 0, f"execute without {acls[left_out]} exited 0"
            assert moved == [1, 2]
        if left_out is not None and (acls[left_out].resource, acls[left_out].operation) == (
            "topic",
            "Describe",
        ):
            # Not "unknown topic" (bad input, exit 2): the principal may not see it.
            assert done.returncode == 1, done.stderr
            assert f"not authorized to describe topic(s) {topic}: the principal needs Describe" in done.stderr
        assert ongoing_reassignments(acl_bed, topic) == []
        assert_no_throttle_left(acl_bed, topic)
    finally:
        delete_topic(acl_bed, topic)


@pytest.mark.parametrize("kind", ["SASL_SSL", "SSL"])
def test_the_operator_connects_with_its_pools_secrets_and_the_documented_acls(
    acl_bed: KafkaBed, kube_bed: kube.KubeBed, tmp_path: Path, kind: str
) -> None:
    """SCRAM-SHA-512 over TLS, or mutual TLS: the credentials and certificates come from real
    Secrets in a real kube-apiserver, through the operator's own connection code."""
    access = acl_bed.secured_access(kind)
    namespace = f"acl-{kind.lower().replace('_', '-')}"
    created = kube_bed.kubectl("create", "namespace", namespace)
    assert created.returncode == 0, created.stderr
    files = [f"--from-file=ca.crt={access.properties['ssl.ca.location']}"]
    kafka: dict[str, object] = {
        "bootstrapServers": access.bootstrap_servers,
        "securityProtocol": kind,
        "tls": {"secretRef": {"name": "kafka-tls"}},
    }
    if kind == "SSL":
        files += [
            f"--from-file=tls.crt={access.properties['ssl.certificate.location']}",
            f"--from-file=tls.key={access.properties['ssl.key.location']}",
        ]
        principal = CERTIFICATE_PRINCIPAL
    else:
        login = kube_bed.kubectl(
            "-n", namespace, "create", "secret", "generic", "kafka-login",
            f"--from-literal=username={access.properties['sasl.username']}",
            f"--from-literal=password={access.properties['sasl.password']}",
        )  # fmt: skip
        assert login.returncode == 0, login.stderr
        kafka["sasl"] = {"mechanism": "SCRAM-SHA-512", "secretRef": {"name": "kafka-login"}}
        principal = acl_bed.scram_principal
    tls = kube_bed.kubectl("-n", namespace, "create", "secret", "generic", "kafka-tls", *files)
    assert tls.returncode == 0, tls.stderr
    for name in ("kafka-tls", *(["kafka-login"] if kind == "SASL_SSL" else [])):
        opted_in = kube_bed.kubectl("-n", namespace, "annotate", "secret", name, f"{POOLS_ANNOTATION}=*")
        assert opted_in.returncode == 0, opted_in.stderr
    spec = BrokerPoolSpec.model_validate(
        {"kafka": kafka, "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "2"}}
    )
    client = Kube(str(kube_bed.kubeconfig))
    metrics = OperatorMetrics(CollectorRegistry())
    timings = Timings()
    executions = ExecutionService(client, tmp_path, timings, metrics)
    service = PoolService(client, ClusterSource(), executions, tmp_path, timings, metrics)

    props = service.connection(PoolId(namespace, "main", "0b1c9a52-5a53-4c4e-9d1c-00000000acl1"), spec)

    topic = create_topic(acl_bed, "secret", [[1, 2], [2, 3]])
    try:
        with granted(acl_bed, documented("The operator"), principal):
            seen = observe_cluster(access.bootstrap_servers, props)
            assert set(seen.partitions) == _cluster_partitions(acl_bed)
            admin = KafkaAdmin(access.bootstrap_servers, props)
            try:
                assert admin.reassignments() == {}
                assert admin.dynamic_configs("topic", [topic]) == {topic: {}}
            finally:
                admin.close()
        # Without its ACLs the same connection reads nothing: they, not a super user, let it in.
        with pytest.raises(KafkaAccessDenied):
            observe_cluster(access.bootstrap_servers, props)
    finally:
        delete_topic(acl_bed, topic)


def test_log_dirs_without_describe_on_the_cluster_are_refused_not_read_as_empty(
    acl_bed: KafkaBed, access: SecuredAccess
) -> None:
    """Without Describe on the cluster Kafka answers DescribeLogDirs with no dir: read as it was, every
    partition would have held no data and every broker no dir."""
    topic = create_topic(acl_bed, "dirs", [[1, 2]])
    try:
        with granted(acl_bed, [Acl("topic", "*", "Describe")]):
            admin = KafkaAdmin(access.bootstrap_servers, access.properties)
            try:
                with pytest.raises(
                    KafkaAccessDenied, match=r"log dirs of broker\(s\) 1, 2: the principal needs"
                ):
                    admin.partition_sizes([(topic, 0)], brokers=[1, 2])
                with pytest.raises(KafkaAccessDenied, match="needs Describe on the cluster"):
                    admin.log_dirs([1, 2, 3])
            finally:
                admin.close()
        with granted(acl_bed, [Acl("topic", "*", "Describe"), Acl("cluster", CLUSTER_RESOURCE, "Describe")]):
            admin = KafkaAdmin(access.bootstrap_servers, access.properties)
            try:
                assert set(admin.log_dirs([1, 2, 3])) == {1, 2, 3}
            finally:
                admin.close()
    finally:
        delete_topic(acl_bed, topic)


def _replicas_on(bed: KafkaBed, broker: int) -> int:
    """How many replicas ``broker`` holds, as the bed's super user sees them."""
    topics = admin_of(bed).list_topics(timeout=10).topics
    return sum(broker in p.replicas for meta in topics.values() for p in meta.partitions.values())


@pytest.mark.usefixtures("operator_acls")
def test_a_broker_holding_a_topic_hidden_from_the_principal_is_never_judged_empty(
    acl_bed: KafkaBed, access: SecuredAccess
) -> None:
    """The scale-down webhook's check (may these brokers go?) on the real authorizer. Kafka leaves a
    topic the principal may not describe out of the metadata, so broker 3 would look as if it held
    none of its replicas."""
    hidden = create_topic(acl_bed, "ledger", [[3, 1]])
    try:
        with granted(acl_bed, [Acl("topic", hidden, "Describe", allow=False)]):
            admin = KafkaAdmin(access.bootstrap_servers, access.properties)
            try:
                with pytest.raises(KafkaAccessDenied) as raised:
                    ready_to_leave(admin, {3})
            finally:
                admin.close()
            assert f"1 topic(s) it may not describe: {hidden}" in str(raised.value)
            assert "a broker that looks empty may still hold their replicas" in str(raised.value)
        # The deny alone made the difference: taken back, the check counts the ledger's replica too.
        admin = KafkaAdmin(access.bootstrap_servers, access.properties)
        try:
            held, _ = ready_to_leave(admin, {3})
        finally:
            admin.close()
        assert held == {3: _replicas_on(acl_bed, 3)} and held[3] >= 1
    finally:
        delete_topic(acl_bed, hidden)


def test_a_principal_that_may_not_describe_every_topic_cannot_judge_a_broker_empty(
    acl_bed: KafkaBed, access: SecuredAccess
) -> None:
    """With Describe on some topics only (a prefix), the topics it may not describe cannot even be
    named: the check refuses rather than count what it sees (every other read it makes is allowed)."""
    topic = create_topic(acl_bed, "payments", [[3, 1]])
    prefixed = [Acl("topic", "payments", "Describe", pattern="prefixed")]
    try:
        cluster = [Acl("cluster", CLUSTER_RESOURCE, op) for op in ("Describe", "DescribeConfigs")]
        with granted(acl_bed, [*prefixed, *cluster]):
            admin = KafkaAdmin(access.bootstrap_servers, access.properties)
            try:
                with pytest.raises(KafkaAccessDenied, match="do not let this principal DESCRIBE every topic"):
                    ready_to_leave(admin, {3})
            finally:
                admin.close()
    finally:
        delete_topic(acl_bed, topic)
