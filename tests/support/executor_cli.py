"""The executor as a user runs it: plan files written by hand, the CLI in a subprocess, its state file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def write_plan(path: Path, topic: str, targets: dict[int, list[int]]) -> Path:
    """A plan file in Kafka's reassignment JSON moving ``topic``'s partitions to ``targets``."""
    moves = [{"topic": topic, "partition": p, "replicas": r} for p, r in targets.items()]
    path.write_text(json.dumps({"version": 1, "partitions": moves}))
    return path


def cli(*args: str) -> subprocess.Popen[str]:
    """``kafka-balancer ARGS`` started in its own process, stdout and stderr captured as text."""
    argv = [sys.executable, "-m", "kafka_balancer.cli", *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_state(path: Path) -> dict[str, Any]:
    """The execution state file, or {} while it is not written yet."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return doc


def copying(path: Path) -> bool:
    """A move is in flight and has copied bytes: it was submitted, with its throttles set before."""
    moves = read_state(path).get("moves", [])
    return any(m["status"] == "in-flight" and m["progressBytes"] > 0 for m in moves)
