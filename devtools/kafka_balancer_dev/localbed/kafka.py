"""A real Apache Kafka KRaft cluster on 127.0.0.1: one dedicated controller and N rack-labelled brokers.

The jars come from ``hack/kafka/provision.sh`` (Maven Central, cached); this module only runs them.
Everything a bed writes (configs, data, logs, its state file) lives in its run directory.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from confluent_kafka.admin import AdminClient

# Their real home: confluent_kafka.admin does not re-export them typed.
from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from kafka_balancer.kafka.client_log import with_client_log
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kafka_config as cfg
from kafka_balancer_dev.localbed.ports import accepts_connections, free_port, free_ports
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until
from kafka_balancer_dev.localbed.state_file import BedStateFile
from kafka_balancer_dev.localbed.tls_material import TlsMaterial, make_tls_material

REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"

LOG_DIRS_PER_BROKER = 2
DEFAULT_HEAP = "384m"
STOP_GRACE_S = 30.0
_SCRAM = {ScramMechanism.SCRAM_SHA_256: "SCRAM-SHA-256", ScramMechanism.SCRAM_SHA_512: "SCRAM-SHA-512"}
# What hack/prometheus/provision.sh puts in its directory (the agent) and where the rules are.
METRICS_AGENT_JAR = "jmx_prometheus_javaagent.jar"
METRICS_RULES = "jmx-exporter.yaml"
STATE = BedStateFile("kafka-bed.json", "Kafka", "kafka down", STOP_GRACE_S)


@dataclass(frozen=True)
class ToolResult:
    """What a Kafka command-line tool printed and returned."""

    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class SecuredAccess:
    """How a client reaches a secured bed: one SASL mechanism (``PLAIN``, ``SCRAM-SHA-256``,
    ``SCRAM-SHA-512``) on the SASL_PLAINTEXT listener, or ``SSL``; ``properties`` hold the secret."""

    kind: str
    bootstrap_servers: str
    properties: Mapping[str, str] = field(repr=False)

    def write(self, path: Path) -> Path:
        """The properties as a Java properties file (what ``--command-config`` reads), mode 0600."""
        path.touch(mode=0o600)
        path.write_text(cfg.render_properties(self.properties))
        return path


# The cluster resource's one name, as ``kafka-acls.sh --cluster`` writes it.
CLUSTER_RESOURCE = "kafka-cluster"


@dataclass(frozen=True)
class Acl:
    """One ACL of a principal as ``kafka-acls.sh`` spells it: ``resource`` ``cluster``, ``topic`` or
    ``group``; ``operation`` Kafka's name (``Describe``, ``AlterConfigs``…); ``pattern`` ``literal``
    (``*`` matches every name) or ``prefixed``; ``allow`` False for a deny ACL."""

    resource: str
    name: str
    operation: str
    pattern: str = "literal"
    allow: bool = True

    def binding(self, principal: str) -> AclBinding:
        try:
            resource = (
                ResourceType.BROKER if self.resource == "cluster" else ResourceType[self.resource.upper()]
            )
            operation = AclOperation[_snake(self.operation)]
            pattern = ResourcePatternType[self.pattern.upper()]
        except KeyError as err:
            raise BedError(f"not an ACL kafka-acls.sh knows: {self}") from err
        permission = AclPermissionType.ALLOW if self.allow else AclPermissionType.DENY
        return AclBinding(resource, self.name, pattern, principal, "*", operation, permission)


def _snake(name: str) -> str:
    """``AlterConfigs`` → ``ALTER_CONFIGS``."""
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()


def _key(binding: AclBinding) -> tuple[object, ...]:
    return (
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.operation,
        binding.permission_type,
    )


_BINDING_FIELDS = (
    "restype",
    "name",
    "resource_pattern_type",
    "principal",
    "host",
    "operation",
    "permission_type",
)


@dataclass(frozen=True)
class _Secrets:
    """A secured bed's credentials and TLS files (all under its run directory)."""

    tls: TlsMaterial
    plain_user: str
    scram_user: str
    plain_password: str = field(repr=False)
    scram_password: str = field(repr=False)


@dataclass(frozen=True)
class _Node:
    """One started Kafka process of the bed; ``secured_ports`` (listener name → port) only on a secured
    bed's brokers."""

    node_id: int
    rack: str | None
    port: int
    directory: Path
    process: ManagedProcess
    secured_ports: Mapping[str, int] = field(default_factory=dict)
    # The JMX exporter agent's HTTP port on a bed with broker metrics.
    metrics_port: int | None = None
    # The listener on the node's bridge on a bed with ``pod_host``.
    pod_port: int | None = None

    @property
    def name(self) -> str:
        return f"controller-{self.node_id}" if self.rack is None else f"broker-{self.node_id}"

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def server_log(self) -> Path:
        return self.directory / "logs" / "server.log"


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise BedError("java not found (install a JDK 17+ or set JAVA_HOME)")
    return java


class KafkaBed:
    """Formats, starts and stops a local KRaft cluster; see the module docstring.

    Broker ids are 1..N, racks cycle ``a, b, c, …``; the controller is node 100. With ``secured``,
    every broker also listens with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512) and SSL (see
    :meth:`secured_access`); brokers and the bed's own calls keep using PLAINTEXT. With
    ``metrics_agent`` (the directory ``hack/prometheus/provision.sh`` prints) every broker runs the
    Prometheus JMX exporter on its own loopback port (:attr:`metrics_endpoints`). With ``authorizer``
    (and ``secured``) every node enforces ACLs (KRaft's StandardAuthorizer, nothing allowed without
    one): the PLAINTEXT listeners' principal is a super user, the secured listeners' users get only
    what :meth:`add_acls` grants them.
    """

    def __init__(
        self,
        libs_dir: Path,
        run_dir: Path,
        *,
        brokers: int = 4,
        racks: int = 3,
        heap: str = DEFAULT_HEAP,
        start_timeout_s: float = 120.0,
        secured: bool = False,
        metrics_agent: Path | None = None,
        pod_host: str | None = None,
        authorizer: bool = False,
    ) -> None:
        if brokers < 1:
            raise BedError(f"a Kafka bed needs at least one broker, got {brokers}")
        if authorizer and not secured:
            raise BedError("an authorizer needs the secured listeners (secured=True): they carry the users")
        if not any(libs_dir.glob("kafka_2.13-*.jar")):
            raise BedError(f"no Kafka jars in {libs_dir} (run hack/kafka/provision.sh)")
        self.libs_dir = libs_dir
        self.run_dir = run_dir.resolve()
        self.initial_brokers = brokers
        self.rack_cycle = cfg.rack_names(racks)
        self.heap = heap
        self.start_timeout_s = start_timeout_s
        self.cluster_id = cfg.new_cluster_id()
        self._java = _java()
        self._controller: _Node | None = None
        self._brokers: dict[int, _Node] = {}
        self._stopped: dict[int, _Node] = {}
        self._frozen: set[int] = set()  # node ids SIGSTOPped by freeze()
        self._last_broker_id = 0
        self.secured = secured
        self._secrets: _Secrets | None = None
        if metrics_agent is not None and not (metrics_agent / METRICS_AGENT_JAR).is_file():
            raise BedError(f"no {METRICS_AGENT_JAR} in {metrics_agent} (run hack/prometheus/provision.sh)")
        self.metrics_agent = metrics_agent
        self.pod_host = pod_host
        self.authorizer = authorizer

    # -- what callers read -------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every running broker, comma-separated."""
        return ",".join(f"{cfg.HOST}:{node.port}" for node in self._brokers.values())

    @property
    def pod_bootstrap_servers(self) -> str:
        """``host:port`` of every running broker's listener on ``pod_host`` (where pods connect)."""
        if self.pod_host is None:
            raise BedError("this Kafka bed has no listener for pods (start it with pod_host=...)")
        return ",".join(f"{self.pod_host}:{node.pod_port}" for node in self._brokers.values())

    @property
    def racks(self) -> dict[int, str]:
        """Running broker id → its ``broker.rack``."""
        return {broker_id: node.rack for broker_id, node in self._brokers.items() if node.rack}

    def secured_access(self, kind: str) -> SecuredAccess:
        """Bootstrap and client properties for ``kind``: a SASL mechanism of
        :data:`kafka_config.SASL_MECHANISMS` (SASL_PLAINTEXT), ``SSL`` (mutual TLS: with the client
        certificate), or ``SASL_SSL`` (SCRAM-SHA-512 over TLS). Only on a started ``secured`` bed."""
        found = self._secrets
        if found is None:
            raise BedError("this Kafka bed has no secured listeners (start it with secured=True)")
        tls = {"ssl.ca.location": str(found.tls.ca_pem)}
        scram = {"sasl.username": found.scram_user, "sasl.password": found.scram_password}
        if kind == "SSL":
            client = {
                "ssl.certificate.location": str(found.tls.client_cert_pem),
                "ssl.key.location": str(found.tls.client_key_pem),
            }
            listener, props = cfg.SSL_LISTENER, {"security.protocol": "SSL", **tls, **client}
        elif kind == "SASL_SSL":
            listener = cfg.SASL_SSL_LISTENER
            props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", **scram, **tls}
        elif kind in cfg.SASL_MECHANISMS:
            listener = cfg.SASL_LISTENER
            plain = {"sasl.username": found.plain_user, "sasl.password": found.plain_password}
            props = {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": kind,
                **(plain if kind == "PLAIN" else scram),
            }
        else:
            raise BedError(f"no secured access {kind!r}; one of {[*cfg.SASL_MECHANISMS, 'SSL', 'SASL_SSL']}")
        ports = [node.secured_ports[listener] for node in self._brokers.values()]
        return SecuredAccess(kind, ",".join(f"{cfg.HOST}:{port}" for port in ports), props)

    @property
    def scram_principal(self) -> str:
        """The principal of the SCRAM user of :meth:`secured_access` (``SCRAM-*`` and ``SASL_SSL``)."""
        if self._secrets is None:
            raise BedError("this Kafka bed has no secured listeners (start it with secured=True)")
        return f"User:{self._secrets.scram_user}"

    def add_acls(self, principal: str, acls: Sequence[Acl]) -> None:
        """Create ``acls`` for ``principal``; return once every broker enforces them."""
        self._change_acls(principal, acls, add=True)

    def remove_acls(self, principal: str, acls: Sequence[Acl]) -> None:
        """Delete ``acls`` of ``principal`` (exactly those); return once no broker enforces them."""
        self._change_acls(principal, acls, add=False)

    def _change_acls(self, principal: str, acls: Sequence[Acl], *, add: bool) -> None:
        if not self.authorizer:
            raise BedError("this Kafka bed enforces no ACLs (start it with authorizer=True)")
        bindings = [acl.binding(principal) for acl in acls]
        admin = AdminClient(with_client_log({"bootstrap.servers": self.bootstrap_servers}))
        try:
            if add:
                futures = list(admin.create_acls(bindings, request_timeout=30).values())
            else:
                filters = [AclBindingFilter(*(getattr(b, f) for f in _BINDING_FIELDS)) for b in bindings]
                futures = list(admin.delete_acls(filters, request_timeout=30).values())
            for future in futures:
                future.result(timeout=60)
        except Exception as err:
            raise BedError(f"changing ACLs of {principal} failed: {type(err).__name__}: {err}") from err
        changed = {_key(b) for b in bindings}
        for node in self._brokers.values():
            wait_until(
                lambda node=node: (changed <= self._acls_on(node, principal)) == add,  # type: ignore[misc]
                timeout_s=self.start_timeout_s,
                what=f"broker {node.node_id} to enforce the ACL change of {principal}",
            )

    def _acls_on(self, node: _Node, principal: str) -> set[tuple[object, ...]]:
        """The ACLs of ``principal`` as ``node``'s own authorizer has them (it answers DescribeAcls)."""
        admin = AdminClient(with_client_log({"bootstrap.servers": f"{cfg.HOST}:{node.port}"}))
        # None matches any name and any host (the stubs type them str).
        wanted = AclBindingFilter(
            ResourceType.ANY,
            None,  # type: ignore[arg-type]
            ResourcePatternType.ANY,
            principal,
            None,  # type: ignore[arg-type]
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        try:
            found = admin.describe_acls(wanted, request_timeout=5).result(timeout=10)
        except Exception:  # the broker is busy starting: ask again
            return set()
        return {_key(b) for b in found}

    @property
    def metrics_endpoints(self) -> dict[int, str]:
        """Running broker id → ``host:port`` of its JMX exporter (a bed started with ``metrics_agent``)."""
        return {
            b: f"{cfg.HOST}:{node.metrics_port}" for b, node in self._brokers.items() if node.metrics_port
        }

    def pids(self) -> dict[str, int]:
        """Name → PID of every running node of the bed."""
        nodes = [*self._brokers.values(), *([self._controller] if self._controller else [])]
        return {node.name: node.process.pid for node in nodes}

    def log_path(self, node_id: int) -> Path:
        """The server log of a broker (or of the controller, node 100)."""
        return self._node(node_id).server_log

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Format and start the controller and the initial brokers; return once all are unfenced.

        On failure everything started so far is stopped and :class:`BedError` names the culprit's log.
        """
        STATE.refuse_if_running(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "log4j2.xml").write_text(cfg.SERVER_LOG4J2)
        (self.run_dir / "tools-log4j2.xml").write_text(cfg.TOOLS_LOG4J2)
        try:
            if self.secured:
                self._secrets = self._make_secrets()
            controller_port, *broker_ports = free_ports(1 + self.initial_brokers)
            controller_dir = self._fresh_dir(f"controller-{cfg.CONTROLLER_ID}")
            controller_props = cfg.controller_properties(
                controller_port=controller_port, metadata_dir=controller_dir / "metadata"
            )
            if self.authorizer:
                controller_props = cfg.with_authorizer(controller_props)
            plans: list[tuple[int, str | None, int, Path, dict[str, str]]] = [
                (cfg.CONTROLLER_ID, None, controller_port, controller_dir, controller_props)
            ]
            for index, port in enumerate(broker_ports):
                broker_id = index + 1
                rack = self.rack_cycle[index % len(self.rack_cycle)]
                directory, props = self._broker_plan(broker_id, rack, port, controller_port)
                plans.append((broker_id, rack, port, directory, props))
            self._format([(d, p) for _, _, _, d, p in plans])
            for node_id, node_rack, node_port, node_dir, node_props in plans:
                node = self._launch(node_id, node_rack, node_port, node_dir, node_props)
                if node_rack is None:
                    self._controller = node
                else:
                    self._brokers[node_id] = node
            self._last_broker_id = self.initial_brokers
            self._await_listening(self._controller_node())
            for node in self._brokers.values():
                self._await_listening(node)
            self._await_registered(set(self._brokers))
            if self._secrets is not None:
                self._create_scram_users(self._secrets)
        except BaseException:
            self.stop()
            raise
        self._write_state()

    def add_broker(self, rack: str) -> int:
        """Start one more broker (next unused id) in ``rack``; return its id once it is unfenced."""
        controller = self._controller_node()
        broker_id = self._last_broker_id + 1
        self._last_broker_id = broker_id
        port = free_port()
        directory, props = self._broker_plan(broker_id, rack, port, controller.port)
        try:
            self._format([(directory, props)])
            node = self._launch(broker_id, rack, port, directory, props)
            self._brokers[broker_id] = node
            self._await_listening(node)
            self._await_registered(set(self._brokers))
        except BedError:
            self._stop_node(self._brokers.pop(broker_id, None))
            self._write_state()
            raise
        self._write_state()
        return broker_id

    def stop_broker(self, broker_id: int, *, crash: bool = False) -> None:
        """Stop one broker gracefully (controlled shutdown), or with ``crash`` kill it (SIGKILL: a node
        lost, an OOM kill; its next start recovers its unflushed logs); return once it has left
        cluster metadata."""
        node = self._brokers.pop(broker_id, None)
        if node is None:
            raise BedError(f"no running broker {broker_id} in this bed (running: {sorted(self._brokers)})")
        if crash:
            self._thaw(node)
            node.process.kill()
        else:
            self._stop_node(node)
        self._stopped[broker_id] = node
        self._write_state()
        if self._brokers:
            controller_log = self._controller_node().server_log
            wait_until(
                lambda: broker_id not in self._live_brokers(),
                timeout_s=self.start_timeout_s,
                what=f"stopped broker {broker_id} to leave metadata (controller log {controller_log})",
            )

    def restart_broker(self, broker_id: int) -> None:
        """Start a broker :meth:`stop_broker` stopped, with its id, rack, port and data; return once it
        is unfenced (a broker coming back after an outage)."""
        node = self._stopped.pop(broker_id, None)
        if node is None:
            raise BedError(
                f"broker {broker_id} was not stopped by this bed (stopped: {sorted(self._stopped)})"
            )
        process = self._process(node.node_id, node.rack, node.directory, node.metrics_port)
        restarted = replace(node, process=process)
        self._brokers[broker_id] = restarted
        self._write_state()
        self._await_listening(restarted)
        self._await_registered(set(self._brokers))

    def stop_controller(self) -> None:
        """Stop the KRaft controller (the whole quorum: it is the only voter); brokers keep serving
        from their metadata, but nothing that needs the controller (reassignments, configs) answers."""
        self._stop_node(self._controller_node())

    def restart_controller(self) -> None:
        """Start the controller :meth:`stop_controller` stopped, with its port and metadata; return once
        every running broker is registered with it again."""
        node = self._controller_node()
        if node.process.exit_code() is None:
            raise BedError("the controller is running (stop_controller first)")
        self._controller = replace(node, process=self._process(node.node_id, None, node.directory, None))
        self._write_state()
        self._await_listening(self._controller)
        self._await_registered(set(self._brokers))

    def freeze(self, node_id: int) -> None:
        """SIGSTOP a broker (or the controller, node 100): its sockets stay open and nothing answers,
        like a host that hangs. :meth:`thaw` resumes it; :meth:`stop` thaws before stopping."""
        node = self._node(node_id)
        os.kill(node.process.pid, signal.SIGSTOP)
        self._frozen.add(node_id)

    def thaw(self, node_id: int) -> None:
        """SIGCONT a node :meth:`freeze` stopped."""
        self._thaw(self._node(node_id))

    def stop(self) -> None:
        """Stop every process this bed started, brokers first (in parallel), then the controller."""
        for node in [*self._brokers.values(), *([self._controller] if self._controller else [])]:
            self._thaw(node)
        brokers = list(self._brokers.values())
        for node in brokers:
            node.process.signal_stop()
        for node in brokers:
            node.process.stop(STOP_GRACE_S)
        self._brokers.clear()
        self._stop_node(self._controller)
        self._controller = None
        STATE.remove(self.run_dir)

    def __enter__(self) -> KafkaBed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- Kafka's own tools -------------------------------------------------------------------------

    def run_tool(
        self,
        main_class: str,
        args: Sequence[str],
        *,
        timeout_s: float = 300.0,
        bootstrap_servers: str | None = None,
    ) -> ToolResult:
        """Run a Kafka tool class from the bed's jars with ``--bootstrap-server`` set to this bed (its
        PLAINTEXT listener unless ``bootstrap_servers`` names another)."""
        argv = [
            *self._java_argv(self.run_dir / "tools-log4j2.xml", heap="256m"),
            main_class,
            "--bootstrap-server",
            bootstrap_servers or self.bootstrap_servers,
            *args,
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as err:
            raise BedError(f"Kafka tool {main_class} did not finish within {timeout_s:.0f}s") from err
        return ToolResult(done.returncode, done.stdout, done.stderr)

    # -- internals ---------------------------------------------------------------------------------

    def _controller_node(self) -> _Node:
        if self._controller is None:
            raise BedError("the Kafka bed is not started")
        return self._controller

    def _node(self, node_id: int) -> _Node:
        node = self._controller if node_id == cfg.CONTROLLER_ID else self._brokers.get(node_id)
        if node is None:
            raise BedError(f"no running Kafka node {node_id} in this bed")
        return node

    def _thaw(self, node: _Node) -> None:
        """SIGCONT if :meth:`freeze` stopped it: a stopped process ignores SIGTERM until continued."""
        if node.node_id in self._frozen:
            self._frozen.discard(node.node_id)
            if node.process.exit_code() is None:
                os.kill(node.process.pid, signal.SIGCONT)

    def _fresh_dir(self, name: str) -> Path:
        directory = self.run_dir / name
        shutil.rmtree(directory, ignore_errors=True)
        (directory / "logs").mkdir(parents=True)
        return directory

    def _broker_plan(
        self, broker_id: int, rack: str, port: int, controller_port: int
    ) -> tuple[Path, dict[str, str]]:
        directory = self._fresh_dir(f"broker-{broker_id}")
        props = cfg.broker_properties(
            broker_id=broker_id,
            rack=rack,
            port=port,
            controller_port=controller_port,
            log_dirs=[directory / f"data-{i}" for i in range(LOG_DIRS_PER_BROKER)],
            cluster_size=self.initial_brokers,
        )
        if self._secrets is not None:
            sasl_port, ssl_port, sasl_ssl_port = free_ports(3)
            props = cfg.with_secured_listeners(
                props,
                sasl_port=sasl_port,
                ssl_port=ssl_port,
                sasl_ssl_port=sasl_ssl_port,
                plain_users={self._secrets.plain_user: self._secrets.plain_password},
                keystore=self._secrets.tls.keystore,
                keystore_password=self._secrets.tls.keystore_password,
            )
        if self.authorizer:
            props = cfg.with_authorizer(props)
        if self.pod_host is not None:
            props = cfg.with_pod_listener(props, host=self.pod_host, port=free_port(self.pod_host))
        return directory, props

    def _make_secrets(self) -> _Secrets:
        """Fresh passwords and TLS files in the run directory: nothing secret outlives the bed's files."""
        tls = make_tls_material(self.run_dir / "secrets")
        return _Secrets(tls, "plain-user", "scram-user", secrets.token_urlsafe(18), secrets.token_urlsafe(18))

    def _create_scram_users(self, found: _Secrets) -> None:
        """SCRAM credentials through the Admin API (over PLAINTEXT); return once every broker accepts them."""
        admin = AdminClient(with_client_log({"bootstrap.servers": self.bootstrap_servers}))
        # One request per mechanism: Kafka refuses two alterations of one user in the same request.
        for mechanism in _SCRAM:
            upsert: list[UserScramCredentialAlteration] = [
                UserScramCredentialUpsertion(
                    found.scram_user, ScramCredentialInfo(mechanism, 4096), found.scram_password.encode()
                )
            ]
            try:
                for future in admin.alter_user_scram_credentials(upsert, request_timeout=30).values():
                    future.result(timeout=60)
            except Exception as err:
                raise BedError(f"creating the SCRAM user failed: {type(err).__name__}: {err}") from err
        for node in self._brokers.values():
            for name in _SCRAM.values():
                self._await_login(node, name, found)

    def _await_login(self, node: _Node, mechanism: str, found: _Secrets) -> None:
        wait_until(
            lambda: self._authenticates(node, mechanism, found),
            timeout_s=self.start_timeout_s,
            what=f"broker {node.node_id} to accept {mechanism} logins (see {node.server_log})",
        )

    def _authenticates(self, node: _Node, mechanism: str, found: _Secrets) -> bool:
        admin = AdminClient(
            with_client_log(
                {
                    "bootstrap.servers": f"{cfg.HOST}:{node.secured_ports[cfg.SASL_LISTENER]}",
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": mechanism,
                    "sasl.username": found.scram_user,
                    "sasl.password": found.scram_password,
                    "socket.timeout.ms": 3000,
                    "log_level": 0,
                }
            )
        )
        try:
            admin.describe_cluster(request_timeout=3).result(timeout=5)
        except Exception:  # credentials not yet in this broker's metadata: ask again
            return False
        return True

    def _java_argv(self, log4j2: Path, heap: str) -> list[str]:
        return [
            self._java,
            "-Xms64m",
            f"-Xmx{heap}",
            # Two cores shared by every JVM of the bed: one GC thread, no C2 compile storms at start.
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j2}",
            "-cp",
            f"{self.libs_dir}/*",
        ]

    def _format(self, nodes: Sequence[tuple[Path, dict[str, str]]]) -> None:
        """Write each node's properties and format its storage, all formatters running in parallel."""
        formatters = []
        for directory, props in nodes:
            config = directory / "server.properties"
            config.write_text(cfg.render_properties(props))
            argv = [
                *self._java_argv(self.run_dir / "tools-log4j2.xml", heap="128m"),
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                self.cluster_id,
                "--config",
                str(config),
            ]
            name = f"{directory.name} storage format"
            formatters.append(ManagedProcess(name, argv, directory / "format.log"))
        for proc in formatters:
            code = wait_until(
                proc.exit_code, timeout_s=self.start_timeout_s, what=f"{proc.name} (see {proc.log_path})"
            )
            if code != 0:
                raise BedError(f"{proc.name} failed with exit code {code}; see {proc.log_path}")

    def _launch(
        self, node_id: int, rack: str | None, port: int, directory: Path, props: Mapping[str, str]
    ) -> _Node:
        metrics_port = free_port() if self.metrics_agent is not None and rack is not None else None
        process = self._process(node_id, rack, directory, metrics_port)
        pod_port = _listener_ports(props).get(cfg.POD_LISTENER)
        return _Node(node_id, rack, port, directory, process, _secured_ports(props), metrics_port, pod_port)

    def _process(
        self, node_id: int, rack: str | None, directory: Path, metrics_port: int | None
    ) -> ManagedProcess:
        agent = []
        if self.metrics_agent is not None and metrics_port is not None:
            jar, rules = self.metrics_agent / METRICS_AGENT_JAR, self.metrics_agent / METRICS_RULES
            agent = [f"-javaagent:{jar}={cfg.HOST}:{metrics_port}:{rules}"]
        argv = [
            *self._java_argv(self.run_dir / "log4j2.xml", heap=self.heap),
            *agent,
            f"-Dkafka.logs.dir={directory / 'logs'}",
            "kafka.Kafka",
            str(directory / "server.properties"),
        ]
        name = f"controller-{node_id}" if rack is None else f"broker-{node_id}"
        return ManagedProcess(f"Kafka {name}", argv, directory / "stdout.log")

    def _await_listening(self, node: _Node) -> None:
        ports = [node.port, *node.secured_ports.values()]

        def listening() -> bool:
            node.process.ensure_running(hint=node.server_log)
            on_pod_host = node.pod_port is None or accepts_connections(node.pod_port, str(self.pod_host))
            return on_pod_host and all(accepts_connections(port) for port in ports)

        wait_until(
            listening,
            timeout_s=self.start_timeout_s,
            what=f"Kafka {node.name} to listen on {cfg.HOST}:{node.port} (see {node.server_log})",
        )

    def _live_brokers(self) -> dict[int, str | None]:
        """Broker id → rack of every registered, unfenced broker, as the Admin API reports them."""
        admin = AdminClient(
            with_client_log({"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 5000})
        )
        try:
            described = admin.describe_cluster(request_timeout=5).result(timeout=10)
        except Exception:  # the cluster is still coming up or a broker just left: ask again
            return {}
        return {node.id: node.rack for node in described.nodes}

    def _await_registered(self, broker_ids: set[int]) -> None:
        expected = {broker_id: self._brokers[broker_id].rack for broker_id in broker_ids}

        def registered() -> bool:
            for node in [self._controller_node(), *self._brokers.values()]:
                node.process.ensure_running(hint=node.server_log)
            live = self._live_brokers()
            return all(live.get(broker_id, "") == rack for broker_id, rack in expected.items())

        wait_until(
            registered,
            timeout_s=self.start_timeout_s,
            what=f"brokers {sorted(broker_ids)} to register unfenced with their racks "
            f"(controller log {self._controller_node().server_log})",
        )

    def _stop_node(self, node: _Node | None) -> None:
        if node is not None:
            self._thaw(node)
            node.process.stop(STOP_GRACE_S)

    def _write_state(self) -> None:
        nodes = [*self._brokers.values(), *([self._controller] if self._controller else [])]
        state = {
            "cluster_id": self.cluster_id,
            "bootstrap_servers": self.bootstrap_servers,
            "racks": {str(k): v for k, v in self.racks.items()},
            # Brokers before the controller: the order `down` stops them in.
            "processes": [
                {"name": node.name, "pid": node.process.pid, "marker": str(node.config_path)}
                for node in nodes
            ],
        }
        STATE.write(self.run_dir, state)


def _listener_ports(props: Mapping[str, str]) -> dict[str, int]:
    """Listener name → port of every listener of a node."""
    ports: dict[str, int] = {}
    for listener in props.get("listeners", "").split(","):
        name, _, address = listener.partition("://")
        if address:
            ports[name] = int(address.rsplit(":", 1)[1])
    return ports


def _secured_ports(props: Mapping[str, str]) -> dict[str, int]:
    """Listener name → port of a node's secured listeners (SASL, SSL)."""
    plain = (cfg.LISTENER, cfg.CONTROLLER_LISTENER, cfg.POD_LISTENER)
    return {name: port for name, port in _listener_ports(props).items() if name not in plain}
