"""The operator as a real process (``kafka-balancer run``) against the real apiserver and real Kafka."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.localbed import kube
from kafka_balancer.localbed.ports import free_ports

CHART_CRDS = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer" / "crds"
PEERING = "kafka-balancer-e2e"
START_TIMEOUT_S = 90.0


@dataclass
class OperatorProcess:
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def wait_for(
    check: Callable[[], Any], timeout_s: float, what: str, log: OperatorProcess | None = None
) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` (and the operator's log)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            tail = f"\noperator log (tail):\n{log.tail()}" if log else ""
            pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}{tail}", pytrace=False)
        time.sleep(1.0)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) == 200
    except OSError:
        return False


@pytest.fixture(scope="session")
def operator_crds(kube_bed: kube.KubeBed) -> None:
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(CHART_CRDS))
    assert applied.returncode == 0, applied.stderr
    for crd in (
        "brokerpools.kafkabalancer.io",
        "balancergoals.kafkabalancer.io",
        "clusterkopfpeerings.kopf.dev",
    ):
        kube.wait_established(kube_bed, crd)
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": PEERING}}
    created = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(peering))
    assert created.returncode == 0, created.stderr


@pytest.fixture(scope="session")
def operator(
    kube_bed: kube.KubeBed, operator_crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    run_dir = tmp_path_factory.mktemp("operator")
    (port,) = free_ports(1)
    liveness = f"http://127.0.0.1:{port}/healthz"
    log = run_dir / "operator.log"
    argv = [
        str(Path(sys.executable).with_name("kafka-balancer")),
        "run",
        "--kubeconfig",
        str(kube_bed.kubeconfig),
        "--peering",
        PEERING,
        "--state-dir",
        str(run_dir / "state"),
        "--liveness",
        liveness,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ})
    running = OperatorProcess(process, log)
    try:
        wait_for(
            lambda: process.poll() is not None or _healthy(liveness),
            START_TIMEOUT_S,
            "the operator's liveness endpoint",
            running,
        )
        assert process.poll() is None, f"the operator exited with {process.returncode}:\n{running.tail()}"
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture
def namespace(kube_bed: kube.KubeBed, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "e2e-" + request.node.name.replace("_", "-").lower()[:40].rstrip("-")
    created = kube_bed.kubectl("create", "namespace", name)
    assert created.returncode == 0, created.stderr
    yield name
    # The pools first, while the operator runs: it stops their daemons (the bed has no namespace
    # controller, so deleting the namespace alone would leave them reconciling).
    kube_bed.kubectl("delete", "brokerpools,balancergoals", "--all", "-n", name, "--timeout=60s")
    kube_bed.kubectl("delete", "namespace", name, "--wait=false")
