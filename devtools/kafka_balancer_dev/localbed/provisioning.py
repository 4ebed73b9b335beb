"""Running a ``hack/*/provision.sh`` script that prints the directory it provisioned (Kafka jars,
Prometheus and the JMX exporter): idempotent and cached, so instant after the first run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafka_balancer_dev.checkout import repo_root
from kafka_balancer_dev.errors import BedError


def provisioned_directory(script: str, *, timeout_s: float = 900.0) -> Path:
    """Run ``hack/<script>`` and return the directory it prints last."""
    path = repo_root() / "hack" / script
    try:
        done = subprocess.run([str(path)], capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as err:
        raise BedError(f"{path} did not finish within {timeout_s:.0f}s") from err
    if done.returncode != 0:
        raise BedError(f"{path} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])
