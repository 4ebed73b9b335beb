"""``kafka-balancer completion bash|zsh``: a shell completion script, generated from the command
line's own parser (shtab), so every command and flag it offers is one the parser takes."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

SHELLS = ("bash", "zsh")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell the script is for")


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The script for ``shell``; flags that take a file complete file names."""
    import shtab

    for action in _actions(parser):
        if action.type is Path:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
    script: str = shtab.complete(parser, shell=shell)
    return script
