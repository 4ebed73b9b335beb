"""Kafka's own reassignment JSON, so ``kafka-reassign-partitions.sh --execute`` accepts our plans.

The one reader and writer of the plan contract: ``plan --output`` writes it, ``execute`` and
``report`` read it, and the operator stores the same document in the pool's plan ConfigMap.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kafka_balancer.errors import InputError
from kafka_balancer.formats.json_text import document_text
from kafka_balancer.model.plan import ANY_LOG_DIR, Reassignment, ReassignmentPlan


def plan_document(plan: ReassignmentPlan) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "replicas": list(r.replicas),
                # Only where a replica changes log dir: an all-"any" list says nothing Kafka needs.
                **({"log_dirs": list(r.log_dirs)} if r.moves_log_dirs else {}),
            }
            for r in plan
        ],
    }


def parse_plan(document: Any, source: str = "plan") -> ReassignmentPlan:
    """Validate a decoded plan document; :class:`InputError` names the offending entry and field."""
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise InputError(f"{source}: 'partitions' must be a list")
    plan: list[Reassignment] = []
    seen: set[tuple[str, int]] = set()
    for index, entry in enumerate(entries):
        where = f"plan partitions[{index}]"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: must be an object")
        topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
        if not isinstance(topic, str) or not topic:
            raise InputError(f"{where}.topic: must be a non-empty string")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise InputError(f"{where}.partition: must be a non-negative integer")
        if (
            not isinstance(replicas, list)
            or not replicas
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in replicas)
        ):
            raise InputError(f"{where}.replicas: must be a non-empty list of broker ids")
        if len(set(replicas)) != len(replicas):
            raise InputError(f"{where}.replicas: duplicate broker in {replicas} for {topic}-{partition}")
        if (topic, partition) in seen:
            raise InputError(f"{where}: {topic}-{partition} is listed twice")
        seen.add((topic, partition))
        log_dirs = _log_dirs(entry.get("log_dirs", []), replicas, where)
        plan.append(Reassignment(topic, partition, tuple(replicas), log_dirs))
    return ReassignmentPlan(tuple(plan))


def _log_dirs(value: Any, replicas: list[int], where: str) -> tuple[str, ...]:
    """Kafka's own rules: absent means "any" for every replica, else one entry per replica."""
    if value == []:
        return ()
    if not isinstance(value, list) or not all(isinstance(d, str) and d for d in value):
        raise InputError(f"{where}.log_dirs: must be a list of log dir paths or {ANY_LOG_DIR!r}")
    if len(value) != len(replicas):
        raise InputError(f"{where}.log_dirs: {len(value)} entries for {len(replicas)} replicas {replicas}")
    return tuple(value) if any(d != ANY_LOG_DIR for d in value) else ()


def read_plan(path: Path) -> ReassignmentPlan:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise InputError(f"plan {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"plan {path}: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise InputError(f"plan {path} is not JSON: {err}") from None
    return parse_plan(document, f"plan {path}")


def write_json_atomically(path: Path, document: dict[str, Any]) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(document_text(document))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
