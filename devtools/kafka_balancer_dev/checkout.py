"""Where the checkout is: the development package only works inside one, whose ``hack/`` scripts fetch
and build the beds' components and whose chart holds the CRDs."""

from __future__ import annotations

import os
from pathlib import Path

from kafka_balancer_dev.errors import BedError


def repo_root() -> Path:
    """The checkout this package runs from (``KB_ROOT`` wins), where ``hack/`` lives."""
    env_root = os.environ.get("KB_ROOT")
    if env_root:
        return Path(env_root)
    for parent in Path(__file__).resolve().parents:
        if (parent / "hack" / "kube" / "provision.sh").exists():
            return parent
    raise BedError("cannot find hack/kube/provision.sh above this package; set KB_ROOT to the checkout")
