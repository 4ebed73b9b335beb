"""The operator's log as JSON lines (``--log-format json``), as a log pipeline reads it: every line one
JSON object with its message, severity and time, and the lines about a pool naming it as an object."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.chart import apply_crds

from kafka_balancer import __version__
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.ports import answers_ok, free_ports

NAMESPACE = "kb-test-operator-logs"
DEADLINE_S = 90.0
POOL = ("get", "brokerpool", "main", "-n", NAMESPACE)
PEERING = "kb-test-operator-logs"


def lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_the_operator_logs_one_json_object_per_line(kube_bed: kube.KubeBed, tmp_path: Path) -> None:
    apply_crds(kube_bed)
    for crd in ("brokerpools.kafkabalancer.io", "kopfpeerings.kopf.dev"):
        kube.wait_established(kube_bed, crd)
    assert kube_bed.kubectl("create", "namespace", NAMESPACE).returncode == 0
    # Serving one namespace, kopf watches its pools once its peering object there exists (the chart
    # makes it): refusing to run unpeered, it would pause the watch.
    peering = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": PEERING}}
    made = kube_bed.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(peering))
    assert made.returncode == 0, made.stderr
    (port,) = free_ports(1)
    liveness = f"http://127.0.0.1:{port}/healthz"
    log = tmp_path / "operator.log"
    argv = [
        str(Path(sys.executable).with_name("kafka-balancer")), "run",
        "--kubeconfig", str(kube_bed.kubeconfig), "--peering", PEERING, "--namespace", NAMESPACE,
        "--state-dir", str(tmp_path / "state"),
        "--liveness", liveness, "--log-format", "json",
    ]  # fmt: skip
    with log.open("wb") as out:
        operator = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        pool = {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BrokerPool",
            "metadata": {"name": "main", "namespace": NAMESPACE},
            "spec": {
                "mode": "DryRun",
                "kafka": {"bootstrapServers": "127.0.0.1:1"},
                "capacity": {"disk": "1Ti", "networkIn": "1M", "networkOut": "1M", "cpu": 1},
            },
        }
        created = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(pool))
        assert created.returncode == 0, created.stderr
        deadline = time.monotonic() + DEADLINE_S
        while not kube_bed.kubectl(*POOL, "-o", "jsonpath={.metadata.finalizers}").stdout.strip():
            assert operator.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, f"the operator took no finalizer within {DEADLINE_S:.0f}s"
            time.sleep(0.5)
        # Its finalizer's handler says it is done, about the pool (a pool that never executed
        # is let go without reaching Kafka).
        deleted = kube_bed.kubectl("delete", "brokerpool", "main", "-n", NAMESPACE, "--wait=false")
        assert deleted.returncode == 0, deleted.stderr
        about_the_pool: list[dict[str, Any]] = []
        while not about_the_pool:
            assert operator.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, f"no line about the pool within {DEADLINE_S:.0f}s"
            about_the_pool = [line for line in lines(log) if (line.get("object") or {}).get("name") == "main"]
            time.sleep(0.5)
        assert answers_ok(liveness)
    finally:
        operator.terminate()
        operator.wait(timeout=60)
        kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")

    every = lines(log)  # a line that is not one JSON object fails here
    assert every[0]["message"] == f"kafka-balancer {__version__} starting"
    assert all({"message", "severity", "timestamp"} <= line.keys() for line in every)
    assert about_the_pool[0]["object"] == {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BrokerPool",
        "name": "main",
        "uid": about_the_pool[0]["object"]["uid"],
        "namespace": NAMESPACE,
    }
