"""A real single-node Kubernetes on this machine: pods run, images come from local OCI archives.

Around its own etcd + kube-apiserver (a :class:`~kafka_balancer.localbed.kube.KubeBed` bound to the
node's address) it runs containerd (Debian's, with runc and the CNI plugins), kubelet, kube-scheduler,
kube-controller-manager, kube-proxy and CoreDNS as host processes. The node is machine-wide (a fixed
bridge, node name and kubelet port), needs root, and allows one node per machine.

The machine is shared, so the node keeps to what it creates: pods live on the bridge ``kbnode0``
(10.244.0.0/24, the node's address 10.244.0.1 is its gateway), a rule drops whatever pods would send
off it, cluster DNS serves ``cluster.local`` only and forwards nothing, and every machine-wide change is
journaled and undone by :meth:`NodeBed.stop` (``localbed.node_host``).

Walls this works around (cgroup v1, no CAP_SYS_RESOURCE, no AppArmor, no ``dummy`` module) are named
where the configuration says so.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kafka_balancer_dev.checkout import repo_root
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.node_host import HostJournal
from kafka_balancer_dev.localbed.ports import answers_ok
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until

NODE_NAME = "kbnode"
BRIDGE = "kbnode0"
NODE_IP = "10.244.0.1"
POD_SUBNET = "10.244.0.0/24"
# Wider than the bridge's subnet: the rule that keeps pod traffic on the bridge covers it all.
POD_CIDR = "10.244.0.0/16"
SERVICE_CIDR = "10.96.0.0/24"
CLUSTER_DOMAIN = "cluster.local"
KUBELET_PORT = 10250
CGROUP_ROOT = "kbnode"
# What the components authenticate as: the identities Kubernetes' bootstrap RBAC policy grants.
KUBELET_USER = f"system:node:{NODE_NAME}"
SCHEDULER_USER = "system:kube-scheduler"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
PROXY_USER = "system:kube-proxy"
COREDNS_USER = "kafka-balancer:coredns"
USERS = {
    KUBELET_USER: ("system:nodes",),
    SCHEDULER_USER: (),
    CONTROLLER_MANAGER_USER: (),
    PROXY_USER: (),
    COREDNS_USER: (),
}
# kubelet sets these (unless protectKernelDefaults, which would refuse this machine's values) and
# kube-proxy may set the others; the journal restores whichever changed.
TOUCHED_SYSCTLS = (
    "vm.overcommit_memory",
    "kernel.panic",
    "kernel.panic_on_oops",
    "net.ipv4.conf.all.route_localnet",
    "net.ipv4.ip_forward",
    "net.bridge.bridge-nf-call-iptables",
)
# Paths kubelet, containerd and the CNI plugins write to whatever their configuration says.
FIXED_PATHS = (
    Path("/var/lib/kubelet"),
    Path("/var/log/containers"),
    Path("/var/log/pods"),
    Path("/var/lib/cni"),
    Path("/run/containerd"),
    Path("/run/netns"),
)
CNI_BIN_DIR = Path("/usr/lib/cni")
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class NodeBinaries:
    """What ``hack/node/provision.sh`` provides (Debian's containerd, runc and CNI plugins are installed)."""

    kubelet: Path
    kube_scheduler: Path
    kube_controller_manager: Path
    kube_proxy: Path
    coredns: Path
    pause_image: Path

    @classmethod
    def parse(cls, listing: str) -> NodeBinaries:
        """Read the ``name=path`` lines ``hack/node/provision.sh`` prints."""
        paths = dict(line.split("=", 1) for line in listing.splitlines() if "=" in line)
        try:
            binaries = cls(**{f.name: Path(paths[f.name.replace("_", "-")]) for f in fields(cls)})
        except KeyError as err:
            raise BedError(f"hack/node/provision.sh did not report the path of {err.args[0]}") from err
        for field in fields(cls):
            path: Path = getattr(binaries, field.name)
            if not path.is_file():
                raise BedError(f"provisioned {field.name} {path} is missing")
        return binaries


@dataclass(frozen=True)
class LocalImage:
    """An image built here (``hack/image/build.sh``): its name and its OCI archive."""

    name: str
    archive: Path


def _run_script(script: str, timeout_s: float) -> str:
    path = repo_root() / "hack" / script
    try:
        # Progress goes to our stderr: cold builds take minutes.
        done = subprocess.run([str(path)], stdout=subprocess.PIPE, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        raise BedError(f"{path} did not finish within {timeout_s:.0f}s") from err
    if done.returncode != 0:
        raise BedError(f"{path} failed with exit code {done.returncode} (its messages are above)")
    return done.stdout


def provision(*, timeout_s: float = 7200.0) -> NodeBinaries:
    """Install the Debian packages and build (or find cached) the node's binaries and pause image."""
    return NodeBinaries.parse(_run_script("node/provision.sh", timeout_s))


def build_operator_image(*, timeout_s: float = 3600.0) -> LocalImage:
    """Build (or find cached) the operator image from this checkout."""
    values = dict(line.split("=", 1) for line in _run_script("image/build.sh", timeout_s).splitlines())
    return LocalImage(values["image"], Path(values["archive"]))


def build_kafka_image(*, timeout_s: float = 1800.0) -> LocalImage:
    """Build (or find cached) the Kafka image of the node tier (``hack/image/build-kafka.sh``)."""
    values = dict(line.split("=", 1) for line in _run_script("image/build-kafka.sh", timeout_s).splitlines())
    return LocalImage(values["image"], Path(values["archive"]))


def _write_json(path: Path, document: dict[str, Any]) -> Path:
    """JSON is YAML, so every component's YAML configuration can be written as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


class NodeBed:
    """Starts and stops the node; see the module docstring."""

    def __init__(
        self,
        kube_binaries: kube.KubeBinaries,
        binaries: NodeBinaries,
        run_dir: Path,
        *,
        images: Sequence[Path] = (),
        journal: HostJournal | None = None,
    ) -> None:
        self.kube_binaries = kube_binaries
        self.binaries = binaries
        self.run_dir = run_dir.resolve()
        self.images = tuple(images)
        self.journal = journal or HostJournal()
        self.api = kube.KubeBed(
            kube_binaries,
            self.run_dir / "api",
            node=kube.NodeControlPlane(address=NODE_IP, service_cidr=SERVICE_CIDR, users=USERS),
        )

    @property
    def containerd_socket(self) -> Path:
        return self.run_dir / "containerd" / "containerd.sock"

    @property
    def logs(self) -> Path:
        return self.run_dir / "logs"

    @property
    def pod_logs(self) -> Path:
        """kubelet's container logs: ``<namespace>_<pod>_<uid>/<container>/<restart>.log``."""
        return self.run_dir / "pod-logs"

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Set up the host, start every component, return once the node is Ready and DNS answers.

        Leftovers of a crashed node are cleaned first; a node that still runs is refused. On failure
        everything done so far is undone and :class:`BedError` names the component and its log.
        """
        if os.geteuid() != 0:
            raise BedError("the node bed needs root (containerd, kubelet, a bridge, iptables)")
        running = self.journal.live_processes()
        if running:
            raise BedError(
                f"a node bed is already running on this machine ({', '.join(running)}); "
                "stop it first (hack/node/down.sh)"
            )
        self.journal.undo()
        self.logs.mkdir(parents=True, exist_ok=True)
        try:
            self._set_up_host()
            self._start_api()
            self._start_containerd()
            for image in (self.binaries.pause_image, *self.images):
                self._ctr("images", "import", str(image), timeout_s=600.0)
            self.journal.own_cgroup(CGROUP_ROOT)
            self._make_cgroup_root()
            self._start_kubelet()
            self._start_control_loops()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> list[str]:
        """Undo everything the node did on this machine (idempotent); return what was undone."""
        undone = self.journal.undo()
        kube.STATE.remove(self.api.run_dir)
        return undone

    def load_image(self, archive: Path) -> None:
        """Import an image archive into the running node's containerd (pods find it without a pull)."""
        self._ctr("images", "import", str(archive), timeout_s=600.0)

    def stop_apiserver(self) -> None:
        """Kill the node's kube-apiserver alone (an outage): etcd, kubelet and the pods go on running."""
        self.api.stop_apiserver()

    def start_apiserver(self) -> None:
        """Bring the kube-apiserver back on the same address; the new process is journaled like the
        first, so ``stop`` (or ``hack/node/down.sh`` after a crash) stops it too."""
        try:
            self.api.start_apiserver()
        finally:
            for name, pid in self.api.pids().items():
                self.journal.own_process(name, pid, str(self.api.run_dir))

    def __enter__(self) -> NodeBed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients -----------------------------------------------------------------------------------

    def kubectl(
        self, *args: str, user: str = kube.ADMIN, stdin: str | None = None, timeout_s: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        return self.api.kubectl(*args, user=user, stdin=stdin, timeout_s=timeout_s)

    def helm(self, *args: str, timeout_s: float = 300.0) -> subprocess.CompletedProcess[str]:
        return self.api.helm(*args, timeout_s=timeout_s)

    # -- internals ---------------------------------------------------------------------------------

    def _set_up_host(self) -> None:
        journal = self.journal
        journal.remember_sysctls(TOUCHED_SYSCTLS)
        for path in FIXED_PATHS:
            journal.own_path(path)
        # No `dummy` module on this kernel: the node's address lives on the pods' bridge.
        journal.add_bridge(BRIDGE, f"{NODE_IP}/24")
        # Whatever pods send is for this machine: nothing leaves through another interface.
        journal.add_iptables_rule("filter", "FORWARD", ["-s", POD_CIDR, "!", "-o", BRIDGE, "-j", "DROP"])
        journal.own_kube_chains(cleanup=[str(self.binaries.kube_proxy), "--cleanup"])
        journal.own_mounts(self.run_dir)

    def _start_api(self) -> None:
        try:
            self.api.start()
        finally:
            for name, pid in self.api.pids().items():
                self.journal.own_process(name, pid, str(self.api.run_dir))
        self._apply_coredns_rbac()

    def _start(self, name: str, argv: list[str], marker: str | None = None) -> ManagedProcess:
        process = ManagedProcess(name, argv, self.logs / f"{name}.log")
        self.journal.own_process(name, process.pid, marker or str(self.run_dir))
        return process

    def _containerd_config(self) -> Path:
        base = self.run_dir / "containerd"
        cri = {
            # The pause image built here: a sandbox image is never pulled.
            "sandbox_image": self._image_name(self.binaries.pause_image),
            # The machine withholds CAP_SYS_RESOURCE: without this every pod fails with
            # "can't get final child's PID from pipe".
            "restrict_oom_score_adj": True,
            # No AppArmor on this kernel.
            "disable_apparmor": True,
            "containerd": {
                "snapshotter": "overlayfs",
                "default_runtime_name": "runc",
                "runtimes": {
                    "runc": {
                        "runtime_type": "io.containerd.runc.v2",
                        # cgroupfs, as kubelet: no systemd here.
                        "options": {"SystemdCgroup": False},
                    }
                },
            },
            "cni": {"bin_dir": str(CNI_BIN_DIR), "conf_dir": str(self._cni_dir())},
        }
        lines = [
            "version = 2",
            f'root = "{base / "root"}"',
            f'state = "{base / "state"}"',
            'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",'
            ' "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]',
            "[grpc]",
            f'address = "{self.containerd_socket}"',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'path = "{base / "opt"}"',
            *_toml_tables('plugins."io.containerd.grpc.v1.cri"', cri),
        ]
        path = base / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        return path

    def _cni_dir(self) -> Path:
        directory = self.run_dir / "cni"
        _write_json(
            directory / "10-kbnode.conflist",
            {
                "cniVersion": "1.0.0",
                "name": "kbnode",
                "plugins": [
                    {
                        "type": "bridge",
                        "bridge": BRIDGE,
                        "isGateway": True,
                        # No masquerade: pods talk to this machine only.
                        "ipMasq": False,
                        "hairpinMode": True,
                        "ipam": {
                            "type": "host-local",
                            "dataDir": str(self.run_dir / "cni-ipam"),
                            "ranges": [
                                [{"subnet": POD_SUBNET, "rangeStart": "10.244.0.10", "gateway": NODE_IP}]
                            ],
                            "routes": [{"dst": "0.0.0.0/0"}],
                        },
                    },
                    {"type": "loopback"},
                ],
            },
        )
        return directory

    def _start_containerd(self) -> None:
        config = self._containerd_config()
        # Shims detach from containerd; they name its socket in their command line.
        self.journal.own_processes_with("containerd shims", str(self.containerd_socket))
        containerd = self._start("containerd", ["containerd", "--config", str(config)])

        def serving() -> bool:
            containerd.ensure_running()
            return self._ctr("version", check=False).returncode == 0

        wait_until(serving, timeout_s=START_TIMEOUT_S, what=f"containerd (see {containerd.log_path})")

    def _ctr(
        self, *args: str, check: bool = True, timeout_s: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        argv = ["ctr", "--address", str(self.containerd_socket), "--namespace", "k8s.io", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        if check and done.returncode != 0:
            raise BedError(f"ctr {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()}")
        return done

    @staticmethod
    def _image_name(archive: Path) -> str:
        with subprocess.Popen(["tar", "-xOf", str(archive), "index.json"], stdout=subprocess.PIPE) as tar:
            assert tar.stdout is not None
            index = json.load(tar.stdout)
        name: str = index["manifests"][0]["annotations"]["io.containerd.image.name"]
        return name

    def _make_cgroup_root(self) -> None:
        """kubelet's cgroupRoot in every cgroup v1 hierarchy (cgroupfs driver: it must exist)."""
        for hierarchy in sorted(Path("/sys/fs/cgroup").iterdir()):
            if not hierarchy.is_dir() or hierarchy.is_symlink():
                continue
            cgroup = hierarchy / CGROUP_ROOT
            cgroup.mkdir(exist_ok=True)
            # A new cpuset cgroup starts with no cpus and no memory nodes: inherit the parent's.
            for name in ("cpuset.cpus", "cpuset.mems"):
                if (cgroup / name).exists():
                    (cgroup / name).write_text((hierarchy / name).read_text())

    def _kubelet_config(self) -> Path:
        return _write_json(
            self.run_dir / "kubelet" / "config.json",
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                # This machine has cgroup v1 only, which kubelet 1.35 refuses unless told.
                "failCgroupV1": False,
                # containerd 1.6 lacks the CRI RuntimeConfig call that would tell the driver.
                "cgroupDriver": "cgroupfs",
                "cgroupRoot": f"/{CGROUP_ROOT}",
                "containerRuntimeEndpoint": f"unix://{self.containerd_socket}",
                "address": NODE_IP,
                "port": KUBELET_PORT,
                "healthzBindAddress": NODE_IP,
                "healthzPort": 10248,
                "readOnlyPort": 0,
                # The apiserver calls kubelet (logs, exec) without a client certificate: only on the
                # node's bridge address, for this bed.
                "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
                "authorization": {"mode": "AlwaysAllow"},
                "clusterDNS": [NODE_IP],
                "clusterDomain": CLUSTER_DOMAIN,
                # Pods resolve cluster names only: no host resolver, no search domains from the host.
                "resolvConf": "",
                "podLogsDir": str(self.pod_logs),
                "failSwapOn": False,
                "maxPods": 30,
                # The machine's disk is shared and mostly someone else's: never evict for it.
                "evictionHard": {
                    "memory.available": "100Mi",
                    "nodefs.available": "1%",
                    "imagefs.available": "1%",
                },
                "imageGCHighThresholdPercent": 100,
                "imageGCLowThresholdPercent": 99,
                "serializeImagePulls": False,
            },
        )

    def _start_kubelet(self) -> None:
        kubelet = self._start(
            "kubelet",
            [
                str(self.binaries.kubelet),
                f"--config={self._kubelet_config()}",
                f"--kubeconfig={self.api.kubeconfig_of(KUBELET_USER)}",
                f"--root-dir={self.run_dir / 'kubelet'}",
                f"--node-ip={NODE_IP}",
                f"--hostname-override={NODE_NAME}",
                "--v=1",
            ],
        )

        def ready() -> bool:
            kubelet.ensure_running()
            done = self.kubectl("get", "node", NODE_NAME, "-o", "json")
            if done.returncode != 0:
                return False
            conditions = json.loads(done.stdout).get("status", {}).get("conditions", [])
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        wait_until(ready, timeout_s=START_TIMEOUT_S, what=f"node {NODE_NAME} Ready (see {kubelet.log_path})")

    def _proxy_config(self) -> Path:
        return _write_json(
            self.run_dir / "kube-proxy" / "config.json",
            {
                "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                "kind": "KubeProxyConfiguration",
                "clientConnection": {"kubeconfig": str(self.api.kubeconfig_of(PROXY_USER))},
                "mode": "iptables",
                "hostnameOverride": NODE_NAME,
                "clusterCIDR": POD_CIDR,
                "bindAddress": NODE_IP,
                "healthzBindAddress": f"{NODE_IP}:10256",
                "metricsBindAddress": f"{NODE_IP}:10249",
                "nodePortAddresses": [f"{NODE_IP}/32"],
                # Pod-to-Service-to-pod replies on one bridge must come back through the host.
                "iptables": {"masqueradeAll": True, "localhostNodePorts": False},
                # Zero: leave the machine's conntrack limits and timeouts as they are.
                "conntrack": {
                    "maxPerCore": 0,
                    "min": 0,
                    "tcpEstablishedTimeout": "0s",
                    "tcpCloseWaitTimeout": "0s",
                },
            },
        )

    def _start_control_loops(self) -> None:
        api = self.api
        pki = api.run_dir / "pki"
        processes = [
            self._start(
                "kube-scheduler",
                [
                    str(self.binaries.kube_scheduler),
                    f"--kubeconfig={api.kubeconfig_of(SCHEDULER_USER)}",
                    "--leader-elect=false",
                    "--secure-port=0",
                ],
            ),
            self._start(
                "kube-controller-manager",
                [
                    str(self.binaries.kube_controller_manager),
                    f"--kubeconfig={api.kubeconfig_of(CONTROLLER_MANAGER_USER)}",
                    "--leader-elect=false",
                    "--secure-port=0",
                    # Each controller acts as its own ServiceAccount, with the bootstrap roles.
                    "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={pki / 'service-account.key'}",
                    # Published as every namespace's kube-root-ca.crt: how pods trust the apiserver.
                    f"--root-ca-file={api.ca_file}",
                    f"--cluster-cidr={POD_CIDR}",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                ],
            ),
            # kube-proxy dies when its configuration is rewritten while it runs: written once, above.
            self._start("kube-proxy", [str(self.binaries.kube_proxy), f"--config={self._proxy_config()}"]),
            self._start("coredns", [str(self.binaries.coredns), "-conf", str(self._corefile())]),
        ]

        def settled() -> bool:
            for process in processes:
                process.ensure_running()
            has_account = self.kubectl("get", "serviceaccount", "default", "-n", "default").returncode == 0
            return has_account and answers_ok(f"http://{NODE_IP}:8181/ready")

        wait_until(
            settled,
            timeout_s=START_TIMEOUT_S,
            what=f"the default ServiceAccount and CoreDNS (see {self.logs})",
        )

    def _corefile(self) -> Path:
        path = self.run_dir / "coredns" / "Corefile"
        path.parent.mkdir(parents=True, exist_ok=True)
        # cluster.local only and no `forward`: a name outside the cluster gets REFUSED, never a query
        # to a resolver outside this machine.
        path.write_text(
            f"{CLUSTER_DOMAIN}:53 {{\n"
            f"    bind {NODE_IP}\n"
            "    errors\n"
            f"    ready {NODE_IP}:8181\n"
            f"    kubernetes {CLUSTER_DOMAIN} {{\n"
            f"        kubeconfig {self.api.kubeconfig_of(COREDNS_USER)} {COREDNS_USER}\n"
            "    }\n"
            "    cache 30\n"
            "}\n"
        )
        return path

    def _apply_coredns_rbac(self) -> None:
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": COREDNS_USER},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["services", "endpoints", "namespaces", "pods"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        }
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": COREDNS_USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": COREDNS_USER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": COREDNS_USER}],
        }
        listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": [role, binding]})
        done = self.kubectl("apply", "-f", "-", stdin=listing)
        if done.returncode != 0:
            raise BedError(f"applying CoreDNS's RBAC failed: {done.stderr.strip()}")


def _toml_tables(prefix: str, table: dict[str, Any]) -> list[str]:
    """A nested dict as TOML tables (strings, booleans and nested tables are all containerd needs)."""
    lines = [f"[{prefix}]"]
    nested = []
    for key, value in table.items():
        if isinstance(value, dict):
            nested.append((key, value))
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        else:
            lines.append(f'{key} = "{value}"')
    for key, value in nested:
        lines += _toml_tables(f"{prefix}.{key}", value)
    return lines
