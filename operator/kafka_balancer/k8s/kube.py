"""Kubernetes API calls of the operator besides kopf's own: ConfigMaps owned by a pool, CR status, Secrets.

Synchronous (the official client); callers run them in a worker thread.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kafka_balancer.api import GROUP, VERSION
from kafka_balancer.errors import KubernetesError

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

    def read_config_map(self, namespace: str, name: str) -> dict[str, str] | None:
        found = self.read_config_map_with_binary(namespace, name)
        return None if found is None else found[0]

    def read_config_map_with_binary(
        self, namespace: str, name: str
    ) -> tuple[dict[str, str], dict[str, bytes]] | None:
        """``data`` and the decoded ``binaryData``; None when the ConfigMap does not exist."""
        try:
            found = self.core.read_namespaced_config_map(name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading ConfigMap {namespace}/{name}: {err.reason}") from err
        binary = {key: base64.b64decode(value) for key, value in (found.binary_data or {}).items()}
        return dict(found.data or {}), binary

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: Mapping[str, Any],
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        """Create or replace; the pool owns it, so deleting the pool deletes it."""
        # The client takes plain dicts as well as its models.
        body: Any = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {**MANAGED_BY, "kafkabalancer.io/pool": owner["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": f"{GROUP}/{VERSION}",
                        "kind": "BrokerPool",
                        "name": owner["name"],
                        "uid": owner["uid"],
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
        """The Secret's data, decoded; None if it does not exist. Never logged."""
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise KubernetesError(f"reading Secret {namespace}/{name}: {err.reason}") from err
        return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}


def json_text(document: Any) -> str:
    return json.dumps(document, indent=1, sort_keys=False) + "\n"
