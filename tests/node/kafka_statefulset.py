"""Kafka as pods of StatefulSets on the node (``localbed.kafka_statefulset``): applied in a namespace of
its own, awaited until its brokers register, scaled, and deleted with its volumes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from kafka_balancer.kafka.client_log import with_client_log
from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kafka_statefulset as sts
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.procs import wait_until

# Brokers start in parallel, each a JVM, on two cores shared with the rest of the tier.
START_TIMEOUT_S = 300.0
SCALE_TIMEOUT_S = 180.0


class KafkaStatefulSet:
    """The controller and broker StatefulSets of ``spec`` on ``bed``; the brokers' volumes are
    directories under ``volumes``."""

    def __init__(self, bed: node.NodeBed, spec: sts.KafkaPods, volumes: Path) -> None:
        self.bed = bed
        self.spec = spec
        self.volumes = volumes

    @property
    def namespace(self) -> str:
        return self.spec.namespace

    def start(self) -> None:
        """Apply everything; return once every broker is registered with its rack."""
        self._kubectl("create", "namespace", self.namespace)
        for ordinal in range(self.spec.brokers):
            self._add_volume(ordinal)
        self._kubectl("apply", "-f", "-", stdin=_listing(sts.manifests(self.spec)))
        self._await_brokers(self.spec.brokers, START_TIMEOUT_S)

    def stop(self) -> None:
        """Delete the brokers, then the namespace (the controller, the claims) and the volumes, waiting
        for each: brokers that outlive their controller wait out their grace period to shut down."""
        self.bed.kubectl(
            "delete",
            "statefulset",
            sts.BROKERS,
            "-n",
            self.namespace,
            "--cascade=foreground",
            "--wait",
            "--timeout=120s",
            timeout_s=150.0,
        )
        self.bed.kubectl("delete", "namespace", self.namespace, "--wait", "--timeout=180s", timeout_s=200.0)
        self.bed.kubectl("delete", "pv", "-l", f"{sts.BED_LABEL}={self.namespace}", "--wait", timeout_s=120.0)
        shutil.rmtree(self.volumes, ignore_errors=True)

    @property
    def host_bootstrap_servers(self) -> str:
        """The bootstrap Service's HOST port, for clients on this machine: brokers answer with their
        pod IPs, which this machine routes to (it does not resolve the cluster's names)."""
        service = self._json("get", "service", sts.BOOTSTRAP)
        return f"{service['spec']['clusterIP']}:{sts.HOST_PORT}"

    @property
    def bootstrap_servers(self) -> str:
        """For tests/support/kafka_checks.py (its Cluster): this machine's bootstrap servers."""
        return self.host_bootstrap_servers

    @property
    def racks(self) -> dict[int, str | None]:
        """For tests/support/kafka_checks.py (its Cluster): the running brokers' racks."""
        return self.registered()

    def registered(self) -> dict[int, str | None]:
        """Broker id → rack of every registered, unfenced broker, as the Admin API reports them."""
        admin = AdminClient(
            with_client_log({"bootstrap.servers": self.host_bootstrap_servers, "socket.timeout.ms": 5000})
        )
        try:
            described = admin.describe_cluster(request_timeout=5).result(timeout=10)
        except Exception:  # the brokers are still starting, or one just left: ask again
            return {}
        return {n.id: n.rack for n in described.nodes}

    def scale(self, brokers: int, timeout_s: float = SCALE_TIMEOUT_S) -> None:
        """``kubectl scale`` the broker StatefulSet; return once exactly its brokers are registered and
        the pods scaled away are gone.

        A broker scaled away is fenced, not unregistered: it stays in the cluster's metadata but
        leaves what the Admin API lists. Its claim and volume stay, as a StatefulSet keeps them: scaled
        up again, the pod finds its log directory as it left it."""
        for ordinal in range(brokers):
            self._add_volume(ordinal)
        self._kubectl("scale", "statefulset", sts.BROKERS, f"--replicas={brokers}")
        self._await_brokers(brokers, timeout_s)

    def broker_pods(self) -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in self.spec.labels.items())
        pods: list[dict[str, Any]] = self._json("get", "pods", "-l", selector)["items"]
        return sorted(pods, key=lambda p: str(p["metadata"]["name"]))

    def run_tool(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess[str]:
        """One of Kafka's tools (main class and arguments) in broker pod ``kafka-0``."""
        return self.bed.kubectl(
            "exec", "-n", self.namespace, f"{sts.BROKERS}-0", "--", "kafka-run", *args, timeout_s=timeout_s
        )

    def _add_volume(self, ordinal: int) -> None:
        directory = self.volumes / str(ordinal)
        if directory.exists():
            return
        directory.mkdir(parents=True)
        os.chown(directory, sts.UID, sts.UID)
        volume = sts.persistent_volume(self.spec, ordinal, str(directory))
        self._kubectl("apply", "-f", "-", stdin=json.dumps(volume))

    def _await_brokers(self, count: int, timeout_s: float) -> None:
        expected = {sts.broker_id(o): sts.rack_of(self.spec, o) for o in range(count)}
        wait_until(
            lambda: self.registered() == expected and len(self.broker_pods()) == count,
            timeout_s=timeout_s,
            interval_s=1.0,
            what=f"brokers {sorted(expected)} to register with racks {sorted(set(expected.values()))} "
            f"(kubectl logs -n {self.namespace} {sts.BROKERS}-0; {sts.CONTROLLER}-0)",
        )

    def _kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = self.bed.kubectl(*args, "-n", self.namespace, stdin=stdin)
        if done.returncode != 0:
            raise BedError(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def _json(self, *args: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self._kubectl(*args, "-o", "json"))
        return document


def _listing(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
