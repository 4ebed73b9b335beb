"""chart-testing's ``ct lint`` (hack/chart-testing/provision.sh), the linter Helm's own chart repositories
run: Chart.yaml against chart-testing's schema (yamale), Chart.yaml and values.yaml against its YAML
rules (yamllint), then ``helm lint``."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChartTesting:
    """``home`` is the directory the provision script prints (bin/ct, etc/); ``helm`` the bed's helm."""

    home: Path
    helm: Path

    def lint(self, chart: Path) -> subprocess.CompletedProcess[str]:
        """``ct lint`` of the chart in ``chart``, as a chart repository's CI lints a chart it publishes.

        Its maintainers are project names, not GitHub accounts ct could look up; the version is checked
        against no git remote, so the chart lints in any directory, a checkout or not."""
        # ct runs helm, yamllint and yamale from PATH: the bed's helm and this venv's Python tools.
        path = os.pathsep.join([str(self.helm.parent), str(Path(sys.executable).parent), os.environ["PATH"]])
        return subprocess.run(
            [
                str(self.home / "bin" / "ct"),
                "lint",
                "--charts",
                str(chart),
                "--validate-maintainers=false",
                "--check-version-increment=false",
                "--chart-yaml-schema",
                str(self.home / "etc" / "chart_schema.yaml"),
                "--lint-conf",
                str(self.home / "etc" / "lintconf.yaml"),
            ],
            cwd=chart.parent,
            env={**os.environ, "PATH": path},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
