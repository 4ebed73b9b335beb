"""The Kubernetes calls the operator's orchestration makes, as a protocol.

:class:`~kafka_balancer.k8s.kube.Kube` provides them against the apiserver; an in-memory fake
(tests/unit/k8s/kube_fake.py) provides them to the unit tests of the orchestration, as
:class:`~kafka_balancer.kafka.port.AdminPort` does for the executor. Every call is blocking: the
services run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafka_balancer.errors import ForeignConfigMap
from kafka_balancer.reconcile.events import Event


@dataclass(frozen=True, slots=True)
class PoolId:
    """Which BrokerPool object: what owns its ConfigMaps and names it in logs and metrics."""

    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        """``namespace/name``: the label of the pool's metrics and log lines."""
        return f"{self.namespace}/{self.name}"


def check_owned(found: ConfigMapData, namespace: str, name: str, owner: PoolId) -> None:
    """:class:`ForeignConfigMap` unless ``found`` is the pool's own: the operator never reads as its
    record, nor overwrites, a ConfigMap someone else made under one of its names."""
    if found.owner_uid != owner.uid:
        raise ForeignConfigMap(
            f"ConfigMap {namespace}/{name} was not made by the operator for BrokerPool {owner.name} (its "
            "controller ownerReference does not name the pool): it is neither read nor overwritten; "
            "delete or rename it (a pool deleted and made again waits for Kubernetes to delete the old "
            "pool's ConfigMaps)"
        )


@dataclass(frozen=True, slots=True)
class SecretData:
    """A Secret as the operator may use it: its data, decoded, and its annotations (whose
    ``kafkabalancer.io/pools`` says which pools its writer meant it for: k8s/pool_secrets.py)."""

    data: Mapping[str, bytes]
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigMapData:
    """A ConfigMap as read: ``data``, the decoded ``binaryData``, and the version that was read
    (the precondition of a conditional write)."""

    data: dict[str, str]
    binary: dict[str, bytes] = field(default_factory=dict)
    resource_version: str = ""
    # The uid of the object whose controller ownerReference it carries ("" for none): a pool's own
    # ConfigMaps name that pool (see check_owned).
    owner_uid: str = ""


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A coordination.k8s.io/v1 Lease as the execution lease reads it."""

    holder: str | None
    duration_s: int
    transitions: int
    version: str  # metadata.resourceVersion: the precondition of the next write


@dataclass(frozen=True, slots=True)
class LeaseWrite:
    """One write of a pool's execution Lease: which Lease, what it says, and the version it must
    still be at (None: create it, as only absent)."""

    namespace: str
    name: str
    owner: PoolId | None  # the pool it belongs to; None for a Kafka cluster's lease
    holder: str | None  # None hands the lease back
    duration_s: int
    transitions: int
    version: str | None


class KubePort(Protocol):
    def read_config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        """None when the ConfigMap does not exist."""
        ...

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        """Create or replace; owned by the pool, so deleting the pool deletes it."""
        ...

    def write_config_map_if(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None,
        version: str | None,
    ) -> str:
        """Replace the ConfigMap only if it is still at ``version`` (None: only create it); returns its
        new version. :class:`~kafka_balancer.errors.WriteConflict` when someone wrote it since (or
        created it first)."""
        ...

    def delete_config_map(self, namespace: str, name: str) -> None:
        """Gone already is fine."""
        ...

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """A merge patch of our custom resource's status; an object deleted meanwhile is ignored."""
        ...

    def read_secret(self, namespace: str, name: str) -> SecretData | None:
        """The Secret's data, decoded, and annotations; None when it does not exist. Never logged."""
        ...

    def post_event(self, pool: PoolId, event: Event) -> None:
        """A Kubernetes Event about the pool (plan ready, execution started/finished/failed, ...)."""
        ...

    def create_custom_object(
        self, group: str, version: str, plural: str, namespace: str, manifest: Mapping[str, Any]
    ) -> bool:
        """False when an object of that name exists already (it is left as it is)."""
        ...

    def read_custom_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        """None when it does not exist."""
        ...

    def delete_custom_object(self, group: str, version: str, plural: str, namespace: str, name: str) -> None:
        """Gone already is fine."""
        ...

    def list_custom_objects(
        self, group: str, version: str, plural: str, namespace: str, selector: str
    ) -> list[dict[str, Any]]:
        """The objects whose labels match ``selector``; none when the resource is not installed."""
        ...

    def read_stateful_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The StatefulSet as the API returns it (camelCase keys); None when it does not exist."""
        ...

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod as the API returns it (camelCase keys); None when it does not exist."""
        ...

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        """The pods matching the label selector, as the API returns them."""
        ...

    def delete_pod(self, namespace: str, name: str) -> None:
        """Gone already is fine; what the pod owns (Spark's executors) is garbage-collected."""
        ...

    def pod_log(self, namespace: str, name: str, lines: int) -> str:
        """The last ``lines`` lines of the pod's log; empty when it has none."""
        ...

    def read_lease(self, namespace: str, name: str) -> LeaseRecord | None:
        """None when the Lease does not exist."""
        ...

    def write_lease(self, lease: LeaseWrite) -> str:
        """Create (``lease.version`` None) or conditionally replace the pool's Lease; returns its new version.
        :class:`~kafka_balancer.errors.WriteConflict` when another process wrote it since ``version``."""
        ...
