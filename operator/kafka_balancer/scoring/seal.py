"""A run's outputs bound to the driver that wrote them: the SHA-256 of ``manifest.json`` and
``snapshot.json`` as the job wrote them, which the job leaves where only its own pod's status can carry
it (a Spark driver's termination message) and the operator compares with what it reads back.

The shared storage is writable by every pool's job; the driver pod's status is not (no Spark account
may patch ``pods/status``). So another pool's job can spoil a run's outputs but not have them
accepted (docs/spark.md, "Security").
"""

from __future__ import annotations

import hashlib
import json

# Kubernetes' default ``terminationMessagePath`` (the kubelet makes it writable by any uid).
TERMINATION_LOG = "/dev/termination-log"


def seal(manifest: bytes, snapshot: bytes) -> str:
    """The outputs' digests, one short line (well under the 4096 bytes of a termination message)."""
    digests = {
        "manifest": hashlib.sha256(manifest).hexdigest(),
        "snapshot": hashlib.sha256(snapshot).hexdigest(),
    }
    return json.dumps(digests, sort_keys=True, separators=(",", ":"))
