"""The only code that talks to Kafka's admin APIs.

confluent-kafka serves metadata, configs and leader elections; kafka-python serves partition
reassignments and log dirs, which confluent-kafka lacks. Connection settings come from a Java-style
properties dict (``--command-config``); credentials are passed on, never printed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import ElectionType, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition

from kafka_balancer.errors import InputError, KafkaOperationError

TIMEOUT_S = 30.0
TOPICS_PER_DESCRIBE = 500
Tp = tuple[str, int]

_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


@dataclass(frozen=True)
class PartitionState:
    """What metadata says about one partition right now."""

    replicas: tuple[int, ...]
    leader: int
    isr: frozenset[int]


@dataclass(frozen=True)
class OngoingReassignment:
    """An ongoing reassignment as Kafka lists it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java properties file (``key=value`` lines, ``#`` comments)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise InputError(f"--command-config {path}: {err.strerror}") from err
    props: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise InputError(f"--command-config {path}: line without '=': {key[:40]!r}")
        props[key.strip()] = value.strip()
    return props


def _credentials(props: Mapping[str, str]) -> tuple[str | None, str | None]:
    found = dict(_JAAS.findall(props.get("sasl.jaas.config", "")))
    return (
        props.get("sasl.username", found.get("username")),
        props.get("sasl.password", found.get("password")),
    )


def _ca_file(props: Mapping[str, str]) -> str | None:
    """The CA bundle (PEM): ``ssl.ca.location``, or a Java truststore of type PEM."""
    if "ssl.ca.location" in props:
        return props["ssl.ca.location"]
    if "ssl.truststore.location" not in props:
        return None
    kind = props.get("ssl.truststore.type", "JKS")
    if kind.upper() != "PEM":
        raise InputError(
            f"ssl.truststore.type {kind}: only PEM truststores can be read; "
            "give the CA as ssl.ca.location (PEM)"
        )
    return props["ssl.truststore.location"]


def _checks_hostname(props: Mapping[str, str]) -> bool:
    """Java's ``ssl.endpoint.identification.algorithm``: ``https`` (default) checks, empty turns it off."""
    return props.get("ssl.endpoint.identification.algorithm", "https").strip().lower() not in ("", "none")


def confluent_config(bootstrap: str, props: Mapping[str, str]) -> dict[str, Any]:
    """librdkafka settings for the usual client property names (PLAINTEXT, SSL, SASL PLAIN/SCRAM)."""
    # log_level 2: librdkafka's connection chatter must not drown the CLI's own messages.
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000, "log_level": 2}
    for name in ("security.protocol", "sasl.mechanism", "ssl.key.password"):
        if name in props:
            config[name] = props[name]
    if "ssl.endpoint.identification.algorithm" in props:
        config["ssl.endpoint.identification.algorithm"] = "https" if _checks_hostname(props) else "none"
    ca = _ca_file(props)
    if ca:
        config["ssl.ca.location"] = ca
    for name in ("ssl.certificate.location", "ssl.key.location"):
        if name in props:
            config[name] = props[name]
    username, password = _credentials(props)
    if username is not None:
        config["sasl.username"] = username
    if password is not None:
        config["sasl.password"] = password
    return config


def kafka_python_config(bootstrap: str, props: Mapping[str, str]) -> dict[str, Any]:
    """The same settings under kafka-python's names."""
    config: dict[str, Any] = {"bootstrap_servers": bootstrap.split(","), "request_timeout_ms": 30000}
    mapping = {
        "security.protocol": "security_protocol",
        "sasl.mechanism": "sasl_mechanism",
        "ssl.certificate.location": "ssl_certfile",
        "ssl.key.location": "ssl_keyfile",
        "ssl.key.password": "ssl_password",
    }
    for java, python in mapping.items():
        if java in props:
            config[python] = props[java]
    ca = _ca_file(props)
    if ca:
        config["ssl_cafile"] = ca
    config["ssl_check_hostname"] = _checks_hostname(props)
    username, password = _credentials(props)
    if username is not None:
        config["sasl_plain_username"] = username
    if password is not None:
        config["sasl_plain_password"] = password
    return config


# librdkafka errors after which retrying cannot help: the credentials or the certificates are wrong.
_REFUSED = {KafkaError._AUTHENTICATION: "authentication failed", KafkaError._SSL: "TLS handshake failed"}
# A broker that wants a client certificate (mutual TLS) and gets none, or one it does not trust, sends a
# TLS alert that librdkafka reports as a transport error: alert 42 (TLS 1.2) or 116 (TLS 1.3).
_CLIENT_CERT_REFUSED = ("alert bad certificate", "alert certificate required", "alert unknown ca")


def _refusal(err: KafkaError) -> str | None:
    if err.code() in _REFUSED:
        return _REFUSED[err.code()]
    if any(alert in err.str() for alert in _CLIENT_CERT_REFUSED):
        return "TLS handshake failed (the broker refused the client certificate)"
    return None


def check_connection(
    bootstrap: str, props: Mapping[str, str], timeout_s: float = TIMEOUT_S
) -> tuple[int, ...]:
    """The ids of the cluster's live brokers; fails fast, in one line, when the cluster refuses these
    settings (wrong password, untrusted certificate), instead of the clients' long silent retries.
    The message never holds a credential."""
    seen: list[KafkaError] = []
    config = confluent_config(bootstrap, props)
    config["error_cb"] = seen.append
    admin = AdminClient(config)
    future = admin.describe_cluster(request_timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while not future.done() and time.monotonic() < deadline:
        admin.poll(0.2)
        refused = [(reason, err) for err in seen if (reason := _refusal(err)) is not None]
        if refused:
            reason, err = refused[0]
            raise KafkaOperationError(f"{reason} at {bootstrap}: {_one_line(err.str())}")
    try:
        cluster = future.result(timeout=1)
    except Exception as err:
        last = f"; last client error: {_one_line(seen[-1].str())}" if seen else ""
        raise KafkaOperationError(f"cannot reach Kafka at {bootstrap}: {type(err).__name__}{last}") from err
    return tuple(sorted(node.id for node in cluster.nodes))


def _one_line(text: str) -> str:
    return " ".join(text.split())


T = TypeVar("T")
# Reads through kafka-python: attempts, and the pause before a retry on a fresh client.
READ_ATTEMPTS = 3
READ_RETRY_S = 1.0


def _fail(what: str, err: BaseException) -> KafkaOperationError:
    return KafkaOperationError(f"{what} failed: {type(err).__name__}: {err}")


class KafkaAdmin:
    """Typed admin operations of one cluster; see the module docstring."""

    def __init__(self, bootstrap: str, props: Mapping[str, str] | None = None) -> None:
        props = props or {}
        self._ck = AdminClient(confluent_config(bootstrap, props))
        self._kp_config = kafka_python_config(bootstrap, props)
        self._kp: KafkaAdminClient | None = None

    def close(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    def _kafka_python(self) -> KafkaAdminClient:
        if self._kp is None:
            try:
                self._kp = KafkaAdminClient(**self._kp_config)
            except Exception as err:
                raise _fail("connecting the reassignment client", err) from err
        return self._kp

    def _read_with_kafka_python(self, what: str, call: Callable[[KafkaAdminClient], T]) -> T:
        """A read through kafka-python, retried on a fresh client: its cached metadata may still
        name a broker that just went away (a destination broker dying mid-move)."""
        for _ in range(READ_ATTEMPTS - 1):
            try:
                return call(self._kafka_python())
            except KafkaOperationError:
                raise
            except Exception:
                self._drop_kafka_python()
                time.sleep(READ_RETRY_S)
        try:
            return call(self._kafka_python())
        except KafkaOperationError:
            raise
        except Exception as err:
            self._drop_kafka_python()
            raise _fail(what, err) from err

    def _drop_kafka_python(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    # -- metadata ----------------------------------------------------------------------------------

    def broker_ids(self) -> frozenset[int]:
        return frozenset(self.broker_racks())

    def broker_racks(self) -> dict[int, str | None]:
        """Each live broker's rack (None where the broker sets no ``broker.rack``)."""
        try:
            described = self._ck.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        except Exception as err:
            raise _fail("describing the cluster", err) from err
        return {node.id: node.rack for node in described.nodes}

    def partitions(self, topics: Iterable[str] | None = None) -> dict[Tp, PartitionState]:
        """Every partition of ``topics`` (all topics if None); unknown topics are simply absent."""
        try:
            metadata = self._ck.list_topics(timeout=TIMEOUT_S)
        except KafkaException as err:
            raise _fail("reading topic metadata", err) from err
        wanted = None if topics is None else set(topics)
        found: dict[Tp, PartitionState] = {}
        for name, topic in metadata.topics.items():
            if (wanted is not None and name not in wanted) or topic.error is not None:
                continue
            for pid, part in topic.partitions.items():
                found[(name, pid)] = PartitionState(tuple(part.replicas), part.leader, frozenset(part.isrs))
        return found

    def partition_sizes(self, partitions: Iterable[Tp]) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) → bytes on that broker's log dirs (incl. future replicas)."""
        by_topic: dict[str, list[int]] = {}
        for topic, pid in partitions:
            by_topic.setdefault(topic, []).append(pid)
        if not by_topic:
            return {}
        answers = self._read_with_kafka_python(
            "describing log dirs", lambda kp: kp.describe_log_dirs(topic_partitions=by_topic)
        )
        sizes: dict[tuple[str, int, int], int] = {}
        for answer in answers:
            broker = answer["broker"]
            for log_dir in answer["log_dirs"]:
                for topic in log_dir["topics"]:
                    for part in topic["partitions"]:
                        key = (topic["name"], part["partition_index"], int(broker))
                        sizes[key] = max(sizes.get(key, 0), int(part["partition_size"]))
        return sizes

    # -- reassignments -----------------------------------------------------------------------------

    def reassignments(self) -> dict[Tp, OngoingReassignment]:
        listed = self._read_with_kafka_python(
            "listing partition reassignments", lambda kp: kp.list_partition_reassignments()
        )
        return {
            (tp.topic, tp.partition): OngoingReassignment(
                tuple(info["replicas"]), tuple(info["adding_replicas"]), tuple(info["removing_replicas"])
            )
            for tp, info in listed.items()
        }

    def alter_reassignments(self, targets: Mapping[Tp, tuple[int, ...] | None]) -> dict[Tp, str]:
        """Submit (or, with None, cancel) reassignments; return partition → error for the refused ones."""
        if not targets:
            return {}
        request = {
            KpTopicPartition(t, p): (list(r) if r is not None else None) for (t, p), r in targets.items()
        }
        try:
            answer = self._kafka_python().alter_partition_reassignments(request)
        except Exception as err:
            raise _fail("altering partition reassignments", err) from err
        return {(tp.topic, tp.partition): str(error) for tp, error in answer.items() if error is not None}

    # -- configs -----------------------------------------------------------------------------------

    def dynamic_configs(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, str]]:
        """Resource name → its dynamically set (non-default) configs; ``kind`` is ``broker`` or ``topic``."""
        wanted = list(names)
        # Each broker is asked on its own (librdkafka refuses several brokers in one call); topics
        # go in batches, so verifying a plan over thousands of topics is a few requests, not thousands.
        size = TOPICS_PER_DESCRIBE if kind == "topic" else 1
        found: dict[str, dict[str, str]] = {}
        for start in range(0, len(wanted), size):
            batch = [ConfigResource(kind, name) for name in wanted[start : start + size]]
            try:
                futures = self._ck.describe_configs(batch, request_timeout=TIMEOUT_S)
            except Exception as err:
                raise _fail(f"describing configs of {kind} {batch[0].name}", err) from err
            for resource, future in futures.items():
                try:
                    entries = future.result(timeout=TIMEOUT_S)
                except Exception as err:
                    raise _fail(f"describing configs of {kind} {resource.name}", err) from err
                found[resource.name] = {
                    entry.name: entry.value
                    for entry in entries.values()
                    if entry.value is not None
                    and entry.source
                    in (ConfigSource.DYNAMIC_BROKER_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                }
        return found

    def alter_configs(
        self, kind: str, name: str, set_: Mapping[str, str], delete: Iterable[str] = ()
    ) -> None:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
        if not entries:
            return
        resource = ConfigResource(kind, name, incremental_configs=entries)
        try:
            for future in self._ck.incremental_alter_configs([resource], request_timeout=TIMEOUT_S).values():
                future.result(timeout=TIMEOUT_S)
        except Exception as err:
            raise _fail(f"altering configs of {kind} {name}", err) from err

    # -- leadership --------------------------------------------------------------------------------

    def elect_preferred_leaders(self, partitions: Iterable[Tp]) -> dict[Tp, str]:
        """Run preferred-leader election; return partition → error for those that did not elect."""
        request = [CkTopicPartition(t, p) for t, p in partitions]
        if not request:
            return {}
        try:
            answer = self._ck.elect_leaders(ElectionType.PREFERRED, request).result(timeout=TIMEOUT_S)
        except Exception as err:
            raise _fail("electing preferred leaders", err) from err
        return {
            (tp.topic, tp.partition): str(err)
            for tp, err in answer.items()
            if err is not None and err.code() != KafkaError.ELECTION_NOT_NEEDED
        }
