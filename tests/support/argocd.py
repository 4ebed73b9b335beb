"""Argo CD's health of our resources: the checks of integrations/argocd/ run by health-lua
(hack/argocd/provision.sh), which runs them in gopher-lua, Argo CD's Lua VM, as Argo CD's controller
runs a custom health check."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHECKS = Path(__file__).resolve().parents[2] / "integrations" / "argocd" / "kafkabalancer.io"


@dataclass(frozen=True)
class ArgoHealth:
    """Argo CD's health of ``kind`` objects, with ``runner`` the health-lua binary."""

    runner: Path

    def __call__(self, obj: dict[str, Any]) -> tuple[str, str]:
        """(status, message) of ``obj``, a BrokerPool or a BalancerGoal as the apiserver returns it."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(obj, file)
            file.flush()
            done = subprocess.run(
                [str(self.runner), str(CHECKS / obj["kind"] / "health.lua"), file.name],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        return str(found["status"]), str(found.get("message", ""))
