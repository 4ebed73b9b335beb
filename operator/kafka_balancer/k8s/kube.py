"""The operator's :class:`~kafka_balancer.k8s.port.KubePort` against the apiserver: ConfigMaps owned by a
pool, CR status, Secrets, Events, SparkApplications.

Synchronous (the official client); the services run them in a worker thread.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import kopf
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kafka_balancer.api import API_VERSION, GROUP, VERSION
from kafka_balancer.errors import KubernetesError
from kafka_balancer.k8s.port import ConfigMapData, PoolId
from kafka_balancer.reconcile.pool import Event

MANAGED_BY = {"app.kubernetes.io/managed-by": "kafka-balancer"}


class Kube:
    """One API client for the whole operator, configured like kubectl (kubeconfig) or in-cluster."""

    def __init__(self, kubeconfig: str | None) -> None:
        if kubeconfig:
            api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        else:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            api = client.ApiClient()
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    # -- ConfigMaps owned by a pool -----------------------------------------------------------------

    def read_config_map(self, namespace: str, name: str) -> ConfigMapData | None:
        try:
            found = self.core.read_namespaced_config_map(name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading ConfigMap {namespace}/{name}: {err.reason}") from err
        binary = {key: base64.b64decode(value) for key, value in (found.binary_data or {}).items()}
        version = found.metadata.resource_version if found.metadata is not None else None
        return ConfigMapData(dict(found.data or {}), binary, str(version or ""))

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        # The client takes plain dicts as well as its models.
        body: Any = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {**MANAGED_BY, "kafkabalancer.io/pool": owner.name},
                "ownerReferences": [
                    {
                        "apiVersion": f"{GROUP}/{VERSION}",
                        "kind": "BrokerPool",
                        "name": owner.name,
                        "uid": owner.uid,
                        "controller": True,
                        "blockOwnerDeletion": False,
                    }
                ],
            },
            "data": dict(data),
            "binaryData": {key: base64.b64encode(value).decode() for key, value in (binary or {}).items()},
        }
        try:
            self.core.replace_namespaced_config_map(name, namespace, body)
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"writing ConfigMap {namespace}/{name}: {err.reason}") from err
            try:
                self.core.create_namespaced_config_map(namespace, body)
            except ApiException as err2:
                raise KubernetesError(f"creating ConfigMap {namespace}/{name}: {err2.reason}") from err2

    def delete_config_map(self, namespace: str, name: str) -> None:
        try:
            self.core.delete_namespaced_config_map(name, namespace)
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"deleting ConfigMap {namespace}/{name}: {err.reason}") from err

    # -- custom resources ---------------------------------------------------------------------------

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, {"status": dict(status)}
            )
        except ApiException as err:
            if err.status == 404:  # deleted meanwhile: nothing to report on
                return
            raise KubernetesError(f"patching {plural} {namespace}/{name} status: {err.reason}") from err

    # -- Secrets ------------------------------------------------------------------------------------

    def read_secret(self, namespace: str, name: str) -> dict[str, bytes] | None:
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading Secret {namespace}/{name}: {err.reason}") from err
        return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}

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
            self.custom.create_namespaced_custom_object(group, version, namespace, plural, dict(manifest))
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
            found: Any = self.custom.get_namespaced_custom_object(group, version, namespace, plural, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading {plural} {namespace}/{name}: {err.reason}") from err
        return dict(found)

    def delete_custom_object(self, group: str, version: str, plural: str, namespace: str, name: str) -> None:
        try:
            self.custom.delete_namespaced_custom_object(group, version, namespace, plural, name)
        except ApiException as err:
            if err.status != 404:
                raise KubernetesError(f"deleting {plural} {namespace}/{name}: {err.reason}") from err


def json_text(document: Any) -> str:
    return json.dumps(document, indent=1, sort_keys=False) + "\n"
