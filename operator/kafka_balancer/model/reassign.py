"""A cluster after a reassignment: what a plan file does to the model, checked against it."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.errors import InputError
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.plan import ReassignmentPlan


def apply_reassignments(cluster: Cluster, plan: ReassignmentPlan) -> Cluster:
    """Listed partitions get the new replicas with ``replicas[0]`` as leader (Kafka's reassignment
    JSON); InputError for an unknown partition or broker or a changed replication factor."""
    replicas = plan.targets()
    known = {(p.topic, p.partition) for p in cluster.partitions}
    brokers = {b.id for b in cluster.brokers}
    for (topic, number), new in replicas.items():
        name = f"{topic}-{number}"
        if (topic, number) not in known:
            raise InputError(f"plan: partition {name} is not in the snapshot")
        unknown = sorted(set(new) - brokers)
        if unknown:
            raise InputError(f"plan: {name} names broker(s) {unknown} that are not in the snapshot")
        if len(set(new)) != len(new) or not new:
            raise InputError(f"plan: {name}.replicas {list(new)} must list distinct brokers")
    partitions = []
    for p in cluster.partitions:
        planned = replicas.get((p.topic, p.partition))
        if planned is not None:
            if len(planned) != len(p.replicas):
                raise InputError(
                    f"plan: {p.name} changes the replication factor from {len(p.replicas)} to {len(planned)}"
                )
            p = replace(p, replicas=tuple(planned), leader=planned[0])
        partitions.append(p)
    return Cluster(cluster.brokers, tuple(partitions))
