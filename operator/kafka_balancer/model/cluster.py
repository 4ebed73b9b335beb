"""Frozen value objects describing a cluster as the snapshot contract does."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class BrokerState(enum.Enum):
    ACTIVE = "active"
    DRAINING = "draining"
    # Found dead by self-healing: planned like a draining broker, but it sends nothing, so a move
    # copies from the partition's other replicas and it never leads.
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class LogDir:
    """One of a broker's log dirs (JBOD): where Kafka keeps the replicas it was told to keep there."""

    path: str
    capacity: float
    # False after a disk failure: the replicas on it are offline and must be placed elsewhere.
    online: bool = True


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str
    state: BrokerState
    # Capacities in snapshot units: disk bytes, network bytes/s, cpu cores; order of ``Resource``.
    capacity: tuple[float, float, float, float]
    # A warming broker counts as this share of a full broker in every distribution goal.
    warm_up_share: float = 1.0
    # Demoted (maintenance, rolling restart): it may hold replicas but leads none.
    demoted: bool = False
    # Empty when the snapshot does not describe log dirs: the planner then leaves them to Kafka.
    log_dirs: tuple[LogDir, ...] = ()

    @property
    def active(self) -> bool:
        """Not leaving: a draining or failed broker keeps no replica and receives none."""
        return self.state is BrokerState.ACTIVE


@dataclass(frozen=True, slots=True)
class PartitionLoad:
    disk: float
    network_in: float
    network_out: float
    cpu: float
    follower_cpu: float = 0.0


@dataclass(frozen=True, slots=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int
    load: PartitionLoad
    # False for a topic the pool excludes: its load counts, only a drain moves its replicas.
    movable: bool = True
    # The log dir of each replica, aligned with ``replicas``; empty when the snapshot has none.
    log_dirs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class Cluster:
    brokers: tuple[Broker, ...]
    partitions: tuple[Partition, ...]

    def stranded(self) -> tuple[Partition, ...]:
        """The partitions with no readable replica: each on a failed broker or an offline log dir.
        A reassignment copies from a readable replica, so none of theirs would ever finish; they
        are lost unless a broker or a disk comes back."""
        failed = {b.id for b in self.brokers if b.state is BrokerState.FAILED}
        offline = {(b.id, d.path) for b in self.brokers for d in b.log_dirs if not d.online}
        if not (failed or offline):
            return ()
        return tuple(
            p
            for p in self.partitions
            if all(
                b in failed or (b, path) in offline
                for b, path in zip(p.replicas, p.log_dirs or (None,) * len(p.replicas), strict=True)
            )
        )

    def broker(self, broker_id: int) -> Broker:
        for broker in self.brokers:
            if broker.id == broker_id:
                return broker
        raise KeyError(broker_id)
