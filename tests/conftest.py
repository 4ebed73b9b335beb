"""Tiers: a test's directory decides its marker, so no test can land outside a tier."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.argocd",
    "tests.fixtures.chart_testing",
    "tests.fixtures.kafka_bed",
    "tests.fixtures.kube_bed",
    "tests.fixtures.kubeconform",
    "tests.fixtures.minio_bed",
    "tests.fixtures.node_bed",
    "tests.fixtures.prometheus_bed",
    "tests.fixtures.strimzi",
]

_TIERS = {"unit", "spark", "integration", "e2e", "node"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = Path(str(item.fspath)).relative_to(Path(__file__).parent).parts[0]
        if tier in _TIERS:
            item.add_marker(getattr(pytest.mark, tier))
