"""The operator's :class:`~kafka_balancer.k8s.port.KubePort` against the apiserver: ConfigMaps owned by a
pool (also written conditionally on their resourceVersion), CR status, Secrets, Events,
SparkApplications and the pools' execution Leases. An apiserver that does not answer (connection
errors, 5xx, 429) raises :class:`~kafka_balancer.errors.KubernetesUnavailable`, which callers ride out.

Synchronous (the official client); the services run them in a worker thread.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import kopf
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kafka_balancer.api import API_VERSION, GROUP, VERSION
from kafka_balancer.errors import InputError, KubernetesError, KubernetesUnavailable, WriteConflict
from kafka_balancer.k8s.port import ConfigMapData, LeaseRecord, LeaseWrite, PoolId, SecretData, check_owned
from kafka_balancer.reconcile.events import Event

MANAGED_BY = {"app.kubernetes.io/managed-by": "kafka-balancer"}
# Every call gives up after this long instead of hanging on a dead connection: the callers retry
# (the next pass, the next step), and for an execution the lease deadline decides how long that may go
# on.
REQUEST_TIMEOUT_S = 10.0


@contextmanager
def _transport(what: str) -> Iterator[None]:
    """Connection failures and the apiserver's own 5xx/429 as :class:`KubernetesUnavailable`."""
    try:
        yield
    except ApiException as err:
        if err.status is not None and (err.status >= 500 or err.status == 429):
            raise KubernetesUnavailable(f"{what}: the Kubernetes API answered {err.status}") from err
        raise
    except (urllib3.exceptions.HTTPError, OSError) as err:
        raise KubernetesUnavailable(f"{what}: the Kubernetes API is unreachable ({err})") from err


class Kube:
    """One API client for the whole operator, configured like kubectl (kubeconfig) or in-cluster."""

    def __init__(self, kubeconfig: str | None, api: client.ApiClient | None = None) -> None:
        if api is None and kubeconfig:
            api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        elif api is None:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            api = client.ApiClient()
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.coordination = client.CoordinationV1Api(api)
        self.admission = client.AdmissionregistrationV1Api(api)
        self.apps = client.AppsV1Api(api)

    @classmethod
    def like_kubectl(cls, kubeconfig: str | None) -> tuple[Kube, str]:
        """The client kubectl would use (``kubeconfig``, else ``$KUBECONFIG`` or ``~/.kube/config``,
        its current context) and that context's namespace."""
        try:
            api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
            _, current = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        except (config.ConfigException, OSError) as err:
            raise InputError(f"--kubeconfig: {err}") from None
        namespace = (current.get("context") or {}).get("namespace") or "default"
        return cls(kubeconfig, api), str(namespace)

    # -- ConfigMaps owned by a pool -----------------------------------------------------------------

    def read_config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        try:
            with _transport(f"reading ConfigMap {namespace}/{name}"):
                found = self.core.read_namespaced_config_map(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading ConfigMap {namespace}/{name}: {err.reason}") from err
        binary = {key: base64.b64decode(value) for key, value in (found.binary_data or {}).items()}
        references = found.metadata.owner_references if found.metadata is not None else None
        controllers = [r.uid for r in (references or []) if r.controller]
        return ConfigMapData(dict(found.data or {}), binary, _version(found), (controllers or [""])[0])

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
        new version. Raises :class:`WriteConflict` when someone wrote it since (or created it first)."""
        body = _config_map_body(namespace, name, owner, data, binary)
        what = f"writing ConfigMap {namespace}/{name}"
        try:
            with _transport(what):
                if version is None:
                    written = self.core.create_namespaced_config_map(
                        namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                    )
                else:
                    body["metadata"]["resourceVersion"] = version
                    written = self.core.replace_namespaced_config_map(
                        name, namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                    )
        except ApiException as err:
            if err.status in (404, 409):
                raise WriteConflict(f"{what}: it changed since version {version} was read") from err
            raise KubernetesError(f"{what}: {err.reason}") from err
        return _version(written)

    def delete_config_map(self, namespace: str, name: str) -> None:
        try:
            with _transport(f"deleting ConfigMap {namespace}/{name}"):
                self.core.delete_namespaced_config_map(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"deleting ConfigMap {namespace}/{name}: {err.reason}") from err

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        """Create, or replace the pool's own (:class:`ForeignConfigMap` for one someone else made);
        the pool owns it, so deleting the pool deletes it."""
        body = _config_map_body(namespace, name, owner, data, binary)
        found = self.read_config_map(namespace, name)
        if found is None:
            try:
                with _transport(f"creating ConfigMap {namespace}/{name}"):
                    self.core.create_namespaced_config_map(
                        namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                    )
                return
            except ApiException as err:
                if err.status != 409:
                    raise KubernetesError(f"creating ConfigMap {namespace}/{name}: {err.reason}") from err
                found = self.read_config_map(namespace, name)  # made meanwhile: by whom?
                if found is None:
                    raise KubernetesError(f"creating ConfigMap {namespace}/{name}: {err.reason}") from err
        check_owned(found, namespace, name, owner)
        # Conditional on what was checked: nobody can swap in a ConfigMap of theirs in between.
        body["metadata"]["resourceVersion"] = found.resource_version
        try:
            with _transport(f"writing ConfigMap {namespace}/{name}"):
                self.core.replace_namespaced_config_map(
                    name, namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"writing ConfigMap {namespace}/{name}: {err.reason}") from err

    # -- custom resources ---------------------------------------------------------------------------

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        try:
            with _transport(f"patching {plural} {namespace}/{name} status"):
                self.custom.patch_namespaced_custom_object_status(
                    GROUP,
                    VERSION,
                    namespace,
                    plural,
                    name,
                    {"status": dict(status)},
                    _request_timeout=REQUEST_TIMEOUT_S,
                )
        except ApiException as err:
            if err.status == 404:  # deleted meanwhile: nothing to report on
                return
            raise KubernetesError(f"patching {plural} {namespace}/{name} status: {err.reason}") from err

    def list_pools(self, namespace: str) -> list[dict[str, Any]]:
        try:
            with _transport(f"listing BrokerPools in {namespace}"):
                found: Any = self.custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, "brokerpools", _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"listing BrokerPools in {namespace}: {err.reason}") from err
        return list(found.get("items") or [])

    def read_pool(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.read_custom_object(GROUP, VERSION, "brokerpools", namespace, name)

    def list_every_pool(self) -> list[dict[str, Any]]:
        try:
            with _transport("listing BrokerPools"):
                found: Any = self.custom.list_cluster_custom_object(
                    GROUP, VERSION, "brokerpools", _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"listing BrokerPools in every namespace: {err.reason}") from err
        return list(found.get("items") or [])

    def patch_pool_spec(self, namespace: str, name: str, spec: Mapping[str, Any]) -> None:
        patch = {"spec": dict(spec)}
        try:
            with _transport(f"patching BrokerPool {namespace}/{name}"):
                self.custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, "brokerpools", name, patch, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"patching BrokerPool {namespace}/{name}: {err.reason}") from err

    def annotate_pool(self, namespace: str, name: str, key: str, value: str | None) -> None:
        """Set (or, with None, remove) one annotation of a BrokerPool."""
        patch = {"metadata": {"annotations": {key: value}}}
        try:
            with _transport(f"annotating BrokerPool {namespace}/{name}"):
                self.custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, "brokerpools", name, patch, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"annotating BrokerPool {namespace}/{name}: {err.reason}") from err

    # -- the scale-down webhook's configuration -----------------------------------------------------

    def scope_webhook(self, configuration: str, conditions: list[dict[str, str]]) -> bool:
        """Give every webhook of the named ValidatingWebhookConfiguration (the chart's) these
        matchConditions, unless it has them already (a ``helm upgrade`` puts the chart's back):
        replaced on the version read, so a concurrent change is not lost. Whether it changed."""
        what = f"updating ValidatingWebhookConfiguration {configuration}"
        wanted = [client.V1MatchCondition(name=c["name"], expression=c["expression"]) for c in conditions]
        try:
            with _transport(what):
                found: Any = self.admission.read_validating_webhook_configuration(
                    configuration, _request_timeout=REQUEST_TIMEOUT_S
                )
                webhooks = found.webhooks or []
                if all(webhook.match_conditions == wanted for webhook in webhooks):
                    return False
                for webhook in webhooks:
                    webhook.match_conditions = wanted
                self.admission.replace_validating_webhook_configuration(
                    configuration, found, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"{what}: {err.reason}") from err
        return True

    # -- Secrets ------------------------------------------------------------------------------------

    def read_secret(self, namespace: str, name: str) -> SecretData | None:
        try:
            with _transport(f"reading Secret {namespace}/{name}"):
                secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading Secret {namespace}/{name}: {err.reason}") from err
        data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
        annotations = secret.metadata.annotations if secret.metadata is not None else None
        return SecretData(data, dict(annotations or {}))

    # -- Events -------------------------------------------------------------------------------------

    def post_event(self, pool: PoolId, event: Event) -> None:
        # kopf's poster (queued, retried with backoff), so our Events look like kopf's own; it is
        # reachable from the worker threads the services start with asyncio.to_thread (context copied).
        reference: Any = {
            "apiVersion": API_VERSION,
            "kind": "BrokerPool",
            "metadata": {"namespace": pool.namespace, "name": pool.name, "uid": pool.uid},
        }
        kopf.event(reference, type=event.type, reason=event.reason, message=event.message)

    # -- other custom resources (SparkApplications) -------------------------------------------------

    def create_custom_object(
        self, group: str, version: str, plural: str, namespace: str, manifest: Mapping[str, Any]
    ) -> bool:
        try:
            with _transport(f"creating {manifest['kind']} {namespace}/{manifest['metadata']['name']}"):
                self.custom.create_namespaced_custom_object(
                    group, version, namespace, plural, dict(manifest), _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status == 409:
                return False
            name = manifest["metadata"]["name"]
            raise KubernetesError(f"creating {manifest['kind']} {namespace}/{name}: {err.reason}") from err
        return True

    def read_custom_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        try:
            with _transport(f"reading {plural} {namespace}/{name}"):
                found: Any = self.custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading {plural} {namespace}/{name}: {err.reason}") from err
        return dict(found)

    def list_custom_objects(
        self, group: str, version: str, plural: str, namespace: str, selector: str
    ) -> list[dict[str, Any]]:
        try:
            with _transport(f"listing {plural} in {namespace}"):
                found: Any = self.custom.list_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    plural,
                    label_selector=selector,
                    _request_timeout=REQUEST_TIMEOUT_S,
                )
        except ApiException as err:
            if err.status == 404:
                return []
            raise KubernetesError(f"listing {plural} in {namespace}: {err.reason}") from err
        return [dict(item) for item in found.get("items") or []]

    def delete_custom_object(self, group: str, version: str, plural: str, namespace: str, name: str) -> None:
        try:
            with _transport(f"deleting {plural} {namespace}/{name}"):
                self.custom.delete_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"deleting {plural} {namespace}/{name}: {err.reason}") from err

    # -- the pools' StatefulSets --------------------------------------------------------------------

    def read_stateful_set(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            with _transport(f"reading StatefulSet {namespace}/{name}"):
                found = self.apps.read_namespaced_stateful_set(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading StatefulSet {namespace}/{name}: {err.reason}") from err
        document: dict[str, Any] = self.apps.api_client.sanitize_for_serialization(found)
        return document

    # -- Spark's driver pods ------------------------------------------------------------------------

    def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            with _transport(f"reading pod {namespace}/{name}"):
                found = self.core.read_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading pod {namespace}/{name}: {err.reason}") from err
        document: dict[str, Any] = self.core.api_client.sanitize_for_serialization(found)
        return document

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        try:
            with _transport(f"listing pods {selector} in {namespace}"):
                found = self.core.list_namespaced_pod(
                    namespace, label_selector=selector, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            raise KubernetesError(f"listing pods {selector} in {namespace}: {err.reason}") from err
        documents: list[dict[str, Any]] = self.core.api_client.sanitize_for_serialization(found.items)
        return documents

    def delete_pod(self, namespace: str, name: str) -> None:
        try:
            with _transport(f"deleting pod {namespace}/{name}"):
                self.core.delete_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT_S)
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"deleting pod {namespace}/{name}: {err.reason}") from err

    def pod_log(self, namespace: str, name: str, lines: int) -> str:
        try:
            with _transport(f"reading the log of pod {namespace}/{name}"):
                text: str = self.core.read_namespaced_pod_log(
                    name, namespace, tail_lines=lines, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException:
            return ""  # no log (never started, or gone): the caller reports what it has
        return text

    # -- the execution lease (coordination.k8s.io/v1) ---------------------------------------------

    def read_lease(self, namespace: str, name: str) -> LeaseRecord | None:
        try:
            with _transport(f"reading Lease {namespace}/{name}"):
                found = self.coordination.read_namespaced_lease(
                    name, namespace, _request_timeout=REQUEST_TIMEOUT_S
                )
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading Lease {namespace}/{name}: {err.reason}") from err
        spec: Any = found.spec
        return LeaseRecord(
            spec.holder_identity or None,
            int(spec.lease_duration_seconds or 0),
            int(spec.lease_transitions or 0),
            _version(found),
        )

    def write_lease(self, lease: LeaseWrite) -> str:
        """Create (``lease.version`` None) or conditionally replace the Lease; returns its new version.
        Raises :class:`WriteConflict` when another process wrote it since ``lease.version``."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body: Any = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": lease.name,
                "namespace": lease.namespace,
                "labels": {
                    **MANAGED_BY,
                    **({"kafkabalancer.io/pool": lease.owner.name} if lease.owner else {}),
                },
                "ownerReferences": [owner_reference(lease.owner)] if lease.owner else [],
                **({"resourceVersion": lease.version} if lease.version is not None else {}),
            },
            "spec": {
                "holderIdentity": lease.holder,
                "leaseDurationSeconds": lease.duration_s,
                "leaseTransitions": lease.transitions,
                "renewTime": now,
                **({"acquireTime": now} if lease.holder is not None else {}),
            },
        }
        what = f"writing Lease {lease.namespace}/{lease.name}"
        try:
            with _transport(what):
                if lease.version is None:
                    written = self.coordination.create_namespaced_lease(
                        lease.namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                    )
                else:
                    written = self.coordination.replace_namespaced_lease(
                        lease.name, lease.namespace, body, _request_timeout=REQUEST_TIMEOUT_S
                    )
        except ApiException as err:
            if err.status in (404, 409):
                raise WriteConflict(
                    f"{what}: another process wrote it since version {lease.version}"
                ) from err
            raise KubernetesError(f"{what}: {err.reason}") from err
        return _version(written)


def _version(found: Any) -> str:
    return str(found.metadata.resource_version)


def owner_reference(owner: PoolId) -> dict[str, Any]:
    """What makes an object the pool's: Kubernetes deletes it with the pool."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "BrokerPool",
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": False,
    }


def _config_map_body(
    namespace: str,
    name: str,
    owner: PoolId,
    data: Mapping[str, str],
    binary: Mapping[str, bytes] | None,
) -> Any:
    # The client takes plain dicts as well as its models.
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**MANAGED_BY, "kafkabalancer.io/pool": owner.name},
            "ownerReferences": [owner_reference(owner)],
        },
        "data": dict(data),
        "binaryData": {key: base64.b64encode(value).decode() for key, value in (binary or {}).items()},
    }


def json_text(document: Any) -> str:
    return json.dumps(document, indent=1, sort_keys=False) + "\n"
