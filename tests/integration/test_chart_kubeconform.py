"""kubeconform, strict, on what the chart renders and on the examples, against the bed's own schemas
(tests/support/kubeconform.py): every object is of a kind the apiserver serves and sets no field its
schema lacks, and a misspelt field fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from tests.support.chart import CHART, render
from tests.support.kubeconform import Kubeconform

from kafka_balancer_dev.localbed import kube

EXAMPLES = CHART.parents[1] / "examples"
# The monitors and the PrometheusRule are checked against Prometheus Operator's CRDs; promtool checks
# the rules themselves (tests/integration/test_alert_rules.py).
EVERYTHING = (
    "replicaCount=2",
    "alerts.enabled=true",
    "metrics.serviceMonitor.enabled=true",
    "metrics.serviceMonitor.interval=30s",
    "metrics.podMonitor.enabled=true",
    "metrics.podMonitor.scrapeTimeout=5s",
    "clusterWide=true",
    "dashboards.enabled=true",
    "networkPolicy.enabled=true",
    "networkPolicy.apiServer.cidrs={10.0.0.10/32}",
    "scoring.sparkSubmit.enabled=true",
)


def summary(output: str) -> dict[str, int]:
    found = re.search(r"Valid: (\d+), Invalid: (\d+), Errors: (\d+), Skipped: (\d+)", output)
    assert found, output
    return dict(zip(("valid", "invalid", "errors", "skipped"), map(int, found.groups()), strict=True))


@pytest.mark.parametrize("values", [(), EVERYTHING], ids=["defaults", "everything"])
def test_the_rendered_chart_and_its_crds_pass_kubeconform(
    kube_bed: kube.KubeBed, kubeconform: Kubeconform, tmp_path: Path, values: tuple[str, ...]
) -> None:
    docs = render(kube_bed, *values)
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    crds = sorted((CHART / "crds").glob("*.yaml"))
    validated = kubeconform.validate(rendered, *crds)
    output = validated.stdout + validated.stderr
    assert validated.returncode == 0, output
    crd_count = sum(1 for path in crds for doc in yaml.safe_load_all(path.read_text()) if doc)
    assert summary(output) == {"valid": len(docs) + crd_count, "invalid": 0, "errors": 0, "skipped": 0}


def test_the_examples_pass_kubeconform(kubeconform: Kubeconform) -> None:
    examples = sorted(EXAMPLES.glob("*.yaml")) + sorted((EXAMPLES / "statefulset").glob("*.yaml"))
    count = sum(1 for path in examples for doc in yaml.safe_load_all(path.read_text()) if doc)
    validated = kubeconform.validate(*examples)
    output = validated.stdout + validated.stderr
    assert validated.returncode == 0, output
    assert summary(output) == {"valid": count, "invalid": 0, "errors": 0, "skipped": 0}


def test_kubeconform_fails_a_misspelt_field(
    kube_bed: kube.KubeBed, kubeconform: Kubeconform, tmp_path: Path
) -> None:
    (deployment,) = [doc for doc in render(kube_bed) if doc["kind"] == "Deployment"]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolice"] = "Always"
    pool = yaml.safe_load((EXAMPLES / "pool.yaml").read_text())
    pool["spec"]["kafka"]["bootstrapServer"] = pool["spec"]["kafka"].pop("bootstrapServers")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump_all([deployment, pool]))
    validated = kubeconform.validate(broken)
    output = validated.stdout + validated.stderr
    assert validated.returncode != 0, output
    assert summary(output)["invalid"] == 2, output
    assert "'imagePullPolice' not allowed" in output, output
    assert "'bootstrapServer' not allowed" in output, output
