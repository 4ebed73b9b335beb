"""The README and the pages of docs/ are true of the code: the commands, options, files, links and
manifests they name exist, and their tables stay readable."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.api import BalancerGoal, BrokerPool
from kafka_balancer.cli import build_parser
from tests.support.readme import (
    PAGES,
    ROOT,
    anchors,
    commands,
    example_manifests,
    links,
    manifests,
    page_name,
    paths,
    table_cells,
)

MAX_CELL = 200


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_the_readme_names_the_commands_the_issue_asks_for() -> None:
    named = {command for command, _ in commands()}
    wanted = {"plan", "snapshot", "score", "execute", "status", "cancel", "run", "demo", "report"}
    assert wanted <= named


def test_docs_holds_the_pages_the_readme_links() -> None:
    linked = {file for file, _ in links(ROOT / "README.md")}
    pages = {"install", "usage", "crd-reference", "goals", "cli", "operations", "security", "spark"}
    assert {ROOT / "docs" / f"{name}.md" for name in pages | {"development", "design"}} <= linked


@pytest.mark.parametrize(
    ("page", "command", "options"),
    [(page, command, options) for page in PAGES for command, options in commands(page.read_text())],
    ids=lambda value: page_name(value) if isinstance(value, Path) else None,
)
def test_every_command_and_option_the_docs_name_exists(page: Path, command: str, options: list[str]) -> None:
    known_commands = subcommands()
    name = page_name(page)
    assert command in known_commands, f"{name} names `kafka-balancer {command}`, which does not exist"
    parsers = [known_commands[command]]
    # A command with actions of its own (`pool get`, `pool approve`): any action's options.
    for action in known_commands[command]._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers.extend(action.choices.values())
    known = {flag for parser in parsers for action in parser._actions for flag in action.option_strings}
    assert set(options) <= known, f"{name}: kafka-balancer {command}: unknown {sorted(set(options) - known)}"


@pytest.mark.parametrize(
    ("page", "path"),
    [(page, path) for page in PAGES for path in paths(page.read_text())],
    ids=lambda value: page_name(value) if isinstance(value, Path) else value,
)
def test_every_file_the_docs_name_exists(page: Path, path: str) -> None:
    assert (ROOT / path).exists(), f"{page_name(page)} names {path}, which does not exist"


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_every_link_of_the_docs_leads_to_a_file_and_heading(page: Path) -> None:
    for file, anchor in links(page):
        assert file.exists(), f"{page_name(page)} links {file}, which does not exist"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{page_name(page)} links {file.name}#{anchor}: no such heading"


@pytest.mark.parametrize("page", PAGES, ids=page_name)
def test_no_table_cell_of_the_docs_is_a_wall_of_text(page: Path) -> None:
    long = [cell[:60] for cell in table_cells(page.read_text()) if len(cell) > MAX_CELL]
    assert not long, f"{page_name(page)}: table cells over {MAX_CELL} characters, write them as text: {long}"


def test_the_readme_shows_a_pool_and_a_goal() -> None:
    kinds = [doc["kind"] for doc in manifests()]
    assert "BrokerPool" in kinds and "BalancerGoal" in kinds


@pytest.mark.parametrize(
    "manifest",
    [doc for page in PAGES for doc in manifests(page.read_text())] + example_manifests(),
    ids=lambda m: f"{m['kind']}/{m['metadata']['name']}",
)
def test_every_manifest_in_the_docs_is_valid(manifest: dict[str, Any]) -> None:
    model = BrokerPool if manifest["kind"] == "BrokerPool" else BalancerGoal
    model.model_validate(manifest)
