"""A cluster after a reassignment: what a plan file does to the model, checked against it."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.errors import InputError
from kafka_balancer.model.cluster import Cluster, Partition
from kafka_balancer.model.plan import ANY_LOG_DIR, ReassignmentPlan


def apply_reassignments(cluster: Cluster, plan: ReassignmentPlan) -> Cluster:
    """Listed partitions get the new replicas with ``replicas[0]`` as leader (Kafka's reassignment
    JSON); InputError for an unknown partition or broker, a changed replication factor or a log dir
    its broker does not list (when the snapshot has log dirs)."""
    replicas = plan.targets()
    entries = {r.tp: r for r in plan}
    known = {(p.topic, p.partition) for p in cluster.partitions}
    brokers = {b.id for b in cluster.brokers}
    dirs_of = {b.id: {d.path for d in b.log_dirs} for b in cluster.brokers}
    for (topic, number), new in replicas.items():
        name = f"{topic}-{number}"
        if (topic, number) not in known:
            raise InputError(f"plan: partition {name} is not in the snapshot")
        unknown = sorted(set(new) - brokers)
        if unknown:
            raise InputError(f"plan: {name} names broker(s) {unknown} that are not in the snapshot")
        if len(set(new)) != len(new) or not new:
            raise InputError(f"plan: {name}.replicas {list(new)} must list distinct brokers")
        for b, path in zip(new, entries[(topic, number)].log_dirs or [ANY_LOG_DIR] * len(new), strict=True):
            if path != ANY_LOG_DIR and dirs_of[b] and path not in dirs_of[b]:
                raise InputError(f"plan: {name}.log_dirs: broker {b} has no log dir {path!r}")
    partitions = []
    for p in cluster.partitions:
        planned = replicas.get((p.topic, p.partition))
        if planned is not None:
            if len(planned) != len(p.replicas):
                raise InputError(
                    f"plan: {p.name} changes the replication factor from {len(p.replicas)} to {len(planned)}"
                )
            p = replace(
                p,
                replicas=tuple(planned),
                leader=planned[0],
                log_dirs=_log_dirs(p, entries[p.topic, p.partition].log_dirs, planned),
            )
        partitions.append(p)
    return Cluster(cluster.brokers, tuple(partitions))


def _log_dirs(p: Partition, target: tuple[str, ...], planned: tuple[int, ...]) -> tuple[str, ...]:
    """Each replica's dir after the plan: the plan's target, else the dir it stays in; empty when a
    replica arrives with ``any`` (Kafka picks its dir) or the snapshot has no log dirs."""
    if not p.log_dirs:
        return ()
    was = dict(zip(p.replicas, p.log_dirs, strict=True))
    dirs = [
        target[i] if target and target[i] != ANY_LOG_DIR else was.get(b, ANY_LOG_DIR)
        for i, b in enumerate(planned)
    ]
    return () if ANY_LOG_DIR in dirs else tuple(dirs)
