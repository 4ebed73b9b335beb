"""The state file a started bed keeps in its run directory: which processes it started.

``up`` writes it, ``down`` (another process) reads it and stops exactly those PIDs; a second
``up`` into the same directory refuses while any of them is alive (it would wipe their data).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.procs import pid_matches, stop_pid


@dataclass(frozen=True, slots=True)
class BedStateFile:
    file_name: str
    what: str  # "Kafka", "Kubernetes": for messages
    down_command: str
    grace_s: float

    def path(self, run_dir: Path) -> Path:
        return run_dir / self.file_name

    def write(self, run_dir: Path, state: dict[str, Any]) -> None:
        self.path(run_dir).write_text(json.dumps(state, indent=2) + "\n")

    def remove(self, run_dir: Path) -> None:
        self.path(run_dir).unlink(missing_ok=True)

    def read(self, run_dir: Path) -> dict[str, Any] | None:
        path = self.path(run_dir)
        if not path.exists():
            return None
        try:
            state: dict[str, Any] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise BedError(f"unreadable {self.what} bed state file {path}: {err}") from err
        return state

    def refuse_if_running(self, run_dir: Path) -> None:
        state = self.read(run_dir)
        if state and any(pid_matches(p["pid"], p["marker"]) for p in state["processes"]):
            raise BedError(
                f"a {self.what} bed is already running in {run_dir}; stop it first ({self.down_command})"
            )

    def stop_recorded(self, run_dir: Path) -> list[str]:
        """Stop the recorded processes in their recorded order; return the names stopped."""
        state = self.read(run_dir)
        if state is None:
            return []
        stopped = [p["name"] for p in state["processes"] if stop_pid(p["pid"], p["marker"], self.grace_s)]
        self.remove(run_dir)
        return stopped
