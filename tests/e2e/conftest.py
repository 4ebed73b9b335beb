"""The operator as a real process (``kafka-balancer run``) against the real apiserver and real Kafka."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.ports import answers_ok, free_ports
from kafka_balancer_dev.localbed.tls_material import make_https_material
from tests.support.chart import apply_crds

PEERING = "kafka-balancer-e2e"
WEBHOOK_CONFIGURATION = "kafka-balancer-e2e-scale-down"
START_TIMEOUT_S = 90.0


class Logged(Protocol):
    """Whatever can show the tail of an operator's log when a wait times out (a process, a pod)."""

    def tail(self, lines: int = 40) -> str: ...


class OperatorProcess:
    """One operator process (``kafka-balancer run``); ``kill`` and ``start`` again play a crash and
    a restart of the same pod (same state directory, same peering)."""

    def __init__(
        self, argv: list[str], log: Path, liveness: str, metrics: str, env: dict[str, str] | None = None
    ) -> None:
        self.argv = argv
        self.log = log
        self.liveness = liveness
        self.metrics = metrics
        self.env = env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **self.env}
            )
        process = self.process
        wait_for(
            lambda: process.poll() is not None or answers_ok(self.liveness),
            START_TIMEOUT_S,
            "the operator's liveness endpoint",
            self,
        )
        assert process.poll() is None, f"the operator exited with {process.returncode}:\n{self.tail()}"

    def kill(self) -> None:
        """SIGKILL: no handler runs, nothing is cleaned up (a crashed pod)."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def wait_for(check: Callable[[], Any], timeout_s: float, what: str, log: Logged | None = None) -> Any:
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


@pytest.fixture(scope="session")
def operator_crds(kube_bed: kube.KubeBed) -> None:
    apply_crds(kube_bed)
    for crd in (
        "brokerpools.kafkabalancer.io",
        "balancergoals.kafkabalancer.io",
        "clusterkopfpeerings.kopf.dev",
    ):
        kube.wait_established(kube_bed, crd)
    peering = {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": PEERING}}
    created = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(peering))
    assert created.returncode == 0, created.stderr


def operator_process(
    kube_bed: kube.KubeBed, run_dir: Path, env: dict[str, str] | None = None
) -> OperatorProcess:
    """An unstarted operator in the e2e peering, with its own state directory, log and liveness port
    (and ``env`` added to the environment)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    port, metrics_port = free_ports(2)
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
        f"http://127.0.0.1:{port}/healthz",
        "--metrics-port",
        str(metrics_port),
    ]
    return OperatorProcess(
        argv,
        run_dir / "operator.log",
        f"http://127.0.0.1:{port}/healthz",
        f"http://127.0.0.1:{metrics_port}/",
        env,
    )


@pytest.fixture(scope="session")
def scale_down_webhook(kube_bed: kube.KubeBed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scale-down webhook as the chart configures it, but served on 127.0.0.1 (the bed's apiserver
    runs on this machine): a throw-away CA's certificate, the ValidatingWebhookConfiguration matching
    nothing until the operator scopes it to the pools' StatefulSets. The operator's environment."""
    https = make_https_material(tmp_path_factory.mktemp("webhook") / "pki")
    certs = https.cert_pem.parent
    (certs / "tls.crt").write_bytes(https.cert_pem.read_bytes())
    (certs / "tls.key").write_bytes(https.key_pem.read_bytes())
    (port,) = free_ports(1)
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [
            {
                "name": "scale-down.kafkabalancer.io",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/scale-down",
                    "caBundle": base64.b64encode(https.ca_pem.read_bytes()).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["statefulsets", "statefulsets/scale"],
                    }
                ],
                "matchConditions": [{"name": "kafka-balancer-pools-stateful-sets", "expression": "false"}],
                "failurePolicy": "Fail",
                "sideEffects": "NoneOnDryRun",
                "timeoutSeconds": 30,
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    applied = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(configuration))
    assert applied.returncode == 0, applied.stderr
    return {
        "KAFKA_BALANCER_WEBHOOK_PORT": str(port),
        "KAFKA_BALANCER_WEBHOOK_ADDRESS": "127.0.0.1",
        "KAFKA_BALANCER_WEBHOOK_CERT_DIR": str(certs),
        "KAFKA_BALANCER_WEBHOOK_CONFIGURATION": WEBHOOK_CONFIGURATION,
    }


@pytest.fixture(scope="session")
def operator(
    kube_bed: kube.KubeBed,
    operator_crds: None,
    scale_down_webhook: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    running = operator_process(kube_bed, tmp_path_factory.mktemp("operator"), scale_down_webhook)
    try:
        running.start()
        yield running
    finally:
        running.stop()


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
