"""What the README names: commands with their options, repository paths, and CR manifests."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# `kafka-balancer <command> …` up to the end of the code span, table cell or line.
_COMMAND = re.compile(r"(?<![\w/.-])kafka-balancer ([a-z]+)(?![\w/-])((?:[^`\n|]|\|(?=[^|]*`))*)")
_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_PATH = re.compile(r"(?<![\w./-])((?:hack|examples|docs|bench|charts|crds|devtools)/[\w./-]*\w)")


def commands() -> list[tuple[str, list[str]]]:
    """Each ``kafka-balancer <command>`` mention with the options written after it."""
    return [(m.group(1), _OPTION.findall(m.group(2))) for m in _COMMAND.finditer(README)]


def paths() -> list[str]:
    return sorted(set(_PATH.findall(README)))


def manifests() -> list[dict[str, Any]]:
    """The ``kafkabalancer.io`` resources of the README's YAML blocks."""
    blocks = re.findall(r"```yaml\n(.*?)```", README, flags=re.S)
    docs = [doc for block in blocks for doc in yaml.safe_load_all(block) if doc]
    return [doc for doc in docs if str(doc.get("apiVersion", "")).startswith("kafkabalancer.io/")]


def example_manifests() -> list[dict[str, Any]]:
    """The ``kafkabalancer.io`` resources of ``examples/*.yaml``, which the README tells users to apply."""
    docs = [
        doc
        for path in sorted((ROOT / "examples").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    return [doc for doc in docs if str(doc.get("apiVersion", "")).startswith("kafkabalancer.io/")]
