"""A real Kubernetes API on 127.0.0.1: etcd plus kube-apiserver, no kubelet, no controller-manager.

The way controller-runtime's envtest runs one. The binaries come from ``hack/kube/provision.sh``
(built from Go modules, cached); this module only runs them. Authentication is by static tokens:
``admin`` (in ``system:masters``) and ``developer`` (no bindings at all), so RBAC really decides.
Everything a bed writes (etcd data, certificates, tokens, kubeconfig, logs, its state file) lives in
its run directory.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_balancer_dev.checkout import repo_root
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.ports import LOOPBACK, free_ports
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until
from kafka_balancer_dev.localbed.state_file import BedStateFile

ADMIN = "admin"
DEVELOPER = "developer"
STOP_GRACE_S = 15.0
STATE = BedStateFile("kube-bed.json", "Kubernetes", "kube down", STOP_GRACE_S)
# With neither a controller-manager nor service accounts' token controller, ServiceAccount admission
# would reject every Pod-bearing object for want of a "default" ServiceAccount.
DISABLED_ADMISSION = "ServiceAccount"
SERVICE_CIDR = "10.0.0.0/24"


@dataclass(frozen=True)
class NodeControlPlane:
    """How the API of a bed with a real node (``localbed.node``) differs from the API-only bed.

    The apiserver binds and advertises ``address`` (the node's bridge) so pods reach it through the
    ``kubernetes`` Service; the node's components authenticate as the ``users`` (name → groups) and the
    Node authorizer and ServiceAccount admission are on, since a controller-manager creates the accounts.
    """

    address: str
    service_cidr: str
    users: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class KubeBinaries:
    """Where the provisioned binaries are."""

    kube_apiserver: Path
    kubectl: Path
    etcd: Path
    helm: Path

    @classmethod
    def parse(cls, listing: str) -> KubeBinaries:
        """Read the ``name=path`` lines ``hack/kube/provision.sh`` prints."""
        paths = dict(line.split("=", 1) for line in listing.splitlines() if "=" in line)
        try:
            binaries = cls(
                kube_apiserver=Path(paths["kube-apiserver"]),
                kubectl=Path(paths["kubectl"]),
                etcd=Path(paths["etcd"]),
                helm=Path(paths["helm"]),
            )
        except KeyError as err:
            raise BedError(f"hack/kube/provision.sh did not report the path of {err.args[0]}") from err
        for path in (binaries.kube_apiserver, binaries.kubectl, binaries.etcd, binaries.helm):
            if not os.access(path, os.X_OK):
                raise BedError(f"provisioned binary {path} is missing or not executable")
        return binaries


def provision(*, timeout_s: float = 7200.0) -> KubeBinaries:
    """Build (or find cached) the bed's binaries; instant once cached, tens of minutes cold."""
    script = repo_root() / "hack" / "kube" / "provision.sh"
    try:
        # Progress goes to our stderr: a cold build is long and should not look hung.
        done = subprocess.run([str(script)], stdout=subprocess.PIPE, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        raise BedError(f"{script} did not finish within {timeout_s:.0f}s") from err
    if done.returncode != 0:
        raise BedError(f"{script} failed with exit code {done.returncode} (its messages are above)")
    return KubeBinaries.parse(done.stdout)


def _openssl(args: Sequence[str], log: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BedError(
            "openssl not found: it generates the service-account key pair (apt-get install openssl)"
        )
    with log.open("ab") as out:
        code = subprocess.run([openssl, *args], stdout=out, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise BedError(f"openssl {args[0]} failed with exit code {code}; see {log}")


def _get(url: str, *, token: str | None = None, ca_file: Path | None = None) -> tuple[int, str]:
    """HTTP GET; (status, body), status 0 when nothing answers (yet)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        # Inside the try: the apiserver may still be writing its certificate (ssl.SSLError is an OSError).
        context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError):
        return 0, ""


class KubeBed:
    """Starts and stops etcd and kube-apiserver; see the module docstring."""

    def __init__(
        self,
        binaries: KubeBinaries,
        run_dir: Path,
        *,
        start_timeout_s: float = 90.0,
        node: NodeControlPlane | None = None,
    ) -> None:
        self.binaries = binaries
        self.run_dir = run_dir.resolve()
        self.start_timeout_s = start_timeout_s
        self.node = node
        self.address = node.address if node else LOOPBACK
        self.groups: dict[str, tuple[str, ...]] = {ADMIN: ("system:masters",), DEVELOPER: ()}
        if node:
            self.groups.update(node.users)
        self.tokens = {user: secrets.token_hex(16) for user in self.groups}
        self.api_port = 0
        # etcd's client port on the loopback; its /metrics tells the database's size.
        self.etcd_port = 0
        self._etcd: ManagedProcess | None = None
        self._apiserver: ManagedProcess | None = None
        self._apiserver_argv: list[str] = []

    # -- what callers read -------------------------------------------------------------------------

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.api_port}"

    @property
    def kubeconfig(self) -> Path:
        """A kubeconfig with contexts ``admin`` (current) and ``developer``."""
        return self.run_dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        """The apiserver's self-signed serving certificate (with the CA that signed it)."""
        return self.run_dir / "pki" / "apiserver.crt"

    @property
    def etcd_log(self) -> Path:
        return self.run_dir / "logs" / "etcd.log"

    @property
    def apiserver_log(self) -> Path:
        return self.run_dir / "logs" / "kube-apiserver.log"

    def pids(self) -> dict[str, int]:
        """Name → PID of every running process of the bed."""
        return {p.name: p.pid for p in (self._etcd, self._apiserver) if p is not None}

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Start etcd, then kube-apiserver; return once ``/readyz`` answers ok.

        On failure everything started so far is stopped and :class:`BedError` names the component and
        its log file.
        """
        STATE.refuse_if_running(self.run_dir)
        for stale in ("etcd-data", "pki", "logs"):
            shutil.rmtree(self.run_dir / stale, ignore_errors=True)
        (self.run_dir / "logs").mkdir(parents=True)
        (self.run_dir / "pki").mkdir()
        try:
            etcd_client, etcd_peer = free_ports(2)
            self.etcd_port = etcd_client
            self.api_port = free_ports(1, self.address)[0]
            self._start_etcd(etcd_client, etcd_peer)
            self._start_apiserver(etcd_client)
        except BaseException:
            self.stop()
            raise
        self._write_kubeconfig()
        self._write_state()

    def stop(self) -> None:
        """Stop the apiserver, then etcd, by PID."""
        for process in (self._apiserver, self._etcd):
            if process is not None:
                process.stop(STOP_GRACE_S)
        self._apiserver = self._etcd = None
        STATE.remove(self.run_dir)

    def stop_apiserver(self) -> None:
        """Kill kube-apiserver alone (an outage); etcd keeps the data, ``start_apiserver`` brings it back."""
        if self._apiserver is not None:
            self._apiserver.stop(grace_s=0.0)  # no grace: a crash, not a drained shutdown

    def start_apiserver(self) -> None:
        """Start kube-apiserver again after ``stop_apiserver``: same port, certificates and etcd, so
        clients (kubeconfig, tokens, the CA they trust) reconnect as they are."""
        if self._apiserver is None or self._apiserver.exit_code() is None:
            raise BedError("start_apiserver: kube-apiserver was not stopped with stop_apiserver")
        self._apiserver = ManagedProcess("kube-apiserver", self._apiserver_argv, self.apiserver_log)
        self._wait_ready(self._apiserver)
        self._write_state()

    def __enter__(self) -> KubeBed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------------

    def kubectl(
        self, *args: str, user: str = ADMIN, stdin: str | None = None, timeout_s: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as ``user`` (a context of the kubeconfig); a non-zero exit is returned, not raised."""
        argv = [str(self.binaries.kubectl), "--kubeconfig", str(self.kubeconfig), "--context", user, *args]
        return self._run(argv, stdin, timeout_s)

    def helm(
        self, *args: str, stdin: str | None = None, timeout_s: float = 120.0
    ) -> subprocess.CompletedProcess[str]:
        """Run helm with this bed's kubeconfig (as admin) and helm state kept in the run directory."""
        helm_home = self.run_dir / "helm"
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "HELM_CACHE_HOME": str(helm_home / "cache"),
            "HELM_CONFIG_HOME": str(helm_home / "config"),
            "HELM_DATA_HOME": str(helm_home / "data"),
        }
        return self._run([str(self.binaries.helm), *args], stdin, timeout_s, env)

    def _run(
        self, argv: list[str], stdin: str | None, timeout_s: float, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                argv, input=stdin, capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )
        except subprocess.TimeoutExpired as err:
            raise BedError(
                f"{Path(argv[0]).name} did not finish within {timeout_s:.0f}s: {argv[1:]}"
            ) from err

    # -- internals ---------------------------------------------------------------------------------

    def _start_etcd(self, client_port: int, peer_port: int) -> None:
        client_url = f"http://{LOOPBACK}:{client_port}"
        peer_url = f"http://{LOOPBACK}:{peer_port}"
        argv = [
            str(self.binaries.etcd),
            f"--data-dir={self.run_dir / 'etcd-data'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            # Throwaway data: fsync only costs start-up and write latency.
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]
        self._etcd = etcd = ManagedProcess("etcd", argv, self.etcd_log)

        def healthy() -> bool:
            etcd.ensure_running()
            status, body = _get(f"{client_url}/health")
            return status == 200 and '"health":"true"' in body

        wait_until(healthy, timeout_s=self.start_timeout_s, what=f"etcd to be healthy (see {self.etcd_log})")

    def _start_apiserver(self, etcd_client_port: int) -> None:
        pki = self.run_dir / "pki"
        key, public = pki / "service-account.key", pki / "service-account.pub"
        openssl_log = self.run_dir / "logs" / "openssl.log"
        _openssl(
            ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key)],
            openssl_log,
        )
        _openssl(["pkey", "-in", str(key), "-pubout", "-out", str(public)], openssl_log)
        tokens = pki / "tokens.csv"
        # token,user,uid,"group1,group2"
        tokens.write_text(
            "".join(
                f"{self.tokens[user]},{user},{user}" + (f',"{",".join(groups)}"' if groups else "") + "\n"
                for user, groups in self.groups.items()
            )
        )
        tokens.chmod(0o600)
        argv = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://{LOOPBACK}:{etcd_client_port}",
            f"--bind-address={self.address}",
            f"--advertise-address={self.address}",
            f"--secure-port={self.api_port}",
            # The apiserver writes a self-signed serving certificate (apiserver.crt/.key) here.
            f"--cert-dir={pki}",
            f"--service-account-issuer={self.server}",
            f"--service-account-key-file={public}",
            f"--service-account-signing-key-file={key}",
            f"--service-cluster-ip-range={self.node.service_cidr if self.node else SERVICE_CIDR}",
            f"--authorization-mode={'Node,RBAC' if self.node else 'RBAC'}",
            f"--token-auth-file={tokens}",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
        ]
        if self.node:
            # The node's own address, not its hostname: nothing resolves the node's name here.
            argv.append("--kubelet-preferred-address-types=InternalIP")
        else:
            argv.append(f"--disable-admission-plugins={DISABLED_ADMISSION}")
        self._apiserver_argv = argv
        self._apiserver = ManagedProcess("kube-apiserver", argv, self.apiserver_log)
        self._wait_ready(self._apiserver)

    def _wait_ready(self, apiserver: ManagedProcess) -> None:
        def ready() -> bool:
            apiserver.ensure_running()
            if not self.ca_file.exists():
                return False
            status, _ = _get(f"{self.server}/readyz", token=self.tokens[ADMIN], ca_file=self.ca_file)
            return status == 200

        wait_until(
            ready, timeout_s=self.start_timeout_s, what=f"kube-apiserver /readyz (see {self.apiserver_log})"
        )

    def kubeconfig_of(self, user: str) -> Path:
        """A kubeconfig whose only context is ``user`` (for components that cannot choose a context)."""
        path = self.run_dir / f"kubeconfig-{user}"
        self._write_kubeconfig(path, {user: self.tokens[user]})
        return path

    def kubeconfig_with_token(self, name: str, token: str) -> Path:
        """A kubeconfig whose only context, ``name``, authenticates with ``token`` (e.g. a
        ServiceAccount's, from the TokenRequest API), so RBAC judges that identity and not a bed user."""
        path = self.run_dir / f"kubeconfig-{name}"
        self._write_kubeconfig(path, {name: token})
        return path

    def _write_kubeconfig(self, path: Path | None = None, tokens: Mapping[str, str] | None = None) -> None:
        tokens = tokens or self.tokens
        users = list(tokens)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "bed",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": user, "user": {"token": tokens[user]}} for user in users],
            "contexts": [{"name": user, "context": {"cluster": "bed", "user": user}} for user in users],
            "current-context": users[0],
        }
        path = path or self.kubeconfig
        # JSON is YAML, so kubectl and helm read it as is.
        path.write_text(json.dumps(config, indent=2) + "\n")
        path.chmod(0o600)

    def _write_state(self) -> None:
        marker = str(self.run_dir)
        state = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            # The apiserver before etcd: the order `down` stops them in.
            "processes": [
                {"name": name, "pid": pid, "marker": marker} for name, pid in reversed(self.pids().items())
            ],
        }
        STATE.write(self.run_dir, state)


def wait_established(bed: KubeBed, crd_name: str, *, timeout_s: float = 30.0) -> None:
    """Poll until a CustomResourceDefinition reports the Established condition."""

    def established() -> bool:
        done = bed.kubectl("get", "crd", crd_name, "-o", "json")
        if done.returncode != 0:
            return False
        # A CRD just created (or re-applied) can show "conditions": null until the apiserver sets them.
        conditions = (json.loads(done.stdout).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)

    wait_until(established, timeout_s=timeout_s, what=f"CRD {crd_name} to be Established")
