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

import javaproperties
from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicCollection
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka import errors as kp_errors

from kafka_balancer.durations import age_text
from kafka_balancer.errors import InputError, KafkaAccessDenied, KafkaOperationError, KafkaUnavailableError
from kafka_balancer.kafka.client_log import served, with_client_log
from kafka_balancer.kafka.visibility import DENY_ACLS, NOT_EVERY_TOPIC, denials_of, probe_topic, unseen

TIMEOUT_S = 30.0
TOPICS_PER_DESCRIBE = 500
MIN_ISR = "min.insync.replicas"
Tp = tuple[str, int]

_JAAS = re.compile(r'(username|password)\s*=\s*"([^"]*)"')


@dataclass(frozen=True)
class PartitionState:
    """What metadata says about one partition right now."""

    replicas: tuple[int, ...]
    leader: int
    isr: frozenset[int]


@dataclass(frozen=True)
class LogDirState:
    """One log dir of one broker as DescribeLogDirs answers it."""

    path: str
    # False when the broker reports an error for the dir (a failed disk: KafkaStorageError).
    online: bool
    # The volume's size; None when the broker does not say (DescribeLogDirs before v4, Kafka < 3.3).
    total_bytes: int | None
    # Replicas kept in this dir, with their size.
    replicas: Mapping[Tp, int]
    # Future replicas: copies AlterReplicaLogDirs is making into this dir, not yet swapped in.
    future: Mapping[Tp, int]


def described_log_dirs(answers: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """kafka-python's DescribeLogDirs answers (one per broker), refused with KafkaAccessDenied when a
    broker listed no log dir: a broker has one at least, and without Describe on the cluster Kafka
    answers with none (kafka-python drops the answer's error code), which would read as no data."""
    refused = sorted(int(answer["broker"]) for answer in answers if not answer["log_dirs"])
    if refused:
        raise KafkaAccessDenied(
            f"not authorized to describe the log dirs of broker(s) {', '.join(map(str, refused))}: the "
            "principal needs Describe on the cluster (docs/security.md)"
        )
    return answers


def log_dir_states(answers: Iterable[Mapping[str, Any]]) -> dict[int, tuple[LogDirState, ...]]:
    """Each broker's log dirs from kafka-python's DescribeLogDirs answers (one per broker)."""
    found: dict[int, tuple[LogDirState, ...]] = {}
    for answer in answers:
        dirs = []
        for log_dir in answer["log_dirs"]:
            kept: dict[Tp, int] = {}
            future: dict[Tp, int] = {}
            for topic in log_dir["topics"]:
                for part in topic["partitions"]:
                    into = future if part["is_future_key"] else kept
                    into[(topic["name"], part["partition_index"])] = int(part["partition_size"])
            total = int(log_dir.get("total_bytes", -1))
            dirs.append(
                LogDirState(
                    log_dir["log_dir"],
                    log_dir["error_code"] == 0,
                    total if total >= 0 else None,
                    kept,
                    future,
                )
            )
        found[int(answer["broker"])] = tuple(dirs)
    return found


@dataclass(frozen=True)
class OngoingReassignment:
    """An ongoing reassignment as Kafka lists it."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def load_properties(path: Path) -> dict[str, str]:
    """Read a client properties file as Kafka's tools read it (``java.util.Properties``): ``=``, ``:``
    or a space between key and value, values continued over lines ending in a backslash (as Kafka's
    documentation writes ``sasl.jaas.config``), escapes, and bytes as ISO-8859-1."""
    try:
        with path.open("rb") as stream:
            return dict(javaproperties.load(stream))
    except OSError as err:
        raise InputError(f"--command-config {path}: {err.strerror}") from err
    except javaproperties.InvalidUEscapeError as err:
        raise InputError(f"--command-config {path}: invalid escape {err.escape!r}") from None


def _credentials(props: Mapping[str, str]) -> tuple[str | None, str | None]:
    found = dict(_JAAS.findall(props.get("sasl.jaas.config", "")))
    return (
        props.get("sasl.username", found.get("username")),
        props.get("sasl.password", found.get("password")),
    )


def principal_of(props: Mapping[str, str]) -> str | None:
    """The principal Kafka's default principal builder makes of a SASL login (``User:<name>``); None
    for other logins (a certificate's principal depends on the brokers' mapping rules)."""
    username, _ = _credentials(props)
    if username is None or not props.get("security.protocol", "").upper().startswith("SASL"):
        return None
    return f"User:{username}"


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
    # librdkafka's own log lines go to Python logging (client_log.py), never straight to stderr.
    config: dict[str, Any] = with_client_log({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})
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
# A kafka-python client made for one call's time serves the next calls unless they must end this
# much sooner: each call's time left is a hair short of the last one's, and a new client costs a
# bootstrap.
CLIENT_TIMEOUT_SLACK_S = 1.0


# What a request that got no answer in time raises: the future's own timeout, librdkafka's codes,
# kafka-python's errors (its client-side timeout and a broker's REQUEST_TIMED_OUT share a class).
_CK_UNANSWERED = {
    KafkaError._TIMED_OUT,
    KafkaError._TIMED_OUT_QUEUE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError.NOT_CONTROLLER,
}
_KP_UNANSWERED = (
    kp_errors.RequestTimedOutError,
    kp_errors.KafkaTimeoutError,
    kp_errors.NodeNotReadyError,
    kp_errors.KafkaConnectionError,
    kp_errors.NotControllerError,
)
# Requests a broker forwards to the KRaft controller: when they go unanswered, the controller is the
# likely cause (brokers answer metadata and configs from their own cache meanwhile).
_TO_CONTROLLER = "Kafka's controller did not answer (brokers forward this request to it)"


def _unanswered(err: BaseException) -> bool:
    if isinstance(err, (TimeoutError, *_KP_UNANSWERED)):
        return True
    reported = err.args[0] if isinstance(err, KafkaException) and err.args else None
    return isinstance(reported, KafkaError) and reported.code() in _CK_UNANSWERED


def _fail(
    what: str, err: BaseException, timeout_s: float = 0.0, *, controller: bool = False
) -> KafkaOperationError:
    if _unanswered(err):
        cause = _TO_CONTROLLER if controller else f"{type(err).__name__}"
        return KafkaUnavailableError(f"{what}: no answer within {age_text(timeout_s)}: {cause}")
    return KafkaOperationError(f"{what} failed: {type(err).__name__}: {err}")


def _unknown_topic(kind: str, err: KafkaException) -> bool:
    reported = err.args[0] if err.args else None
    return (
        kind == "topic"
        and isinstance(reported, KafkaError)
        and reported.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    )


class KafkaAdmin:
    """Typed admin operations of one cluster; see the module docstring.

    Every call waits at most ``timeout_s`` for an answer (the executor passes its dead-broker timeout:
    a broker that hangs must not hold a read for longer), and nothing past ``deadline`` (a
    ``time.monotonic()`` value: a command's own time limit). A call that gets no answer raises
    :class:`KafkaUnavailableError` and the next call uses fresh clients, which do not pick a broker
    whose connection hangs.
    """

    def __init__(
        self,
        bootstrap: str,
        props: Mapping[str, str] | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        deadline: float | None = None,
    ) -> None:
        props = props or {}
        self.timeout_s = timeout_s
        self.deadline = deadline
        self._principal = principal_of(props)
        self._ck_config = confluent_config(bootstrap, props)
        self._ck = AdminClient(self._ck_config)
        self._kp_config = kafka_python_config(bootstrap, props)
        self._kp: KafkaAdminClient | None = None
        self._kp_timeout_s = 0.0
        # Bootstrap server -> when (time.monotonic()) a client bootstrapping from it got no answer.
        self._unanswered_at: dict[str, float] = {}

    def _timeout(self, what: str) -> float:
        """Seconds ``what`` may wait for an answer."""
        if self.deadline is None:
            return self.timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise KafkaUnavailableError(f"{what}: not tried, the time limit ran out")
        return min(self.timeout_s, left)

    def _confluent_failed(
        self, what: str, err: BaseException, timeout_s: float, *, controller: bool = False
    ) -> KafkaOperationError:
        if _unanswered(err):
            # librdkafka keeps sending to a broker whose connection hangs; a new client does not.
            self._ck = AdminClient(self._ck_config)
        return _fail(what, err, timeout_s, controller=controller)

    def close(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    def _kafka_python(self, timeout_s: float) -> KafkaAdminClient:
        """The kafka-python client, made anew when a call may wait for less than its timeout (it
        takes the timeout when it is made)."""
        if self._kp is not None and self._kp_timeout_s > timeout_s + CLIENT_TIMEOUT_SLACK_S:
            self._drop_kafka_python()
        if self._kp is None:
            self._kp = self._connect_kafka_python(timeout_s)
            self._kp_timeout_s = timeout_s
        return self._kp

    def _connect_kafka_python(self, timeout_s: float) -> KafkaAdminClient:
        """A kafka-python client bootstrapped from one server at a time, each given an even share of
        the time left, the servers that went unanswered last (the longest ago first).

        Given them all, kafka-python bootstraps from one picked at random and waits its whole
        timeout there when that broker hangs (its kernel still takes the connection): with n
        servers, each new client had one chance in n of spending the call's whole time on it."""
        servers: list[str] = sorted(
            self._kp_config["bootstrap_servers"], key=lambda server: self._unanswered_at.get(server, -1.0)
        )
        deadline = time.monotonic() + timeout_s
        for untried, server in zip(range(len(servers), 0, -1), servers, strict=True):
            share = max(deadline - time.monotonic(), 0.0) / untried
            config = {
                **self._kp_config,
                "bootstrap_servers": [server],
                "request_timeout_ms": int(timeout_s * 1000),
                "bootstrap_timeout_ms": int(share * 1000),
            }
            try:
                return KafkaAdminClient(**config)
            except Exception as err:
                if untried == 1 or not _unanswered(err):
                    raise _fail("connecting the reassignment client", err, timeout_s) from err
                self._unanswered_at[server] = time.monotonic()
        raise AssertionError("unreachable: the last server returns or raises")

    def _read_with_kafka_python(
        self, what: str, call: Callable[[KafkaAdminClient], T], *, controller: bool = False
    ) -> T:
        """A read through kafka-python, retried on a fresh client while its time allows: cached
        metadata may still name a broker that just went away (a destination broker dying mid-move).
        Every attempt together waits at most the admin's timeout."""
        timeout_s = self._timeout(what)
        deadline = time.monotonic() + timeout_s
        for attempt in range(1, READ_ATTEMPTS + 1):
            left = deadline - time.monotonic()
            try:
                return call(self._kafka_python(left))
            except KafkaOperationError:
                raise
            except Exception as err:
                self._drop_kafka_python()
                if attempt == READ_ATTEMPTS or deadline - time.monotonic() <= READ_RETRY_S:
                    raise _fail(what, err, timeout_s, controller=controller) from err
                time.sleep(READ_RETRY_S)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _drop_kafka_python(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    # -- metadata ----------------------------------------------------------------------------------

    def _described(self) -> Any:
        what = "describing the cluster"
        timeout_s = self._timeout(what)
        try:
            return served(self._ck).describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s)
        except Exception as err:
            raise self._confluent_failed(what, err, timeout_s) from err

    def cluster_id(self) -> str:
        """The Kafka cluster's id: the same whichever bootstrap servers reach it."""
        return str(self._described().cluster_id)

    def broker_ids(self) -> frozenset[int]:
        return frozenset(self.broker_racks())

    def broker_racks(self) -> dict[int, str | None]:
        """Each live broker's rack (None where the broker sets no ``broker.rack``)."""
        return {node.id: node.rack for node in self._described().nodes}

    def partitions(self, topics: Iterable[str] | None = None) -> dict[Tp, PartitionState]:
        """Every partition of ``topics`` (all topics if None); unknown topics are simply absent."""
        what = "reading topic metadata"
        timeout_s = self._timeout(what)
        try:
            metadata = served(self._ck).list_topics(timeout=timeout_s)
        except KafkaException as err:
            raise self._confluent_failed(what, err, timeout_s) from err
        wanted = None if topics is None else set(topics)
        found: dict[Tp, PartitionState] = {}
        for name, topic in metadata.topics.items():
            if (wanted is not None and name not in wanted) or topic.error is not None:
                continue
            for pid, part in topic.partitions.items():
                found[(name, pid)] = PartitionState(tuple(part.replicas), part.leader, frozenset(part.isrs))
        if wanted is not None:
            hidden = self._hidden(wanted - {name for name, _ in found})
            if hidden:
                more = f" and {len(hidden) - 5} more" if len(hidden) > 5 else ""
                raise KafkaAccessDenied(
                    f"not authorized to describe topic(s) {', '.join(hidden[:5])}{more}: the principal "
                    "needs Describe on them (docs/security.md)"
                )
        return found

    def _hidden(self, names: set[str]) -> list[str]:
        """Those of ``names``, absent from a listing, that this principal may not describe. Kafka's
        authorizer leaves such a topic out of a listing without an error; asked for by name, it answers
        TOPIC_AUTHORIZATION_FAILED whether the topic exists or not, where a topic the principal may
        describe and that does not exist is UNKNOWN_TOPIC_OR_PART."""
        if not names:
            return []
        what = "describing topics"
        timeout_s = self._timeout(what)
        try:
            futures = served(self._ck).describe_topics(
                TopicCollection(sorted(names)), request_timeout=timeout_s
            )
        except KafkaException as err:
            raise self._confluent_failed(what, err, timeout_s) from err
        hidden = []
        for name, future in futures.items():
            try:
                future.result(timeout=timeout_s)
            except KafkaException as err:
                reported = err.args[0] if err.args else None
                code = reported.code() if isinstance(reported, KafkaError) else None
                if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                    hidden.append(name)
                elif code != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise self._confluent_failed(what, err, timeout_s) from err
        return sorted(hidden)

    def hidden_topics(self) -> str | None:
        """Why Kafka's ACLs may hide topics from this principal, naming the denied ones it can; None
        when it sees every topic (see :mod:`kafka_balancer.kafka.visibility`)."""
        if self._hidden({probe_topic()}):
            return NOT_EVERY_TOPIC
        what = "describing ACLs"
        timeout_s = self._timeout(what)
        try:
            asked = served(self._ck).describe_acls(DENY_ACLS, request_timeout=timeout_s)
            found = asked.result(timeout=timeout_s)
        except KafkaException as err:
            reported = err.args[0] if err.args else None
            if isinstance(reported, KafkaError) and reported.code() == KafkaError.SECURITY_DISABLED:
                return None  # no authorizer: nothing is kept from anyone
            raise self._confluent_failed(what, err, timeout_s) from err
        except Exception as err:
            raise self._confluent_failed(what, err, timeout_s) from err
        return unseen([d for d in denials_of(found, self._principal) if d.kind == "topic"], [])

    def partition_sizes(
        self, partitions: Iterable[Tp], brokers: Iterable[int] | None = None
    ) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) → bytes on that broker's log dirs (incl. future replicas), asking
        ``brokers`` only (default: every broker), so a broker that hangs holds up only who asks it."""
        by_topic: dict[str, list[int]] = {}
        for topic, pid in partitions:
            by_topic.setdefault(topic, []).append(pid)
        asked = None if brokers is None else sorted(set(brokers))
        if not by_topic or asked == []:
            return {}
        answers = described_log_dirs(
            self._read_with_kafka_python(
                "describing log dirs",
                lambda kp: kp.describe_log_dirs(topic_partitions=by_topic, brokers=asked),
            )
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

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[LogDirState, ...]]:
        """Each broker's log dirs, with the replicas (and future replicas) in each."""
        asked = sorted(set(brokers))
        if not asked:
            return {}
        answers = self._read_with_kafka_python(
            "describing log dirs", lambda kp: kp.describe_log_dirs(topic_partitions=None, brokers=asked)
        )
        return log_dir_states(described_log_dirs(answers))

    def alter_replica_log_dirs(
        self, targets: Mapping[tuple[str, int, int], str]
    ) -> dict[tuple[str, int, int], str]:
        """Ask each broker to move its replica of (topic, partition, broker) into the given log dir;
        return replica → error for the refused ones. The broker copies in the background."""
        if not targets:
            return {}
        what = "altering replica log dirs"
        timeout_s = self._timeout(what)
        try:
            answer = self._kafka_python(timeout_s).alter_replica_log_dirs(dict(targets))
        except KafkaOperationError:
            raise
        except Exception as err:
            self._drop_kafka_python()
            raise _fail(what, err, timeout_s) from err
        return {
            (r.topic, r.partition, r.broker_id): error.__name__
            for r, error in answer.items()
            if error is not kp_errors.NoError
        }

    # -- reassignments -----------------------------------------------------------------------------

    def reassignments(self) -> dict[Tp, OngoingReassignment]:
        listed = self._read_with_kafka_python(
            "listing partition reassignments", lambda kp: kp.list_partition_reassignments(), controller=True
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
        what = "altering partition reassignments"
        timeout_s = self._timeout(what)
        try:
            answer = self._kafka_python(timeout_s).alter_partition_reassignments(request)
        except KafkaOperationError:
            raise
        except Exception as err:
            self._drop_kafka_python()
            raise _fail(what, err, timeout_s, controller=True) from err
        return {(tp.topic, tp.partition): str(error) for tp, error in answer.items() if error is not None}

    # -- configs -----------------------------------------------------------------------------------

    def dynamic_configs(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, str]]:
        """Resource name → its dynamically set (non-default) configs; ``kind`` is ``broker`` or ``topic``.
        A topic that does not exist (deleted meanwhile, on a shared cluster) is simply absent."""
        wanted = list(names)
        # Each broker is asked on its own (librdkafka refuses several brokers in one call); topics
        # go in batches, so verifying a plan over thousands of topics is a few requests, not thousands.
        size = TOPICS_PER_DESCRIBE if kind == "topic" else 1
        found: dict[str, dict[str, str]] = {}
        for start in range(0, len(wanted), size):
            batch = [ConfigResource(kind, name) for name in wanted[start : start + size]]
            what = f"describing configs of {kind} {batch[0].name}"
            timeout_s = self._timeout(what)
            try:
                futures = served(self._ck).describe_configs(batch, request_timeout=timeout_s)
                answered = []
                for resource, future in futures.items():
                    try:
                        answered.append((resource, future.result(timeout=timeout_s)))
                    except KafkaException as err:
                        if not _unknown_topic(kind, err):
                            raise
            except Exception as err:
                raise self._confluent_failed(what, err, timeout_s) from err
            for resource, entries in answered:
                found[resource.name] = {
                    entry.name: entry.value
                    for entry in entries.values()
                    if entry.value is not None
                    and entry.source
                    in (ConfigSource.DYNAMIC_BROKER_CONFIG.value, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
                }
        return found

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's ``min.insync.replicas`` in force: its own, else the cluster's. A topic that
        does not exist is absent."""
        wanted = sorted(set(topics))
        found: dict[str, int] = {}
        for start in range(0, len(wanted), TOPICS_PER_DESCRIBE):
            batch = [ConfigResource("topic", name) for name in wanted[start : start + TOPICS_PER_DESCRIBE]]
            what = f"describing configs of topic {batch[0].name}"
            timeout_s = self._timeout(what)
            try:
                futures = served(self._ck).describe_configs(batch, request_timeout=timeout_s)
                for resource, future in futures.items():
                    try:
                        entries = future.result(timeout=timeout_s)
                    except KafkaException as err:
                        if not _unknown_topic("topic", err):
                            raise
                        continue
                    entry = entries.get(MIN_ISR)
                    found[resource.name] = int(entry.value) if entry is not None and entry.value else 1
            except Exception as err:
                raise self._confluent_failed(what, err, timeout_s) from err
        return found

    def _broker_entries(self, broker: int) -> dict[str, Any]:
        """Every config entry ``broker`` describes (defaults and synonyms included), by name."""
        what = f"describing configs of broker {broker}"
        timeout_s = self._timeout(what)
        try:
            futures = served(self._ck).describe_configs(
                [ConfigResource("broker", str(broker))], request_timeout=timeout_s
            )
            return {
                name: entry for f in futures.values() for name, entry in f.result(timeout=timeout_s).items()
            }
        except Exception as err:
            raise self._confluent_failed(what, err, timeout_s) from err

    def default_broker_configs(self, broker: int) -> dict[str, str]:
        """The cluster-wide broker defaults set dynamically (``kafka-configs --entity-default``), as
        ``broker`` reports them: each of its configs lists the sources it could come from (its
        synonyms), the cluster-wide default among them even where the broker has its own value."""
        default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        return {
            name: str(source.value)
            for name, entry in self._broker_entries(broker).items()
            for source in (entry, *entry.synonyms.values())
            if source.source == default and source.value is not None
        }

    def broker_config_names(self, broker: int) -> frozenset[str]:
        """Every config ``broker`` knows, set or not: what its Kafka version supports."""
        return frozenset(self._broker_entries(broker))

    def alter_configs(
        self, kind: str, name: str, set_: Mapping[str, str], delete: Iterable[str] = ()
    ) -> None:
        """Set and remove configs of one resource; a topic that does not exist has none to change."""
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in set_.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
        if not entries:
            return
        resource = ConfigResource(kind, name, incremental_configs=entries)
        what = f"altering configs of {kind} {name}"
        timeout_s = self._timeout(what)
        try:
            for future in (
                served(self._ck).incremental_alter_configs([resource], request_timeout=timeout_s).values()
            ):
                future.result(timeout=timeout_s)
        except KafkaException as err:
            if not _unknown_topic(kind, err):
                raise self._confluent_failed(what, err, timeout_s, controller=True) from err
        except Exception as err:
            raise self._confluent_failed(what, err, timeout_s, controller=True) from err

    # -- leadership --------------------------------------------------------------------------------

    def elect_preferred_leaders(self, partitions: Iterable[Tp]) -> dict[Tp, str]:
        """Run preferred-leader election; return partition → error for those that did not elect."""
        request = [CkTopicPartition(t, p) for t, p in partitions]
        if not request:
            return {}
        what = "electing preferred leaders"
        timeout_s = self._timeout(what)
        try:
            # No request_timeout here: confluent-kafka 2.16 fails parsing it ("more argument specifiers
            # than keyword list entries"); the wait below bounds the call all the same.
            answer = served(self._ck).elect_leaders(ElectionType.PREFERRED, request).result(timeout=timeout_s)
        except Exception as err:
            raise self._confluent_failed(what, err, timeout_s, controller=True) from err
        return {
            (tp.topic, tp.partition): str(err)
            for tp, err in answer.items()
            if err is not None and err.code() != KafkaError.ELECTION_NOT_NEEDED
        }
