"""Rendering the Helm chart with the bed's helm, for the chart's and the alert rules' tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kafka_balancer_dev.localbed import kube

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
# The bed's apiserver; without it helm renders for its built-in default version.
KUBE_VERSION = "1.35.0"
RELEASE_NAMESPACE = "kb-test-chart"
RELEASE = "kb"


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
