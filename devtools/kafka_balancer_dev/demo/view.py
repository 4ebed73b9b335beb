"""What the demo shows while it runs: one status line per refresh, from the pool's status (one read,
so its parts agree) and Kafka's replica counts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from confluent_kafka.admin import AdminClient

from kafka_balancer.kafka.client_log import served, with_client_log
from kafka_balancer_dev.localbed.kube import KubeBed


def replica_counts(bootstrap: str, topic: str) -> dict[int, int]:
    """Broker → replicas of ``topic`` it holds, from Kafka's metadata."""
    admin = AdminClient(with_client_log({"bootstrap.servers": bootstrap}))
    meta = served(admin).list_topics(topic=topic, timeout=10)
    served(admin)  # what the call logged, before the client goes
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


def goals_text(pool: Mapping[str, Any]) -> str:
    """The goals as the pool's own status tells them (``status.goals``): written in the same patch as
    its Balanced condition, from the same evaluation, so the line never calls a goal violated in a
    pool it calls balanced. (The BalancerGoal objects' status is patched after the pool's, one goal
    at a time: read separately, a refresh can pair a new Balanced=True with a goal's old verdict.)"""
    parts = []
    for goal in pool.get("status", {}).get("goals", []):
        mark = "ok" if goal.get("satisfied") else "violated"
        deviation = goal.get("worstDeviation", "")
        parts.append(f"{goal['name']} {mark}{f' ({deviation})' if deviation else ''}")
    return ", ".join(parts)


def broker_cell(broker: Mapping[str, Any], replicas: Mapping[int, int]) -> str:
    state = broker.get("state", "?")
    detail = ""
    if state == "Warming":
        detail = f" {broker['warmUpStep']}/{broker['warmUpSteps']} {broker['warmUpShare']}"
    count = replicas.get(int(broker["id"]), 0)
    return f"{broker['id']}({broker.get('rack', '-')}) {count}r {state}{detail}"


def status_line(pool: Mapping[str, Any], replicas: Mapping[int, int]) -> str:
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
        f" | loads {loads} | goals: {goals_text(pool) or '-'}\n    brokers: {brokers}"
    )
