"""Fencing: the one place every Kafka write of an execution passes an ownership check.

The executor, the throttle and cancel code write through an :class:`AdminPort`. Wrapping that port
checks the :class:`Fence` right before each write (reassignments, configs, leader elections), so a
process that lost ownership of the execution (a frozen or partitioned operator replica) cannot
change the cluster again, whatever step it was in when it lost it. Reads are not fenced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from kafka_balancer.kafka.admin import LogDirState, OngoingReassignment, PartitionState, Tp
from kafka_balancer.kafka.port import AdminPort


class Fence(Protocol):
    def check(self) -> None:
        """Return if this process still owns the execution; raise ExecutionFenced otherwise."""


class Fences:
    """Several fences as one: every one of them must hold (a pool's lease and its Kafka cluster's)."""

    def __init__(self, *fences: Fence) -> None:
        self.fences = fences

    def check(self) -> None:
        for fence in self.fences:
            fence.check()


class FencedAdmin:
    """An :class:`AdminPort` that checks ``fence`` before every write it passes on to ``admin``."""

    def __init__(self, admin: AdminPort, fence: Fence) -> None:
        self.admin = admin
        self.fence = fence

    def cluster_id(self) -> str:
        return self.admin.cluster_id()

    def broker_ids(self) -> frozenset[int]:
        return self.admin.broker_ids()

    def broker_racks(self) -> dict[int, str | None]:
        return self.admin.broker_racks()

    def partitions(self, topics: Iterable[str] | None = None) -> dict[Tp, PartitionState]:
        return self.admin.partitions(topics)

    def hidden_topics(self) -> str | None:
        return self.admin.hidden_topics()

    def partition_sizes(
        self, partitions: Iterable[Tp], brokers: Iterable[int] | None = None
    ) -> dict[tuple[str, int, int], int]:
        return self.admin.partition_sizes(partitions, brokers)

    def reassignments(self) -> dict[Tp, OngoingReassignment]:
        return self.admin.reassignments()

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[LogDirState, ...]]:
        return self.admin.log_dirs(brokers)

    def alter_replica_log_dirs(
        self, targets: Mapping[tuple[str, int, int], str]
    ) -> dict[tuple[str, int, int], str]:
        self.fence.check()
        return self.admin.alter_replica_log_dirs(targets)

    def dynamic_configs(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, str]]:
        return self.admin.dynamic_configs(kind, names)

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        return self.admin.min_insync_replicas(topics)

    def broker_config_names(self, broker: int) -> frozenset[str]:
        return self.admin.broker_config_names(broker)

    def default_broker_configs(self, broker: int) -> dict[str, str]:
        return self.admin.default_broker_configs(broker)

    def alter_reassignments(self, targets: Mapping[Tp, tuple[int, ...] | None]) -> dict[Tp, str]:
        self.fence.check()
        return self.admin.alter_reassignments(targets)

    def alter_configs(
        self, kind: str, name: str, set_: Mapping[str, str], delete: Iterable[str] = ()
    ) -> None:
        self.fence.check()
        self.admin.alter_configs(kind, name, set_, delete)

    def elect_preferred_leaders(self, partitions: Iterable[Tp]) -> dict[Tp, str]:
        self.fence.check()
        return self.admin.elect_preferred_leaders(partitions)
