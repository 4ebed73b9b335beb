"""The admin operations the executor needs; :class:`~kafka_balancer.kafka.admin.KafkaAdmin` provides them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from kafka_balancer.kafka.admin import LogDirState, OngoingReassignment, PartitionState, Tp


class AdminPort(Protocol):
    def broker_ids(self) -> frozenset[int]: ...

    def broker_racks(self) -> dict[int, str | None]: ...

    def partitions(self, topics: Iterable[str] | None = None) -> dict[Tp, PartitionState]: ...

    def partition_sizes(
        self, partitions: Iterable[Tp], brokers: Iterable[int] | None = None
    ) -> dict[tuple[str, int, int], int]: ...

    def reassignments(self) -> dict[Tp, OngoingReassignment]: ...

    def alter_reassignments(self, targets: Mapping[Tp, tuple[int, ...] | None]) -> dict[Tp, str]: ...

    def dynamic_configs(self, kind: str, names: Iterable[str]) -> dict[str, dict[str, str]]: ...

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]: ...

    def alter_configs(
        self, kind: str, name: str, set_: Mapping[str, str], delete: Iterable[str] = ()
    ) -> None: ...

    def elect_preferred_leaders(self, partitions: Iterable[Tp]) -> dict[Tp, str]: ...

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[LogDirState, ...]]: ...

    def alter_replica_log_dirs(
        self, targets: Mapping[tuple[str, int, int], str]
    ) -> dict[tuple[str, int, int], str]: ...
