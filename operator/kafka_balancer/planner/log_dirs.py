"""The intra-broker pass: which of its log dirs (JBOD) each broker keeps each replica in.

It runs after the brokers are settled, on the snapshot's ``logDirs``. A replica on an offline log
dir has left its broker by then (the optimizer re-homes it like a drain: Kafka answers
AlterReplicaLogDirs on it with KAFKA_STORAGE_ERROR, so no dir of the same broker can take it), a
replica arriving on a broker goes to a dir the
intra-broker goals like, and the goals (``IntraBrokerDiskCapacity``, ``IntraBrokerDiskDistribution``)
move replicas between a broker's dirs. Those moves copy on the broker's own disks and send nothing
over the network, so they are counted apart. A broker's dirs are independent of every other
broker's, so each broker is planned on its own, greedily: a few dirs and plain loops.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kafka_balancer.errors import InfeasibleError
from kafka_balancer.goals.base import GoalStatus
from kafka_balancer.goals.registry import priority_order
from kafka_balancer.goals.spec import GoalFamily, GoalSpec
from kafka_balancer.model.cluster import Broker, Cluster, Partition
from kafka_balancer.model.math import FloatArray
from kafka_balancer.model.plan import ANY_LOG_DIR, Reassignment, ReassignmentPlan
from kafka_balancer.planner.plan import GoalOutcome

# Relative slack below which a dir counts as inside its band (float rounding, not load).
TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class LogDirPlan:
    reassignments: ReassignmentPlan
    goals: tuple[GoalOutcome, ...]
    # Bytes copied between the log dirs of one broker: disk I/O, no network.
    intra_broker_bytes: float


@dataclass(slots=True)
class _Replica:
    partition: int
    size: float
    # Its log dir before the plan; None for a replica arriving on the broker.
    origin: str | None
    # Where the plan puts it; None while unplaced (arriving), or left on an offline dir.
    dir: str | None
    movable: bool


def plan_log_dirs(cluster: Cluster, inter: ReassignmentPlan, specs: tuple[GoalSpec, ...]) -> LogDirPlan:
    """``inter``: the inter-broker plan; ``specs``: the intra-broker goals. Without log dirs in the
    snapshot the plan is ``inter`` unchanged (backward compatible)."""
    if not any(b.log_dirs for b in cluster.brokers):
        return LogDirPlan(inter, (), 0.0)
    goals = [s for s in priority_order(specs) if s.type.intra_broker]
    targets = inter.targets()
    final = [targets.get((p.topic, p.partition), _leader_first(p)) for p in cluster.partitions]
    before, after = _replicas(cluster, final)
    for broker in cluster.brokers:
        if not any(d.online for d in broker.log_dirs):
            # Every dir offline: the broker is down for Kafka; self-healing marks it failed and the
            # brokers' plan re-homes its replicas, there is no dir here to plan.
            continue
        _place(broker, after[broker.id], goals, cluster)
        _balance(broker, after[broker.id], goals)
    outcomes = tuple(
        GoalOutcome(
            g.label,
            g.type.value,
            g.hard,
            g.priority,
            _status(g, cluster.brokers, before),
            _status(g, cluster.brokers, after),
        )
        for g in goals
    )
    for outcome in outcomes:
        if outcome.hard and not outcome.after.satisfied:
            raise InfeasibleError(f"hard goal {outcome.label} cannot be satisfied: {outcome.after.detail}")
    return LogDirPlan(_with_log_dirs(cluster, inter, final, after), outcomes, _copied(after))


def _leader_first(p: Partition) -> tuple[int, ...]:
    return (p.leader, *(b for b in p.replicas if b != p.leader))


def _replicas(
    cluster: Cluster, final: list[tuple[int, ...]]
) -> tuple[dict[int, list[_Replica]], dict[int, list[_Replica]]]:
    """Each broker's replicas before the plan (in their dirs, for the goals' status before) and after
    the inter-broker plan: kept ones in their dirs (the inter-broker plan moved those on an offline
    dir off the broker, unless no replica of the partition is readable), arriving ones unplaced."""
    online = {b.id: {d.path for d in b.log_dirs if d.online} for b in cluster.brokers}
    before: dict[int, list[_Replica]] = {b.id: [] for b in cluster.brokers}
    after: dict[int, list[_Replica]] = {b.id: [] for b in cluster.brokers}
    for i, p in enumerate(cluster.partitions):
        origin = dict(zip(p.replicas, p.log_dirs, strict=True))
        for b, path in origin.items():
            before[b].append(_Replica(i, p.load.disk, path, path if path in online[b] else None, p.movable))
        for b in final[i]:
            kept = origin.get(b)
            # Kept on an offline dir: only a partition with no readable replica left, which stays.
            placed = kept if kept in online[b] else None
            after[b].append(_Replica(i, p.load.disk, kept, placed, p.movable))
    return before, after


def _used(broker: Broker, replicas: list[_Replica]) -> dict[str, float]:
    used = {d.path: 0.0 for d in broker.log_dirs if d.online}
    for r in replicas:
        if r.dir is not None:
            used[r.dir] += r.size
    return used


def _band(goal: GoalSpec, broker: Broker, used: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Each online dir's (least, most) bytes under ``goal``."""
    capacity = {d.path: d.capacity for d in broker.log_dirs if d.online}
    if goal.type.family is GoalFamily.CAPACITY:
        return {path: (0.0, cap * goal.threshold_percent / 100.0) for path, cap in capacity.items()}
    total_cap = sum(capacity.values())
    mean = sum(used.values()) / total_cap if total_cap > 0 else 0.0
    if mean * 100.0 < goal.threshold_percent:
        return {path: (0.0, float("inf")) for path in capacity}
    r = goal.range_percent / 100.0
    return {path: (mean * (1 - r) * cap, mean * (1 + r) * cap) for path, cap in capacity.items()}


def _violation(band: dict[str, tuple[float, float]], used: dict[str, float]) -> float:
    """Bytes outside the band, summed over the dirs, relative to the dirs' total (0 when it holds)."""
    outside = 0.0
    for path, (lo, hi) in band.items():
        slack = TOLERANCE * max(hi if hi != float("inf") else 0.0, 1.0)
        outside += max(used[path] - hi - slack, 0.0) + max(lo - used[path] - slack, 0.0)
    return outside


def _place(broker: Broker, replicas: list[_Replica], goals: list[GoalSpec], cluster: Cluster) -> None:
    """Put every unplaced replica in a dir: the online dir it leaves least full within the hard goals.
    Without intra-broker goals a replica arriving from another broker is left to Kafka (``any``)."""
    capacity = {d.path: d.capacity for d in broker.log_dirs if d.online}
    hard = [g for g in goals if g.hard]
    used = _used(broker, replicas)
    for r in sorted(replicas, key=lambda r: -r.size):
        if r.dir is not None or r.origin is not None or not goals:
            continue
        limits = [_band(g, broker, used) for g in hard]
        fits = [
            path
            for path in capacity
            if used[path] + r.size <= capacity[path]
            and all(used[path] + r.size <= limit[path][1] * (1 + TOLERANCE) for limit in limits)
        ]
        if not fits:
            p = cluster.partitions[r.partition]
            raise InfeasibleError(
                f"no online log dir of broker {broker.id} has room for {p.name} ({p.load.disk:.4g} bytes), "
                "which arrives on it"
            )
        r.dir = min(fits, key=lambda path: ((used[path] + r.size) / capacity[path], path))
        used[r.dir] += r.size


def _outside(lo: FloatArray, hi: FloatArray, used: FloatArray) -> FloatArray:
    """Bytes outside [lo, hi] per dir (the arrays broadcast), with float rounding forgiven."""
    slack = TOLERANCE * np.maximum(np.where(np.isfinite(hi), hi, 0.0), 1.0)
    return np.maximum(used - hi - slack, 0.0) + np.maximum(lo - used - slack, 0.0)


def _balance(broker: Broker, replicas: list[_Replica], goals: list[GoalSpec]) -> None:
    """Each goal in priority order moves replicas between the broker's dirs while that lowers its
    violation and raises no earlier or hard goal's; among such moves the one that lowers it most,
    then the one that copies fewest bytes (a replica placed by this plan moves for free).

    A move keeps the broker's total, so every band (a share of the broker's own mean, or of a dir's
    capacity) stays put and a move changes the violation at its two dirs only."""
    paths = [d.path for d in broker.log_dirs if d.online]
    if len(paths) < 2 or not goals:
        return
    column = {path: i for i, path in enumerate(paths)}
    size = np.array([r.size for r in replicas], dtype=np.float64)
    at = np.array([column[r.dir] if r.dir is not None else -1 for r in replicas], dtype=np.int64)
    # An offline or absent origin is -1: such a replica has moved already and moves again for free.
    origin = np.array([column.get(r.origin, -1) if r.origin else -1 for r in replicas], dtype=np.int64)
    movable = np.array([r.movable for r in replicas], dtype=bool) & (at >= 0) & (size > 0)
    used = np.bincount(at[at >= 0], weights=size[at >= 0], minlength=len(paths)).astype(np.float64)
    start = dict(zip(paths, used.tolist(), strict=True))
    bands = []
    for goal in goals:
        band = _band(goal, broker, start)
        bands.append((np.array([band[p][0] for p in paths]), np.array([band[p][1] for p in paths])))
    for i, (lo, hi) in enumerate(bands):
        guards = bands[:i] + [b for j, b in enumerate(bands) if j > i and goals[j].hard]
        for _ in range(len(replicas) + 1):
            now = _outside(lo, hi, used)
            if now.sum() <= 0.0:
                break
            best: tuple[float, float, int, int] | None = None
            for src in range(len(paths)):
                ks = np.nonzero(movable & (at == src))[0]
                for dst in range(len(paths)):
                    if dst == src or not len(ks):
                        continue
                    x = size[ks]
                    change = (
                        _outside(lo[src], hi[src], used[src] - x)
                        + _outside(lo[dst], hi[dst], used[dst] + x)
                        - now[src]
                        - now[dst]
                    )
                    ok = change < -TOLERANCE * np.maximum(x, 1.0)
                    for glo, ghi in guards:
                        was = _outside(glo, ghi, used)
                        worse = (
                            _outside(glo[src], ghi[src], used[src] - x)
                            + _outside(glo[dst], ghi[dst], used[dst] + x)
                            - was[src]
                            - was[dst]
                        )
                        ok &= worse <= 0.0
                    if not ok.any():
                        continue
                    cost = np.where(origin[ks] == src, x, 0.0)
                    pick = np.nonzero(ok)[0]
                    k = int(pick[np.lexsort((cost[pick], change[pick]))[0]])
                    key = (float(change[k]), float(cost[k]), int(ks[k]), dst)
                    if best is None or key[:2] < best[:2]:
                        best = key
            if best is None:
                break
            _, _, k, dst = best
            used[at[k]] -= size[k]
            used[dst] += size[k]
            at[k] = dst
    for r, where in zip(replicas, at.tolist(), strict=True):
        if where >= 0:
            r.dir = paths[where]


def _status(goal: GoalSpec, brokers: tuple[Broker, ...], placed: dict[int, list[_Replica]]) -> GoalStatus:
    worst = 0.0
    outside: list[str] = []
    for broker in brokers:
        used = _used(broker, placed[broker.id])
        capacity = {d.path: d.capacity for d in broker.log_dirs if d.online}
        band = _band(goal, broker, used)
        if goal.type.family is GoalFamily.CAPACITY:
            for path, cap in capacity.items():
                worst = max(worst, 100.0 * used[path] / cap)
        else:
            total = sum(used.values()) / max(sum(capacity.values()), 1e-300)
            for path, cap in capacity.items():
                if total > 0:
                    worst = max(worst, 100.0 * abs(used[path] / cap - total) / total)
        outside += [
            f"{broker.id}:{path}" for path in band if _violation({path: band[path]}, {path: used[path]}) > 0.0
        ]
    detail = f"log dirs outside the band: {', '.join(outside)}" if outside else ""
    return GoalStatus(not outside, worst, detail)


def _copied(after: dict[int, list[_Replica]]) -> float:
    return sum(
        r.size
        for replicas in after.values()
        for r in replicas
        if r.dir is not None and r.origin not in (None, r.dir)
    )


def _with_log_dirs(
    cluster: Cluster, inter: ReassignmentPlan, final: list[tuple[int, ...]], after: dict[int, list[_Replica]]
) -> ReassignmentPlan:
    """``inter`` with ``log_dirs`` on every partition a replica of which changes dir, and the
    partitions only a log-dir move changes appended (same replicas)."""
    targets: dict[tuple[int, int], str] = {
        (r.partition, broker): r.dir
        for broker, replicas in after.items()
        for r in replicas
        if r.dir is not None and r.dir != r.origin
    }
    by_partition: dict[int, tuple[str, ...]] = {}
    for i, replicas in enumerate(final):
        dirs = tuple(targets.get((i, b), ANY_LOG_DIR) for b in replicas)
        if any(d != ANY_LOG_DIR for d in dirs):
            by_partition[i] = dirs
    index = {(p.topic, p.partition): i for i, p in enumerate(cluster.partitions)}
    listed = []
    for r in inter:
        i = index[r.tp]
        listed.append(replace(r, log_dirs=by_partition.pop(i)) if i in by_partition else r)
    for i, dirs in sorted(by_partition.items()):
        p = cluster.partitions[i]
        listed.append(Reassignment(p.topic, p.partition, final[i], dirs))
    return ReassignmentPlan(tuple(listed))
