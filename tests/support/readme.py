"""What the README and the pages of docs/ name: commands with their options, repository paths, links,
CR manifests and table cells."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README_PATH = ROOT / "README.md"
README = README_PATH.read_text()
# The README and every page of docs/: the moved reference is held to what the README was.
PAGES = [README_PATH, *sorted((ROOT / "docs").glob("*.md"))]
# `kafka-balancer <command> …` up to the end of the code span, table cell or line.
_COMMAND = re.compile(r"(?<![\w/.-])kafka-balancer ([a-z]+)(?![\w/-])((?:[^`\n|]|\|(?=[^|]*`))*)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_PATH = re.compile(r"(?<![\w./-])((?:hack|examples|docs|bench|charts|crds|devtools|integrations)/[\w./-]*\w)")
# [text](target): a target with no scheme is a file of the checkout, relative to the page.
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)
# Code: fenced blocks, and inline spans (which may run over a line end).
_CODE = re.compile(r"^```.*?^```|`[^`]+`", flags=re.S | re.M)


def page_name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def commands(text: str = README) -> list[tuple[str, list[str]]]:
    """Each ``kafka-balancer <command>`` written as code, with the options written after it (prose such
    as "kafka-balancer keeps" names no command)."""
    fragments = [
        block if block.startswith("```") else " ".join(block.split())
        for block in (m.group(0) for m in _CODE.finditer(text))
    ]
    found = [m for fragment in fragments for m in _COMMAND.finditer(fragment)]
    return [(m.group(1), _OPTION.findall(m.group(2))) for m in found]


def paths(text: str = README) -> list[str]:
    return sorted(set(_PATH.findall(text)))


def links(page: Path) -> list[tuple[Path, str]]:
    """Each link to a file of the checkout: the file, and the anchor after ``#`` ("" without one)."""
    found = []
    for target in _LINK.findall(_CODE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        found.append(((page.parent / file).resolve() if file else page, anchor))
    return found


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces to hyphens."""
    slugs: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", _FENCE.sub("", page.read_text()), flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        numbered, n = slug, 0
        while numbered in slugs:
            n += 1
            numbered = f"{slug}-{n}"
        slugs.add(numbered)
    return slugs


def table_cells(text: str) -> list[str]:
    """Every cell of every Markdown table (a ``\\|`` inside a cell does not split it)."""
    rows = [line.strip() for line in _FENCE.sub("", text).splitlines() if line.lstrip().startswith("|")]
    return [cell.strip() for row in rows for cell in re.split(r"(?<!\\)\|", row)[1:-1]]


def manifests(text: str = README) -> list[dict[str, Any]]:
    """The ``kafkabalancer.io`` resources of the text's YAML blocks."""
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    docs = [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]
    return [doc for doc in docs if str(doc.get("apiVersion", "")).startswith("kafkabalancer.io/")]


def example_manifests() -> list[dict[str, Any]]:
    """The ``kafkabalancer.io`` resources of ``examples/`` and its directories (``examples/statefulset/``),
    which the README tells users to apply."""
    docs = [
        doc
        for path in sorted((ROOT / "examples").rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    return [doc for doc in docs if str(doc.get("apiVersion", "")).startswith("kafkabalancer.io/")]
