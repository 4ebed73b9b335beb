"""The machine-wide changes a node bed makes, journaled before each is made and undone exactly.

A node is not confined to its run directory: it needs a bridge, iptables rules, sysctls that kubelet
sets, cgroups, fixed paths that kubelet and containerd write to (``/var/lib/kubelet``, ``/run/netns``, …)
and processes that outlive their parent (containerd's shims). The machine is shared, so ``down`` must
undo exactly what ``up`` did and nothing else: every change is appended to a journal file at a fixed
path *before* it is made, and undoing walks the journal backwards, tolerating changes that never
happened (a crash between the record and the change) or were already undone (a second ``down``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.procs import pid_alive, pid_matches, stop_pid

JOURNAL = Path("/var/lib/kafka-balancer-node/journal.json")
# Rules we add carry this comment, so a reader of `iptables -S` sees whose they are.
RULE_COMMENT = "kafka-balancer node bed"
STOP_GRACE_S = 15.0


def _run(argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise BedError(f"{' '.join(argv)} failed (exit {done.returncode}): {done.stderr.strip()}")
    return done


def _sysctl_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_sysctl(name: str) -> str | None:
    try:
        return _sysctl_path(name).read_text().strip()
    except OSError:
        return None


def _mounts_under(root: Path) -> list[Path]:
    """Mount points at or below ``root``, deepest first."""
    prefix = str(root).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with spaces and the like octal-escaped.
        point = line.split()[4].encode().decode("unicode_escape")
        if point == str(root) or point.startswith(prefix):
            points.append(Path(point))
    return sorted(points, key=lambda p: len(p.parts), reverse=True)


def unmount_under(root: Path) -> None:
    for point in _mounts_under(root):
        # Lazy: a mount still busy (a dying process's cwd) is detached now and freed when released.
        _run(["umount", "--lazy", str(point)], check=False)


def _pids_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_matches(int(entry.name), marker):
            pids.append(int(entry.name))
    return pids


def _cgroup_dirs(name: str) -> list[Path]:
    """``/sys/fs/cgroup/<hierarchy>/<name>`` in every cgroup v1 hierarchy where it exists."""
    root = Path("/sys/fs/cgroup")
    return [
        h / name for h in sorted(root.iterdir()) if h.is_dir() and not h.is_symlink() and (h / name).is_dir()
    ]


def _kill_cgroup_processes(name: str, *, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        pids: set[int] = set()
        for top in _cgroup_dirs(name):
            for procs in top.rglob("cgroup.procs"):
                try:
                    pids.update(int(p) for p in procs.read_text().split())
                except OSError:
                    continue
        alive = [p for p in pids if pid_alive(p)]
        if not alive:
            return
        if time.monotonic() > deadline:
            raise BedError(f"processes {sorted(alive)} in cgroup {name} survived SIGKILL")
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)


def _remove_cgroup(name: str, *, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        _kill_cgroup_processes(name)
        try:
            for top in _cgroup_dirs(name):
                # A cgroup is removed with rmdir, children before parents; its control files go with it.
                children = (d for d in top.rglob("*") if d.is_dir())
                for directory in sorted(children, key=lambda d: -len(d.parts)):
                    directory.rmdir()
                top.rmdir()
            return
        except OSError as err:
            # EBUSY for a moment after its last process died: the kernel frees a cgroup (v1 blkio was
            # seen) only once that process has fully exited. A node bed's undo then failed and left
            # etcd, the apiserver and the bridge behind.
            if err.errno != errno.EBUSY or time.monotonic() > deadline:
                raise BedError(f"cannot remove cgroup {name}: {err}") from err
        time.sleep(0.2)


def _iptables_chains(table: str) -> set[str]:
    listing = _run(["iptables", "-w", "-t", table, "-S"], check=False).stdout
    return {line.split()[1] for line in listing.splitlines() if line.startswith("-N ")}


def _drop_chains(table: str, chains: Iterable[str]) -> None:
    """Remove the jumps to ``chains`` from every chain of ``table``, then flush and delete them."""
    doomed = set(chains)
    if not doomed:
        return
    for line in _run(["iptables", "-w", "-t", table, "-S"], check=False).stdout.splitlines():
        words = line.split()
        if words[:1] == ["-A"] and "-j" in words and words[words.index("-j") + 1] in doomed:
            _run(["iptables", "-w", "-t", table, "-D", *words[1:]], check=False)
    for chain in doomed:
        _run(["iptables", "-w", "-t", table, "-F", chain], check=False)
    for chain in doomed:
        _run(["iptables", "-w", "-t", table, "-X", chain], check=False)


IPTABLES_TABLES = ("filter", "nat", "mangle")


def kube_chains() -> dict[str, list[str]]:
    """The ``KUBE-*`` chains of each table now (kubelet's and kube-proxy's naming)."""
    return {t: sorted(c for c in _iptables_chains(t) if c.startswith("KUBE-")) for t in IPTABLES_TABLES}


class HostJournal:
    """The journal of one node bed's machine-wide changes; see the module docstring."""

    def __init__(self, path: Path = JOURNAL) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        try:
            entries: list[dict[str, Any]] = json.loads(self.path.read_text())["entries"]
        except (OSError, ValueError, KeyError) as err:
            raise BedError(f"unreadable node journal {self.path}: {err}") from err
        return entries

    def record(self, kind: str, **fields: Any) -> None:
        """Append a change about to be made (written through, so a crash right after still knows)."""
        self._write([*self.entries(), {"kind": kind, **fields}])

    def _write(self, entries: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps({"entries": entries}, indent=2) + "\n")
        partial.replace(self.path)

    def live_processes(self) -> list[str]:
        """Names of recorded processes that still run (a node is up, or a crashed one left them)."""
        return [
            e["name"] for e in self.entries() if e["kind"] == "process" and pid_matches(e["pid"], e["marker"])
        ]

    def undo(self) -> list[str]:
        """Undo every recorded change, newest first; return what was undone, one phrase each."""
        done = []
        kept: list[dict[str, Any]] = []
        reasons: list[str] = []
        for entry in reversed(self.entries()):
            # One change that will not go (a busy cgroup) must not leave every older one in place.
            try:
                phrase = _UNDO[entry["kind"]](entry)
            except (BedError, OSError, subprocess.SubprocessError) as err:
                kept.insert(0, entry)
                reasons.append(f"{entry['kind']} {entry.get('name', '')}: {err}")
                continue
            if phrase:
                done.append(phrase)
        if kept:
            self._write(kept)
            raise BedError(f"could not undo {len(kept)} change(s), kept in {self.path}: {'; '.join(reasons)}")
        self.path.unlink(missing_ok=True)
        if self.path.parent.exists() and not any(self.path.parent.iterdir()):
            self.path.parent.rmdir()
        return done

    # -- changes -------------------------------------------------------------------------------------

    def set_sysctl(self, name: str, value: str) -> None:
        old = read_sysctl(name)
        if old is None or old == value:
            return
        self.record("sysctl", name=name, value=old)
        _sysctl_path(name).write_text(value)

    def remember_sysctls(self, names: Iterable[str]) -> None:
        """Record the current values of sysctls another program (kubelet) may change."""
        for name in names:
            value = read_sysctl(name)
            if value is not None:
                self.record("sysctl", name=name, value=value)

    def add_bridge(self, name: str, address_cidr: str) -> None:
        self.record("bridge", name=name)
        _run(["ip", "link", "add", name, "type", "bridge"])
        _run(["ip", "addr", "add", address_cidr, "dev", name])
        _run(["ip", "link", "set", name, "up"])

    def add_iptables_rule(self, table: str, chain: str, rule: list[str]) -> None:
        spec = [chain, *rule, "-m", "comment", "--comment", RULE_COMMENT]
        self.record("iptables-rule", table=table, spec=spec)
        _run(["iptables", "-w", "-t", table, "-I", *spec])

    def own_kube_chains(self, cleanup: list[str]) -> None:
        """``KUBE-*`` chains that appear from now on are ours: ``cleanup`` (kube-proxy --cleanup)
        runs at undo, then whatever is left of them is deleted."""
        self.record("kube-chains", before=kube_chains(), cleanup=cleanup)

    def own_path(self, path: Path) -> None:
        """A fixed path the node's programs create (kubelet's, containerd's): removed at undo, with
        anything mounted below it, if it did not exist before."""
        if path.exists() or path.is_symlink():
            return
        self.record("path", path=str(path))

    def own_mounts(self, path: Path) -> None:
        """Unmount whatever gets mounted below ``path`` (a run directory kept for its logs)."""
        self.record("mounts", path=str(path))

    def own_cgroup(self, name: str) -> None:
        """A cgroup created below every hierarchy's root; its processes are killed and it is removed."""
        self.record("cgroup", name=name)

    def own_process(self, name: str, pid: int, marker: str) -> None:
        self.record("process", name=name, pid=pid, marker=marker)

    def own_processes_with(self, name: str, marker: str) -> None:
        """Processes that detach from their parent (containerd's shims), known by ``marker`` in their
        command line (a path only this bed uses)."""
        self.record("processes-with", name=name, marker=marker)


def _undo_sysctl(entry: dict[str, Any]) -> str | None:
    if read_sysctl(entry["name"]) in (None, entry["value"]):
        return None
    _sysctl_path(entry["name"]).write_text(entry["value"])
    return f"sysctl {entry['name']}={entry['value']}"


def _undo_bridge(entry: dict[str, Any]) -> str | None:
    if _run(["ip", "link", "show", entry["name"]], check=False).returncode != 0:
        return None
    _run(["ip", "link", "delete", entry["name"]])
    return f"bridge {entry['name']}"


def _undo_iptables_rule(entry: dict[str, Any]) -> str | None:
    check = _run(["iptables", "-w", "-t", entry["table"], "-C", *entry["spec"]], check=False)
    if check.returncode != 0:
        return None
    _run(["iptables", "-w", "-t", entry["table"], "-D", *entry["spec"]])
    return f"iptables rule {' '.join(entry['spec'])}"


def _undo_kube_chains(entry: dict[str, Any]) -> str | None:
    if shutil.which("iptables") is None:
        return None
    if entry["cleanup"] and Path(entry["cleanup"][0]).exists():
        _run(entry["cleanup"], check=False)
    removed = []
    now = kube_chains()
    for table in IPTABLES_TABLES:
        ours = set(now[table]) - set(entry["before"].get(table, []))
        _drop_chains(table, ours)
        removed += sorted(ours)
    return f"iptables chains {', '.join(removed)}" if removed else None


def _undo_path(entry: dict[str, Any]) -> str | None:
    path = Path(entry["path"])
    if not path.exists() and not path.is_symlink():
        return None
    unmount_under(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    return f"path {path}"


def _undo_mounts(entry: dict[str, Any]) -> str | None:
    mounts = _mounts_under(Path(entry["path"]))
    unmount_under(Path(entry["path"]))
    return f"{len(mounts)} mounts under {entry['path']}" if mounts else None


def _undo_cgroup(entry: dict[str, Any]) -> str | None:
    if not _cgroup_dirs(entry["name"]):
        return None
    _remove_cgroup(entry["name"])
    return f"cgroup {entry['name']}"


def _undo_process(entry: dict[str, Any]) -> str | None:
    return entry["name"] if stop_pid(entry["pid"], entry["marker"], STOP_GRACE_S) else None


def _undo_processes_with(entry: dict[str, Any]) -> str | None:
    pids = _pids_with(entry["marker"])
    for pid in pids:
        stop_pid(pid, entry["marker"], STOP_GRACE_S)
    return f"{len(pids)} {entry['name']}" if pids else None


_UNDO = {
    "sysctl": _undo_sysctl,
    "bridge": _undo_bridge,
    "iptables-rule": _undo_iptables_rule,
    "kube-chains": _undo_kube_chains,
    "path": _undo_path,
    "mounts": _undo_mounts,
    "cgroup": _undo_cgroup,
    "process": _undo_process,
    "processes-with": _undo_processes_with,
}
