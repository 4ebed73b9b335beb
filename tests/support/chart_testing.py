"""chart-testing's ``ct lint`` (hack/chart-testing/provision.sh), the linter Helm's own chart repositories
run: Chart.yaml against chart-testing's schema (yamale), Chart.yaml and values.yaml against its YAML
rules (yamllint), then ``helm lint``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# The tools ct runs from PATH, each through a wrapper that keeps its whole output (``ChartTesting.lint``).
_TOOLS = ("helm", "yamllint", "yamale")


@dataclass(frozen=True)
class Lint:
    """What ``ct lint`` ended with: its exit code, its own output, and all its tools printed."""

    returncode: int
    output: str
    tools: str


@dataclass(frozen=True)
class ChartTesting:
    """``home`` is the directory the provision script prints (bin/ct, etc/); ``helm`` the bed's helm."""

    home: Path
    helm: Path

    def lint(self, chart: Path) -> Lint:
        """``ct lint`` of the chart in ``chart``, as a chart repository's CI lints a chart it publishes.

        Its maintainers are project names, not GitHub accounts ct could look up; the version is checked
        against no git remote, so the chart lints in any directory, a checkout or not.

        ct copies its tools' output to its own from a goroutine that its wait for the tool races
        with, so a tool's last lines are sometimes lost (helm lint's summary line was, in CI): each
        tool runs through a wrapper that also appends its whole output to a file, read after."""
        real = {"helm": self.helm, **{t: Path(sys.executable).parent / t for t in _TOOLS[1:]}}
        with tempfile.TemporaryDirectory(prefix="kb-ct-") as scratch:
            wrappers, log = Path(scratch) / "bin", Path(scratch) / "tools.log"
            wrappers.mkdir()
            for tool, binary in real.items():
                wrapper = wrappers / tool
                wrapper.write_text(
                    "#!/usr/bin/env bash\nset -o pipefail\n"
                    f'{shlex.quote(str(binary))} "$@" 2>&1 | tee -a {shlex.quote(str(log))}\n'
                )
                wrapper.chmod(0o755)
            path = os.pathsep.join([str(wrappers), os.environ["PATH"]])
            ct = subprocess.run(
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
            tools = log.read_text() if log.exists() else ""
        return Lint(ct.returncode, ct.stdout + ct.stderr, tools)
