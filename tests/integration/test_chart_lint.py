"""The chart passes chart-testing's ``ct lint`` as a chart repository's CI runs it, and ct catches what it
is there to catch: a Chart.yaml its schema refuses and a values.yaml its YAML rules refuse."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from tests.support.chart import CHART
from tests.support.chart_testing import ChartTesting


def test_the_chart_passes_ct_lint(chart_testing: ChartTesting) -> None:
    lint = chart_testing.lint(CHART)
    assert lint.returncode == 0, lint.output
    assert "All charts linted successfully" in lint.output, lint.output
    assert "Validation success!" in lint.tools, lint.tools
    assert "1 chart(s) linted, 0 chart(s) failed" in lint.tools, lint.tools


def break_chart_yaml(chart: Path) -> None:
    """A maintainer with a field chart-testing's schema does not know (helm alone ignores it)."""
    metadata = yaml.safe_load((chart / "Chart.yaml").read_text())
    metadata["maintainers"][0]["github"] = "kafka-balancer"
    (chart / "Chart.yaml").write_text(yaml.safe_dump(metadata, sort_keys=False))


def break_values_yaml(chart: Path) -> None:
    """A trailing space, which yamllint refuses and helm reads without a word."""
    values = chart / "values.yaml"
    values.write_text(values.read_text().replace("\nreplicaCount: 1\n", "\nreplicaCount: 1 \n", 1))


@pytest.mark.parametrize(
    ("breaks", "reported"),
    [
        (break_chart_yaml, "maintainers.0.github: Unexpected element"),
        (break_values_yaml, "trailing spaces  (trailing-spaces)"),
    ],
)
def test_ct_lint_fails_a_broken_chart(
    chart_testing: ChartTesting, tmp_path: Path, breaks: Callable[[Path], None], reported: str
) -> None:
    chart = tmp_path / "charts" / CHART.name
    shutil.copytree(CHART, chart)
    breaks(chart)
    lint = chart_testing.lint(chart)
    assert lint.returncode != 0, lint.output
    assert reported in lint.tools, lint.tools
