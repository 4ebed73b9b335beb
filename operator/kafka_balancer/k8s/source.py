"""A pool's cluster as the kafka layer's collector sees it: metadata, racks and per-partition loads.

Loads come from two consecutive collector passes (one per reconcile); the first pass of a pool knows
only sizes, so until the second one network loads are zero.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafka_balancer.errors import KafkaOperationError
from kafka_balancer.kafka.collector import AdminReader, Observation, observe, samples_between
from kafka_balancer.kafka.snapshot_builder import Capacities, build_snapshot
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta

Loads = dict[tuple[str, int], PartitionLoad]
# The snapshot builder wants capacities; only its loads are used here (the pool's spec gives capacity).
_UNUSED_CAPACITY = Capacities({}, default=(1.0, 1.0, 1.0, 1.0))


class ClusterSource:
    """Remembers each pool's previous pass, keyed by the pool's uid."""

    def __init__(self) -> None:
        self._previous: dict[str, Observation] = {}

    def read(self, key: str, bootstrap: str, props: Mapping[str, str]) -> tuple[ClusterMetadata, Loads]:
        reader = AdminReader(bootstrap, props)
        try:
            current = observe(reader)
        finally:
            reader.close()
        previous = self._previous.get(key)
        self._previous[key] = current
        return metadata_of(current), loads_between(previous, current)

    def forget(self, key: str) -> None:
        self._previous.pop(key, None)


def metadata_of(obs: Observation) -> ClusterMetadata:
    brokers = {b.id: b.rack or "" for b in obs.brokers}
    # A replica on a broker missing from the metadata (offline) still counts: it must be planned around.
    for info in obs.partitions.values():
        for replica in info.replicas:
            brokers.setdefault(replica, "")
    partitions = tuple(
        PartitionMeta(topic, pid, info.replicas, info.leader)
        for (topic, pid), info in sorted(obs.partitions.items())
    )
    return ClusterMetadata(brokers, partitions)


def loads_between(previous: Observation | None, current: Observation) -> Loads:
    sizes_only = {tp: PartitionLoad(float(size), 0.0, 0.0, 0.0) for tp, size in current.sizes.items()}
    if previous is None or current.ts_ms <= previous.ts_ms:
        return sizes_only
    partition_samples, broker_samples = samples_between(previous, current)
    try:
        document = build_snapshot(
            current.brokers,
            _UNUSED_CAPACITY,
            partition_samples,
            broker_samples,
            current.ts_ms - previous.ts_ms + 1,
        )
    except KafkaOperationError:  # a replica on an offline broker: sizes are still right
        return sizes_only
    return {
        (p["topic"], p["partition"]): PartitionLoad(
            p["load"]["disk"],
            p["load"]["networkIn"],
            p["load"]["networkOut"],
            p["load"]["cpu"],
            p["load"]["followerCpu"],
        )
        for p in document["partitions"]
    }
