"""Pure rendering of the local Kafka bed's configuration: node properties, log4j2 files, names and ids."""

from __future__ import annotations

import base64
import string
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_balancer_dev.errors import BedError

CONTROLLER_ID = 100
LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"
HOST = "127.0.0.1"
# The secured bed's extra client listeners; brokers still talk to each other over PLAINTEXT.
SASL_LISTENER = "SASL_PLAINTEXT"
SSL_LISTENER = "SSL"
SASL_SSL_LISTENER = "SASL_SSL"
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# A bed beside the node (``localbed.node``) also listens on the node's bridge, where pods reach it.
POD_LISTENER = "PODS"


def rack_names(count: int) -> list[str]:
    """Rack names ``a, b, c, …`` for ``count`` racks."""
    if not 1 <= count <= len(string.ascii_lowercase):
        raise BedError(f"racks must be between 1 and {len(string.ascii_lowercase)}, got {count}")
    return list(string.ascii_lowercase[:count])


def new_cluster_id() -> str:
    """A random KRaft cluster id: 16 random bytes, URL-safe base64 without padding, as Kafka's Uuid prints.

    Kafka refuses ids that print with a leading dash, so those are drawn again.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _voters(controller_port: int) -> str:
    return f"{CONTROLLER_ID}@{HOST}:{controller_port}"


# Brokers fence a silent peer fast, so a stopped broker leaves metadata within seconds.
_HEARTBEATS = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "4000",
}


def controller_properties(*, controller_port: int, metadata_dir: Path) -> dict[str, str]:
    """The dedicated KRaft controller (static single-voter quorum)."""
    return {
        "process.roles": "controller",
        "node.id": str(CONTROLLER_ID),
        "controller.quorum.voters": _voters(controller_port),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{CONTROLLER_LISTENER}://{HOST}:{controller_port}",
        "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT",
        "log.dirs": str(metadata_dir),
        "num.network.threads": "1",
        "num.io.threads": "2",
        **_HEARTBEATS,
    }


def broker_properties(
    *,
    broker_id: int,
    rack: str,
    port: int,
    controller_port: int,
    log_dirs: Sequence[Path],
    cluster_size: int,
) -> dict[str, str]:
    """One broker; ``cluster_size`` (the initial broker count) sizes the internal topics' replication."""
    internal_rf = str(min(3, cluster_size))
    internal_min_isr = str(min(2, cluster_size))
    return {
        "process.roles": "broker",
        "node.id": str(broker_id),
        "broker.rack": rack,
        "controller.quorum.voters": _voters(controller_port),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{LISTENER}://{HOST}:{port}",
        "advertised.listeners": f"{LISTENER}://{HOST}:{port}",
        "inter.broker.listener.name": LISTENER,
        "listener.security.protocol.map": f"{LISTENER}:PLAINTEXT,{CONTROLLER_LISTENER}:PLAINTEXT",
        "log.dirs": ",".join(str(d) for d in log_dirs),
        "offsets.topic.replication.factor": internal_rf,
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": internal_min_isr,
        "share.coordinator.state.topic.replication.factor": internal_rf,
        "share.coordinator.state.topic.min.isr": internal_min_isr,
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        # A balancer's leadership decisions must stay as it made them.
        "auto.leader.rebalance.enable": "false",
        # Two cores for the whole machine: few threads per broker.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.replica.fetchers": "1",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
        # The cleaner's dedupe buffer is heap; the 128 MiB default would crowd a small heap.
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
        # A throttled follower whose quota is spent sleeps this long before it asks again; at the
        # 1 s default it idles past the moment the quota allows more (bench/README.md, "Executor
        # throughput").
        "replica.fetch.backoff.ms": "100",
        **_HEARTBEATS,
    }


def with_pod_listener(props: Mapping[str, str], *, host: str, port: int) -> dict[str, str]:
    """``props`` plus a PLAINTEXT listener on ``host:port`` advertised as such: clients that bootstrap
    there (pods) are told the brokers' addresses on it, clients on 127.0.0.1 keep the loopback ones."""
    listener = f"{POD_LISTENER}://{host}:{port}"
    protocols = props["listener.security.protocol.map"]
    return {
        **props,
        "listeners": f"{props['listeners']},{listener}",
        "advertised.listeners": f"{props['advertised.listeners']},{listener}",
        "listener.security.protocol.map": f"{protocols},{POD_LISTENER}:PLAINTEXT",
    }


def _jaas_value(text: str) -> str:
    if '"' in text or ";" in text:
        raise BedError("a bed credential must not contain '\"' or ';'")
    return text


def with_secured_listeners(
    props: Mapping[str, str],
    *,
    sasl_port: int,
    ssl_port: int,
    sasl_ssl_port: int,
    plain_users: Mapping[str, str],
    keystore: Path,
    keystore_password: str,
) -> dict[str, str]:
    """``props`` of a broker plus a SASL_PLAINTEXT listener (PLAIN for ``plain_users``, SCRAM for the
    users created through the Admin API), an SSL listener that requires a client certificate signed
    by the bed's CA (mutual TLS) and a SASL_SSL listener (SCRAM-SHA-512 over TLS)."""
    port = props["listeners"].rsplit(":", 1)[1]
    listeners = ",".join(
        [
            f"{LISTENER}://{HOST}:{port}",
            f"{SASL_LISTENER}://{HOST}:{sasl_port}",
            f"{SSL_LISTENER}://{HOST}:{ssl_port}",
            f"{SASL_SSL_LISTENER}://{HOST}:{sasl_ssl_port}",
        ]
    )
    users = " ".join(f'user_{_jaas_value(u)}="{_jaas_value(p)}"' for u, p in plain_users.items())
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    plain = f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
    sasl = f"listener.name.{SASL_LISTENER.lower()}"
    ssl = f"listener.name.{SSL_LISTENER.lower()}"
    sasl_ssl = f"listener.name.{SASL_SSL_LISTENER.lower()}"
    keystore_props = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": keystore_password,
        "ssl.key.password": keystore_password,
        # The keystore holds the CA as a trusted entry: it verifies client certificates too.
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(keystore),
        "ssl.truststore.password": keystore_password,
    }
    return {
        **props,
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": ",".join(
            [
                f"{LISTENER}:PLAINTEXT",
                f"{SASL_LISTENER}:SASL_PLAINTEXT",
                f"{SSL_LISTENER}:SSL",
                f"{SASL_SSL_LISTENER}:SASL_SSL",
                f"{CONTROLLER_LISTENER}:PLAINTEXT",
            ]
        ),
        f"{sasl}.sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
        f"{sasl}.plain.sasl.jaas.config": plain,
        f"{sasl}.scram-sha-256.sasl.jaas.config": scram,
        f"{sasl}.scram-sha-512.sasl.jaas.config": scram,
        f"{sasl_ssl}.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        f"{sasl_ssl}.scram-sha-512.sasl.jaas.config": scram,
        **{f"{ssl}.{key}": value for key, value in keystore_props.items()},
        f"{ssl}.ssl.client.auth": "required",
        **{f"{sasl_ssl}.{key}": value for key, value in keystore_props.items()},
        f"{sasl_ssl}.ssl.client.auth": "none",
    }


# KRaft's own authorizer, on the controller and every broker (the controller answers ACL changes).
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Who the PLAINTEXT listeners authenticate: the bed's own calls, brokers to each other and to the
# controller. Super user, so the bed runs as before and only the secured listeners' users need ACLs.
BED_PRINCIPAL = "User:ANONYMOUS"


def with_authorizer(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` of a node with ACLs enforced: what no ACL allows is refused (the default a hardened
    cluster runs with), except to the bed's own principal."""
    return {
        **props,
        "authorizer.class.name": AUTHORIZER,
        "allow.everyone.if.no.acl.found": "false",
        "super.users": BED_PRINCIPAL,
    }


def render_properties(props: Mapping[str, str]) -> str:
    """Java properties text; values here never need escaping beyond what is rejected below."""
    for key, value in props.items():
        if "\n" in value or "\\" in value:
            raise BedError(f"property {key} has a value that cannot be written plainly: {value!r}")
    return "".join(f"{key}={value}\n" for key, value in props.items())


# Kafka logs at INFO into a file per node (the node passes its directory as kafka.logs.dir).
SERVER_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" shutdownHook="disable">
  <Appenders>
    <File name="server" fileName="${sys:kafka.logs.dir}/server.log">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="org.apache.kafka.clients" level="warn"/>
    <Root level="info">
      <AppenderRef ref="server"/>
    </Root>
  </Loggers>
</Configuration>
"""

# Tools print their own results on stdout; only their warnings reach stderr.
TOOLS_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="warn" shutdownHook="disable">
  <Appenders>
    <Console name="stderr" target="SYSTEM_ERR">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="warn">
      <AppenderRef ref="stderr"/>
    </Root>
  </Loggers>
</Configuration>
"""
