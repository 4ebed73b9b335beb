"""The command line installed alone (``pip install kafka-balancer``): without the operator extra
(pyspark, pandas) the commands that score say in one line what to install, and the others never import
either."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_balancer.cli import main

SCORING = {
    "score": ["score", "--samples", "s", "--topology", "t.json", "--goals", "g.yaml", "--out", "o"],
    "run": ["run"],
    "demo": ["demo"],
}


@pytest.mark.parametrize("absent", ["pyspark", "pandas"])
@pytest.mark.parametrize("command", sorted(SCORING))
def test_a_command_that_scores_says_in_one_line_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str, absent: str
) -> None:
    # As where it was never installed: its import fails, and importlib finds no spec for it.
    monkeypatch.setitem(sys.modules, absent, None)

    code = main(SCORING[command])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"kafka-balancer {command}: scoring runs on pyspark and pandas, which this installation leaves "
        "out (they are the operator extra): pip install 'kafka-balancer[operator]'"
    ]


def test_the_other_commands_never_import_pyspark_or_pandas() -> None:
    # A fresh interpreter: this one may hold them from other tests.
    modules = ["kafka_balancer.cli"] + [
        f"kafka_balancer.commands.{name}"
        for name in ("plan", "snapshot", "execute", "pools", "report", "completion", "run")
    ]
    probe = "; ".join(
        [
            *(f"import {m}" for m in modules),
            "import sys",
            "print(sorted({'pyspark', 'pandas'} & set(sys.modules)))",
        ]
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
