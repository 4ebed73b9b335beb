"""``kafka-balancer report`` where matplotlib is absent, as in the operator's image (its report extra left
out): matplotlib and the modules that drew with it leave ``sys.modules`` and its import fails as it
does where it was never installed. The other commands never import it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_balancer.cli import main

DRAWING = (
    "matplotlib",
    "kafka_balancer.commands.report",
    "kafka_balancer.report.png",
    "kafka_balancer.report.html",
)


def _without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n in DRAWING or n.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_without_matplotlib_the_report_says_in_one_line_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _without_matplotlib(monkeypatch)

    code = main(["report", "--snapshot", "s.json", "--plan", "p.json", "--output", str(tmp_path / "r.png")])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        "kafka-balancer report: drawing needs matplotlib, which this installation leaves out (the "
        "operator's image does): pip install 'kafka-balancer[report]'"
    ]
    assert not (tmp_path / "r.png").exists()


def test_a_module_missing_inside_the_report_is_not_taken_for_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [n for n in sys.modules if n in DRAWING]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kafka_balancer.report.table", None)

    with pytest.raises(ModuleNotFoundError) as failure:
        main(["report", "--snapshot", "s.json", "--plan", "p.json", "--output", "r.png"])
    assert failure.value.name == "kafka_balancer.report.table"


def test_the_operator_and_the_other_commands_never_import_matplotlib() -> None:
    # A fresh interpreter: this one may hold matplotlib from other tests.
    modules = [
        "kafka_balancer.cli",
        "kafka_balancer.commands.run",
        "kafka_balancer.commands.execute",
        "kafka_balancer.commands.pools",
        "kafka_balancer.commands.plan",
        "kafka_balancer.commands.snapshot",
        "kafka_balancer.k8s.handlers",
        "kafka_balancer.scoring.job",
    ]
    probe = (
        "import sys\n"
        f"for m in {modules!r}: __import__(m)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'matplotlib'))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
