"""An independent reading of docs/design.md's contracts, written from the text, not from the planner.

Plain Python loops on the JSON documents (snapshot, plan) so that a bug in the planner's numpy
code cannot hide in a shared helper.
"""

from __future__ import annotations

import math
from typing import Any

RESOURCES = ("disk", "networkIn", "networkOut", "cpu")


def apply_plan(snapshot: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """The snapshot after the plan: listed partitions get the new replicas, leader = replicas[0]."""
    new = {(p["topic"], p["partition"]): p["replicas"] for p in plan["partitions"]}
    partitions = []
    for p in snapshot["partitions"]:
        key = (p["topic"], p["partition"])
        if key in new:
            p = {**p, "replicas": list(new[key]), "leader": new[key][0]}
        partitions.append(p)
    return {**snapshot, "partitions": partitions}


def broker_loads(snapshot: dict[str, Any]) -> dict[int, dict[str, float]]:
    loads = {b["id"]: dict.fromkeys((*RESOURCES, "replicas", "leaders"), 0.0) for b in snapshot["brokers"]}
    for p in snapshot["partitions"]:
        load = p["load"]
        rf = len(p["replicas"])
        leader = p.get("leader", p["replicas"][0])
        for b in p["replicas"]:
            row = loads[b]
            row["disk"] += load["disk"]
            row["networkIn"] += load["networkIn"]
            row["replicas"] += 1
            if b == leader:
                row["networkOut"] += load["networkOut"] + load["networkIn"] * (rf - 1)
                row["cpu"] += load["cpu"]
                row["leaders"] += 1
            else:
                row["cpu"] += load.get("followerCpu", 0.0)
    return loads


def active_brokers(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in snapshot["brokers"] if b.get("state", "active") == "active"]


def share(broker: dict[str, Any]) -> float:
    return float(broker.get("warmUpShare", 1.0))


def resource_band_violations(
    snapshot: dict[str, Any], resource: str, range_percent: int, tolerance: float = 1e-7
) -> list[int]:
    """Active brokers whose utilisation is outside mean × (1 ± range) (capacity-weighted mean)."""
    loads = broker_loads(snapshot)
    active = active_brokers(snapshot)
    total = sum(row[resource] for row in loads.values())
    capacity = sum(b["capacity"][resource] * share(b) for b in active)
    mean = total / capacity
    r = range_percent / 100.0
    bad = []
    for b in active:
        util = loads[b["id"]][resource] / (b["capacity"][resource] * share(b))
        if util > mean * (1 + r) * (1 + tolerance) or util < mean * (1 - r) * (1 - tolerance):
            bad.append(b["id"])
    return bad


def count_band_violations(snapshot: dict[str, Any], what: str, range_percent: int) -> list[int]:
    """``what``: "replicas" or "leaders"; band floor/ceil of expected × (1 ± range). A demoted broker
    leads none, so leaders are expected of the other active brokers only."""
    loads = broker_loads(snapshot)
    active = active_brokers(snapshot)
    if what == "leaders":
        active = [b for b in active if not b.get("demoted", False)]
    total = sum(row[what] for row in loads.values())
    weight = sum(share(b) for b in active)
    r = range_percent / 100.0
    bad = []
    for b in active:
        expected = total * share(b) / weight
        lo = math.floor(expected * (1 - r) + 1e-9)
        hi = math.ceil(expected * (1 + r) - 1e-9)
        if not lo <= loads[b["id"]][what] <= hi:
            bad.append(b["id"])
    return bad


def rack_violations(snapshot: dict[str, Any]) -> list[tuple[str, int]]:
    rack_of = {b["id"]: b.get("rack") or f"broker-{b['id']}" for b in snapshot["brokers"]}
    n_racks = len({rack_of[b["id"]] for b in active_brokers(snapshot)})
    bad = []
    for p in snapshot["partitions"]:
        limit = math.ceil(len(p["replicas"]) / n_racks)
        racks = [rack_of[b] for b in p["replicas"]]
        if any(racks.count(r) > limit for r in set(racks)):
            bad.append((p["topic"], p["partition"]))
    return bad


def capacity_violations(snapshot: dict[str, Any], resource: str, threshold_percent: int) -> list[int]:
    loads = broker_loads(snapshot)
    return [
        b["id"]
        for b in snapshot["brokers"]
        if loads[b["id"]][resource] > b["capacity"][resource] * threshold_percent / 100.0 * (1 + 1e-9)
    ]


def bytes_moved(snapshot: dict[str, Any], plan: dict[str, Any]) -> float:
    before = {(p["topic"], p["partition"]): p for p in snapshot["partitions"]}
    moved = 0.0
    for p in plan["partitions"]:
        old = before[(p["topic"], p["partition"])]
        moved += len(set(p["replicas"]) - set(old["replicas"])) * old["load"]["disk"]
    return moved


def log_dirs_after(snapshot: dict[str, Any], plan: dict[str, Any]) -> dict[tuple[str, int, int], str | None]:
    """(topic, partition, broker) → the log dir of that replica after the plan; None where the plan
    leaves an arriving replica's dir to Kafka ("any")."""
    new = {(p["topic"], p["partition"]): p for p in plan["partitions"]}
    out: dict[tuple[str, int, int], str | None] = {}
    for p in snapshot["partitions"]:
        was = dict(zip(p["replicas"], p["logDirs"], strict=True))
        entry = new.get((p["topic"], p["partition"]))
        replicas = entry["replicas"] if entry else p["replicas"]
        targets = entry.get("log_dirs", ["any"] * len(replicas)) if entry else ["any"] * len(replicas)
        for b, target in zip(replicas, targets, strict=True):
            out[(p["topic"], p["partition"], b)] = target if target != "any" else was.get(b)
    return out


def log_dir_usage(snapshot: dict[str, Any], plan: dict[str, Any]) -> dict[tuple[int, str], float]:
    """(broker, log dir) → bytes in it after the plan, every dir of every broker listed."""
    disk = {(p["topic"], p["partition"]): p["load"]["disk"] for p in snapshot["partitions"]}
    usage = {(b["id"], d["path"]): 0.0 for b in snapshot["brokers"] for d in b["logDirs"]}
    for (topic, number, b), path in log_dirs_after(snapshot, plan).items():
        if path is not None:
            usage[(b, path)] += disk[(topic, number)]
    return usage


def intra_broker_bytes(snapshot: dict[str, Any], plan: dict[str, Any]) -> float:
    """Bytes of replicas that stay on their broker but change log dir."""
    after = log_dirs_after(snapshot, plan)
    moved = 0.0
    for p in snapshot["partitions"]:
        for b, path in zip(p["replicas"], p["logDirs"], strict=True):
            new = after.get((p["topic"], p["partition"], b))
            if new is not None and new != path:
                moved += p["load"]["disk"]
    return moved
