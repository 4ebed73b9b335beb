"""The README is true of the code: the commands, options, files and manifests it names exist."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from kafka_balancer.api import BalancerGoal, BrokerPool
from kafka_balancer.cli import build_parser
from tests.support.readme import ROOT, commands, example_manifests, manifests, paths


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_readme_names_the_commands_the_issue_asks_for() -> None:
    named = {command for command, _ in commands()}
    wanted = {"plan", "snapshot", "score", "execute", "status", "cancel", "run", "demo", "report"}
    assert wanted <= named


@pytest.mark.parametrize(("command", "options"), commands())
def test_every_command_and_option_the_readme_names_exists(command: str, options: list[str]) -> None:
    known_commands = subcommands()
    assert command in known_commands, f"README names `kafka-balancer {command}`, which does not exist"
    known = {flag for action in known_commands[command]._actions for flag in action.option_strings}
    assert set(options) <= known, f"kafka-balancer {command}: unknown {sorted(set(options) - known)}"


@pytest.mark.parametrize("path", paths())
def test_every_file_the_readme_names_exists(path: str) -> None:
    assert (ROOT / path).exists(), f"README names {path}, which does not exist"


def test_the_readme_shows_a_pool_and_a_goal() -> None:
    kinds = [doc["kind"] for doc in manifests()]
    assert "BrokerPool" in kinds and "BalancerGoal" in kinds


@pytest.mark.parametrize(
    "manifest", manifests() + example_manifests(), ids=lambda m: f"{m['kind']}/{m['metadata']['name']}"
)
def test_every_manifest_in_the_readme_is_valid(manifest: dict[str, Any]) -> None:
    model = BrokerPool if manifest["kind"] == "BrokerPool" else BalancerGoal
    model.model_validate(manifest)
