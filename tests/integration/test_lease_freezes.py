"""The execution lease under real freezes: three processes contend for one pool's Lease on the real
apiserver while the holder is stopped with SIGSTOP again and again (for less and more than the lease's
duration, at whatever point of a request it happens to be). Each process logs every instant its check
passed; merged in time, one holding must never interleave with another's: two processes never both
believe they own the execution."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.lease import lease_name
from kafka_balancer_dev.localbed import kube

NAMESPACE = "kb-test-lease-freezes"
POOL, UID = "main", "0b1c9a52-5a53-4c4e-9d1c-000000000019"
DURATION_S = 4
RUN_S = 75.0
ROOT = Path(__file__).resolve().parents[2]


def _worker(kube_bed: kube.KubeBed, identity: str, seed: int, out: Path) -> list[str]:
    module = [sys.executable, "-m", "tests.support.lease_worker"]
    lease = [str(kube_bed.kubeconfig), NAMESPACE, POOL, UID, identity, str(DURATION_S)]
    return [*module, *lease, str(RUN_S), str(seed), str(out)]


def _holdings(out: Path) -> list[tuple[float, str]]:
    """(wall time, identity#acquisition) of every passed check, in time order."""
    rows = []
    for line in out.read_text(encoding="utf-8").splitlines():
        at, identity, acquisition = line.split()
        rows.append((float(at), f"{identity}#{acquisition}"))
    return sorted(rows)


def test_three_processes_frozen_at_random_never_both_own_the_lease(
    kube_bed: kube.KubeBed, tmp_path: Path
) -> None:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    out = tmp_path / "checks.log"
    rng = random.Random(19)
    workers = {
        identity: subprocess.Popen(_worker(kube_bed, identity, seed, out), cwd=ROOT)
        for seed, identity in enumerate(("p1", "p2", "p3"))
    }
    client = Kube(str(kube_bed.kubeconfig))
    freezes: list[tuple[str, float]] = []
    try:
        deadline = time.monotonic() + RUN_S - 5
        while time.monotonic() < deadline:
            record = client.read_lease(NAMESPACE, lease_name(POOL))
            holder = None if record is None else record.holder
            if holder in workers:
                # From a blink to well past the lease: short freezes must be ridden out, long ones lose it.
                stall = rng.uniform(0.2, 2.5 * DURATION_S)
                os.kill(workers[holder].pid, signal.SIGSTOP)
                try:
                    time.sleep(stall)  # the freeze is this test's input, not a wait for something
                finally:
                    os.kill(workers[holder].pid, signal.SIGCONT)
                freezes.append((holder, stall))
            time.sleep(rng.uniform(0.1, 1.5))
        for worker in workers.values():
            assert worker.wait(timeout=60) == 0
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                os.kill(worker.pid, signal.SIGCONT)
                worker.kill()
                worker.wait(timeout=30)
        kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")

    holdings = _holdings(out)
    # Each holding (a process's one acquisition) is one unbroken run in time: no other holding's check
    # falls between two of its checks.
    runs = [holdings[0][1]]
    for _, holding in holdings[1:]:
        if holding != runs[-1]:
            runs.append(holding)
    interleaved = sorted({h for h in runs if runs.count(h) > 1})
    long_freezes = sum(1 for _, stall in freezes if stall > DURATION_S)
    print(
        f"\n{len(holdings)} passed checks, {len(runs)} holdings by {len({r.split('#')[0] for r in runs})} "
        f"processes, {len(freezes)} freezes of the holder ({long_freezes} longer than the lease)"
    )
    assert interleaved == [], f"holdings that another one interrupted: {interleaved}"
    assert long_freezes >= 3 and len(runs) >= 6, (freezes, runs)  # takeovers really happened
