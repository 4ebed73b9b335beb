"""``kafka-balancer demo`` where the development package is absent, as in an installed wheel: the
directory holding ``kafka_balancer_dev`` leaves ``sys.path`` and its modules leave ``sys.modules``, so
the import fails exactly as it does where the package was never installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafka_balancer.cli import main


def test_without_the_development_package_the_demo_says_in_one_line_how_to_run_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p) / "kafka_balancer_dev").is_dir()])
    for name in [n for n in sys.modules if n.split(".")[0] == "kafka_balancer_dev"]:
        monkeypatch.delitem(sys.modules, name)

    code = main(["demo", "--fast"])

    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        "kafka-balancer demo: the demo runs from a checkout of the kafka-balancer repository, not from an "
        "installed package: clone the repository and run hack/demo.sh in it"
    ]


def test_a_module_missing_inside_the_development_package_is_not_taken_for_a_missing_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    monkeypatch.delitem(sys.modules, "kafka_balancer_dev.demo.scenario", raising=False)

    with pytest.raises(ModuleNotFoundError) as failure:
        main(["demo", "--fast"])
    assert failure.value.name == "confluent_kafka"
