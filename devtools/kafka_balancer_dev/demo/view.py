"""What the demo shows while it runs: one status line per refresh, read from Kubernetes and Kafka."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from kafka_balancer_dev.localbed.kube import KubeBed


def replica_counts(bootstrap: str, topic: str) -> dict[int, int]:
    """Broker → replicas of ``topic`` it holds, from Kafka's metadata."""
    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    counts: dict[int, int] = {}
    for partition in meta.topics[topic].partitions.values():
        for broker in partition.replicas:
            counts[broker] = counts.get(broker, 0) + 1
    return counts


def read(kube: KubeBed, namespace: str, kind: str, name: str) -> dict[str, Any]:
    got = kube.kubectl("get", kind, name, "-n", namespace, "-o", "json")
    if got.returncode != 0:
        return {}
    found: dict[str, Any] = json.loads(got.stdout)
    return found


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def goals_line(kube: KubeBed, namespace: str) -> str:
    got = kube.kubectl("get", "bg", "-n", namespace, "-o", "json")
    if got.returncode != 0:
        return ""
    parts = []
    for goal in json.loads(got.stdout)["items"]:
        satisfied = condition(goal, "Satisfied").get("status", "?")
        mark = {"True": "ok", "False": "violated"}.get(satisfied, "?")
        deviation = goal.get("status", {}).get("worstDeviation", "")
        parts.append(f"{goal['metadata']['name']} {mark}{f' ({deviation})' if deviation else ''}")
    return ", ".join(parts)


def broker_cell(broker: Mapping[str, Any], replicas: Mapping[int, int]) -> str:
    state = broker.get("state", "?")
    detail = ""
    if state == "Warming":
        detail = f" {broker['warmUpStep']}/{broker['warmUpSteps']} {broker['warmUpShare']}"
    count = replicas.get(int(broker["id"]), 0)
    return f"{broker['id']}({broker.get('rack', '-')}) {count}r {state}{detail}"


def status_line(pool: Mapping[str, Any], replicas: Mapping[int, int], goals: str) -> str:
    status = pool.get("status", {})
    plan = status.get("plan", {})
    balanced = condition(pool, "Balanced").get("status", "?")
    loads = "Spark-scored" if condition(pool, "LoadsScored").get("status") == "True" else "collected"
    done, total = plan.get("movesDone", 0), plan.get("movesTotal", 0)
    moved = plan.get("bytesToMove", 0) * done / total if total else 0
    brokers = " | ".join(broker_cell(b, replicas) for b in status.get("brokers", []))
    total_mb = plan.get("bytesToMove", 0) / 1e6
    return (
        f"balanced={balanced} moves {done}/{total} (~{moved / 1e6:.1f}/{total_mb:.1f} MB)"
        f" | loads {loads} | goals: {goals or '-'}\n    brokers: {brokers}"
    )
