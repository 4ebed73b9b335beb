"""The chart's ServiceMonitor and PodMonitor as kube-prometheus-stack users run them: Prometheus Operator
(hack/prometheus-operator/, on this machine against the node's apiserver, as it runs in a cluster
against its own) turns them into a Prometheus' scrape configuration, and a real Prometheus given that
configuration finds the operator pod through the apiserver and scrapes it.

What is played: the Prometheus pod that Prometheus Operator would run in a StatefulSet (its image is
in no registry this machine reaches; the Prometheus resource asks for 0 replicas) and that pod's
config reloader. The Prometheus that scrapes is the same release built here, on this machine, with the
generated scrape configurations as they are but for two things a pod gets from its surroundings: the
shard number the reloader puts in, and where the apiserver is (``kubeconfig_file`` where a pod would
use its service account)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_balancer import __version__
from kafka_balancer_dev.localbed import kube, node
from kafka_balancer_dev.localbed.ports import LOOPBACK, free_port
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until
from kafka_balancer_dev.localbed.prometheus import PrometheusBed
from tests.fixtures.provisioning import provisioned

from .conftest import OPERATOR_NAMESPACE, RELEASE, OperatorPods, kubectl_json, upgrade

# The label kube-prometheus-stack's Prometheus selects monitors by (its release's name).
SELECTED = {"release": "kube-prometheus-stack"}
PROMETHEUS = "kps"
MONITORS = ("serviceMonitor", "podMonitor")
# The scrape jobs Prometheus Operator makes of each monitor's first endpoint, and the job label their
# series get: the Service's name, and the PodMonitor's namespace/name.
JOBS = {
    f"serviceMonitor/{OPERATOR_NAMESPACE}/{RELEASE}-kafka-balancer/0",
    f"podMonitor/{OPERATOR_NAMESPACE}/{RELEASE}-kafka-balancer/0",
}
JOB_LABELS = {f"{RELEASE}-kafka-balancer-metrics", f"{OPERATOR_NAMESPACE}/{RELEASE}-kafka-balancer"}


@pytest.fixture(scope="module")
def prometheus_operator(node_bed: node.NodeBed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Prometheus Operator's CRDs on the apiserver and the operator watching the release's namespace,
    both gone afterwards; the directory of its tools (bin/prometheus is the scraper)."""
    tools = provisioned("prometheus-operator/provision.sh")
    applied = node_bed.kubectl("apply", "--server-side", "-f", str(tools / "crds"))
    assert applied.returncode == 0, applied.stderr
    for plural in ("servicemonitors", "podmonitors", "prometheuses"):
        kube.wait_established(node_bed.api, f"{plural}.monitoring.coreos.com")
    logs = tmp_path_factory.mktemp("prometheus-operator")
    operator = ManagedProcess(
        "prometheus-operator",
        [
            str(tools / "bin" / "operator"),
            f"--namespaces={OPERATOR_NAMESPACE}",
            f"--web.listen-address={LOOPBACK}:{free_port()}",
        ],
        logs / "operator.log",
        env={**os.environ, "KUBECONFIG": str(node_bed.api.kubeconfig)},
    )
    try:
        yield tools
    finally:
        operator.stop(20.0)
        node_bed.kubectl("delete", "prometheus", PROMETHEUS, "-n", OPERATOR_NAMESPACE, "--ignore-not-found")
        node_bed.kubectl("delete", "-f", str(tools / "crds"), "--ignore-not-found", "--wait=false")


def generated_scrape_configs(bed: node.NodeBed) -> list[dict[str, Any]] | None:
    """The scrape configurations Prometheus Operator wrote for the Prometheus, once they hold both
    monitors' jobs."""
    found = bed.kubectl("get", "secret", f"prometheus-{PROMETHEUS}", "-n", OPERATOR_NAMESPACE, "-o", "json")
    if found.returncode != 0:
        return None
    packed = json.loads(found.stdout).get("data", {}).get("prometheus.yaml.gz")
    if not packed:
        return None
    # The shard's number goes in as Prometheus Operator's config reloader puts it in (one shard: 0).
    text = gzip.decompress(base64.b64decode(packed)).decode().replace("$(SHARD)", "0")
    config = yaml.safe_load(text)
    scrape_configs: list[dict[str, Any]] = config.get("scrape_configs") or []
    return scrape_configs if {c["job_name"] for c in scrape_configs} >= JOBS else None


def test_the_charts_monitors_make_prometheus_scrape_the_operator_pod(
    node_bed: node.NodeBed,
    pods: OperatorPods,
    prometheus_operator: Path,
    tmp_path: Path,
) -> None:
    scraper_binary = prometheus_operator / "bin" / "prometheus"
    built_as = subprocess.run([str(scraper_binary), "--version"], capture_output=True, text=True, check=True)
    version = built_as.stdout.split()[2]  # "prometheus, version 3.16.0 (...)"
    values: dict[str, str | int] = {}
    for monitor in MONITORS:
        values |= {f"metrics.{monitor}.enabled": "true", f"metrics.{monitor}.interval": "1s"}
        values |= {f"metrics.{monitor}.labels.{key}": value for key, value in SELECTED.items()}
    upgrade(node_bed, **values)
    try:
        prometheus = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "Prometheus",
            "metadata": {"name": PROMETHEUS, "namespace": OPERATOR_NAMESPACE},
            "spec": {
                "replicas": 0,
                "version": f"v{version}",
                "serviceMonitorSelector": {"matchLabels": SELECTED},
                "podMonitorSelector": {"matchLabels": SELECTED},
            },
        }
        created = node_bed.kubectl("apply", "-f", "-", stdin=json.dumps(prometheus))
        assert created.returncode == 0, created.stderr
        generated = wait_until(
            lambda: generated_scrape_configs(node_bed),
            timeout_s=120,
            what="the generated scrape configuration",
        )
        ours = [c for c in generated if c["job_name"] in JOBS]
        for config in ours:
            for discovery in config["kubernetes_sd_configs"]:
                discovery["kubeconfig_file"] = str(node_bed.api.kubeconfig)

        (pod,) = pods.live()
        scraper = PrometheusBed(
            scraper_binary.parent, tmp_path / "prometheus", {}, scrape_configs=ours, discovered=2
        )
        scraper.start()  # returns once both jobs' targets have been scraped
        try:
            built = scraper.query("kafka_balancer_build_info")
            assert {b["metric"]["job"] for b in built} == JOB_LABELS, built  # type: ignore[index]
            for series in built:
                labels = series["metric"]
                assert isinstance(labels, dict), series
                # The operator's own pod, at its pod address, with the version it runs.
                assert labels["pod"] == pod["metadata"]["name"], series
                assert labels["instance"].startswith(pod["status"]["podIP"] + ":"), series
                assert labels["version"] == __version__, series
        finally:
            scraper.stop()
    finally:
        upgrade(node_bed, **{f"metrics.{monitor}.enabled": "false" for monitor in MONITORS})
    rendered = kubectl_json(node_bed, "get", "servicemonitors,podmonitors", "-n", OPERATOR_NAMESPACE)
    assert rendered["items"] == [], "disabled again, the monitors are gone"
