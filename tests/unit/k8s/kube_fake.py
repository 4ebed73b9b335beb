"""An in-memory fake of the operator's KubePort, for the unit tests of the k8s orchestration only.

It keeps what the apiserver would: ConfigMaps with their owner and a resourceVersion, each custom
resource's status with merge-patch semantics (a None removes a field, lists are replaced whole),
Secrets, the Events posted, and Leases. A ConfigMap over 1 MiB is refused, as the apiserver does.
Conditional writes (ConfigMaps, Leases) are refused with
WriteConflict when the object moved past the version named, as the apiserver's 409 is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.errors import KubernetesError, KubernetesUnavailable, WriteConflict
from kafka_balancer.k8s.port import ConfigMapData, LeaseRecord, LeaseWrite, PoolId, SecretData, check_owned
from kafka_balancer.reconcile.events import Event

# The apiserver's limit on a ConfigMap's data and binaryData together.
MAX_CONFIG_MAP = 1024 * 1024


def merge_patch(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386, as the apiserver applies ``application/merge-patch+json``."""
    merged = dict(target)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping):
            merged[key] = merge_patch(merged.get(key) or {}, value)
        else:
            merged[key] = value
    return merged


@dataclass
class FakeKube:
    config_maps: dict[tuple[str, str], ConfigMapData] = field(default_factory=dict)
    owners: dict[tuple[str, str], PoolId] = field(default_factory=dict)
    # (plural, namespace, name) → status
    statuses: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    secrets: dict[tuple[str, str], dict[str, bytes]] = field(default_factory=dict)
    secret_annotations: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    events: list[tuple[PoolId, Event]] = field(default_factory=list)
    custom_objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    leases: dict[tuple[str, str], LeaseRecord] = field(default_factory=dict)
    # (namespace, name) → pod document, and each pod's log
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    stateful_sets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    pod_logs: dict[tuple[str, str], str] = field(default_factory=dict)
    # The next this many conditional ConfigMap writes find the apiserver away (an outage).
    unavailable: int = 0
    _version: int = 0

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def _precondition(self, what: str, current: str | None, version: str | None) -> None:
        """The apiserver's: create only what is absent, replace only the version named."""
        if current != version:
            raise WriteConflict(f"{what}: at version {current}, not {version}")

    def read_config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        found = self.config_maps.get((namespace, name))
        if found is None:
            return None
        owner = self.owners.get((namespace, name))
        return ConfigMapData(
            dict(found.data), dict(found.binary), found.resource_version, owner.uid if owner else ""
        )

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        found = self.read_config_map(namespace, name)
        if found is not None:
            check_owned(found, namespace, name, owner)
        size = sum(len(k) + len(v.encode()) for k, v in data.items())
        size += sum(len(k) + len(v) for k, v in (binary or {}).items())
        if size > MAX_CONFIG_MAP:
            raise KubernetesError(f"writing ConfigMap {namespace}/{name}: Unprocessable Entity")
        self.config_maps[(namespace, name)] = ConfigMapData(
            dict(data), dict(binary or {}), self._next_version()
        )
        self.owners[(namespace, name)] = owner

    def write_config_map_if(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None,
        version: str | None,
    ) -> str:
        if self.unavailable:
            self.unavailable -= 1
            raise KubernetesUnavailable(
                f"writing ConfigMap {namespace}/{name}: the Kubernetes API is unreachable"
            )
        found = self.config_maps.get((namespace, name))
        current = None if found is None else found.resource_version
        self._precondition(f"ConfigMap {namespace}/{name}", current, version)
        self.write_config_map(namespace, name, owner, data, binary)
        return self.config_maps[(namespace, name)].resource_version

    def delete_config_map(self, namespace: str, name: str) -> None:
        self.config_maps.pop((namespace, name), None)

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        key = (plural, namespace, name)
        self.statuses[key] = merge_patch(self.statuses.get(key, {}), status)

    def read_secret(self, namespace: str, name: str) -> SecretData | None:
        found = self.secrets.get((namespace, name))
        if found is None:
            return None
        return SecretData(dict(found), dict(self.secret_annotations.get((namespace, name), {})))

    def post_event(self, pool: PoolId, event: Event) -> None:
        self.events.append((pool, event))

    def create_custom_object(
        self, group: str, version: str, plural: str, namespace: str, manifest: Mapping[str, Any]
    ) -> bool:
        key = (plural, namespace, manifest["metadata"]["name"])
        if key in self.custom_objects:
            return False
        self.custom_objects[key] = dict(manifest)
        return True

    def read_custom_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        return self.custom_objects.get((plural, namespace, name))

    def list_custom_objects(
        self, group: str, version: str, plural: str, namespace: str, selector: str
    ) -> list[dict[str, Any]]:
        wanted = dict(term.split("=", 1) for term in selector.split(",") if term)
        return [
            found
            for (kind, ns, _), found in sorted(self.custom_objects.items())
            if kind == plural
            and ns == namespace
            and wanted.items() <= ((found.get("metadata") or {}).get("labels") or {}).items()
        ]

    def delete_custom_object(self, group: str, version: str, plural: str, namespace: str, name: str) -> None:
        self.custom_objects.pop((plural, namespace, name), None)

    def read_stateful_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.stateful_sets.get((namespace, name))

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.get((namespace, name))

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        wanted = dict(term.split("=", 1) for term in selector.split(","))
        return [
            pod
            for (ns, _), pod in self.pods.items()
            if ns == namespace and wanted.items() <= pod["metadata"].get("labels", {}).items()
        ]

    def delete_pod(self, namespace: str, name: str) -> None:
        self.pods.pop((namespace, name), None)

    def pod_log(self, namespace: str, name: str, lines: int) -> str:
        return "\n".join(self.pod_logs.get((namespace, name), "").splitlines()[-lines:])

    def read_lease(self, namespace: str, name: str) -> LeaseRecord | None:
        return self.leases.get((namespace, name))

    def write_lease(self, lease: LeaseWrite) -> str:
        key = (lease.namespace, lease.name)
        found = self.leases.get(key)
        self._precondition(
            f"Lease {lease.namespace}/{lease.name}", None if found is None else found.version, lease.version
        )
        written = LeaseRecord(lease.holder, lease.duration_s, lease.transitions, self._next_version())
        self.leases[key] = written
        return written.version

    # -- what tests read ------------------------------------------------------------------------------

    def pool_status(self, pool: PoolId) -> dict[str, Any]:
        return self.statuses.get(("brokerpools", pool.namespace, pool.name), {})

    def reasons(self) -> list[str]:
        return [event.reason for _, event in self.events]

    def message(self, reason: str) -> str:
        """The message of the last Event posted with ``reason``."""
        return next(event.message for _, event in reversed(self.events) if event.reason == reason)
