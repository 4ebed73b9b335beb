"""Rendering the Helm chart with the bed's helm, for the chart's and the alert rules' tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kafka_balancer_dev.localbed import kube

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
# Every CRD the chart installs: kopf's peering CRDs in crds/ (Helm installs them before the release's
# objects), the BrokerPool and BalancerGoal CRDs in files/crds/ (templates/crds.yaml renders them).
CRD_DIRS = (CHART / "crds", CHART / "files" / "crds")
CRD_FILES = tuple(path for folder in CRD_DIRS for path in sorted(folder.glob("*.yaml")))
# The bed's apiserver; without it helm renders for its built-in default version.
KUBE_VERSION = "1.35.0"
RELEASE_NAMESPACE = "kb-test-chart"
RELEASE = "kb"


def apply_crds(bed: kube.KubeBed) -> None:
    """Every CRD of the chart, applied server-side (a re-apply by another test is a no-op)."""
    files = [arg for folder in CRD_DIRS for arg in ("-f", str(folder))]
    applied = bed.kubectl("apply", "--server-side", *files)
    assert applied.returncode == 0, applied.stderr


# One release per cluster owns the CRDs (docs/install.md#the-crds-and-upgrading); another one, or a
# test's release installed where kubectl applied them, leaves them out.
BESIDE_ANOTHER_RELEASE = ("--set", "crds.enabled=false")
# The integration tier's apiserver runs no pod: helm would wait for a hook Job that never runs.
NO_HOOK_JOBS = ("--set", "handover.enabled=false")
# The chart's own CRDs, which charts before crds.enabled installed from crds/ (not release objects).
OWN_CRDS = ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io")


def adopt_crds(bed: kube.KubeBed, release: str, namespace: str) -> None:
    """Hand CRDs that exist without Helm's ownership (applied by kubectl, or installed by an older
    chart from crds/) to ``release``, by the commands docs/install.md gives; Helm refuses to take over
    an object that lacks them. A CRD not there yet is left to the release to create."""
    for crd in OWN_CRDS:
        if bed.kubectl("get", "crd", crd).returncode != 0:
            continue
        labelled = bed.kubectl("label", "crd", crd, "app.kubernetes.io/managed-by=Helm", "--overwrite")
        assert labelled.returncode == 0, labelled.stderr
        annotated = bed.kubectl(
            "annotate", "crd", crd, "--overwrite",
            f"meta.helm.sh/release-name={release}", f"meta.helm.sh/release-namespace={namespace}",
        )  # fmt: skip
        assert annotated.returncode == 0, annotated.stderr


def render(bed: kube.KubeBed, *values: str, values_file: Path | None = None) -> list[dict[str, Any]]:
    """``helm template`` with each of ``values`` as ``--set`` and ``values_file`` as ``-f``."""
    sets = [arg for value in values for arg in ("--set", value)]
    files = ["-f", str(values_file)] if values_file else []
    rendered = bed.helm(
        "template",
        RELEASE,
        str(CHART),
        "-n",
        RELEASE_NAMESPACE,
        "--kube-version",
        KUBE_VERSION,
        *sets,
        *files,
    )
    assert rendered.returncode == 0, rendered.stderr
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]
