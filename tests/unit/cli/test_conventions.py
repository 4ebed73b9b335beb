"""The CLI's conventions: ``--version`` from the package metadata (also in the operator's first log line
and its build-info metric), and an example at the end of every command's ``--help``."""

from __future__ import annotations

import argparse
import logging
import shlex
from importlib.metadata import version
from typing import Any

import kopf
import pytest
from prometheus_client import CollectorRegistry

from kafka_balancer.cli import EXAMPLES, build_parser, main
from kafka_balancer.k8s import main as operator_main
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.settings import OperatorSettings

INSTALLED = version("kafka-balancer")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"kafka-balancer {INSTALLED}\n"


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_commands_help_ends_with_an_example_that_parses(command: str) -> None:
    help_text = subcommands()[command].format_help()
    assert help_text.rstrip().endswith(f"example:\n  {EXAMPLES[command]}")
    words = shlex.split(EXAMPLES[command])
    assert words[:2] == ["kafka-balancer", command]
    # The example is a command line the parser accepts as it is (every required option given).
    assert build_parser().parse_args(words[1:]).command == command


def test_the_build_info_metric_carries_the_version() -> None:
    registry = CollectorRegistry()
    OperatorMetrics(registry)
    assert registry.get_sample_value("kafka_balancer_build_info", {"version": INSTALLED}) == 1.0


def test_the_operators_first_log_line_names_its_version(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    started: list[dict[str, Any]] = []
    monkeypatch.setattr(kopf, "run", lambda **kwargs: started.append(kwargs))
    # kopf's own logging set-up would stay on the root logger for the tests after this one.
    monkeypatch.setattr(kopf, "configure", lambda **_: None)
    caplog.set_level(logging.INFO)
    operator_main.run_operator(OperatorSettings.from_env())
    assert started, "kopf was not started"
    assert caplog.records[0].getMessage() == f"kafka-balancer {INSTALLED} starting"
