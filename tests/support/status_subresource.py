"""Writing an object's status as a controller does: through the status subresource (the main resource
ignores ``status`` for kinds that have one)."""

from __future__ import annotations

import json
from typing import Any

from kafka_balancer_dev.localbed import kube


def write_status(bed: kube.KubeBed, kind: str, name: str, namespace: str, status: dict[str, Any]) -> None:
    """Merge ``status`` into the status of ``kind``/``name`` in ``namespace``."""
    patch = json.dumps({"status": status})
    done = bed.kubectl(
        "patch", kind, name, "-n", namespace, "--subresource=status", "--type=merge", "-p", patch
    )
    assert done.returncode == 0, done.stderr
