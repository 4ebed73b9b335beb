"""Kafka's own reassignment JSON, so ``kafka-reassign-partitions.sh --execute`` accepts our plans."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kafka_balancer.planner.plan import Plan


def plan_document(plan: Plan) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [
            {"topic": r.topic, "partition": r.partition, "replicas": list(r.replicas)}
            for r in plan.reassignments
        ],
    }


def write_json_atomically(path: Path, document: Any) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
