"""Strimzi's custom resources in the shapes Strimzi documents, for tests that play its cluster operator.

Strimzi's cluster operator cannot run here, so tests create its resources on the kube bed (whose CRDs the
``strimzi_crds`` fixture generates from Strimzi's published API) and write their ``status`` themselves, as
the cluster and user operators would. Each builder returns a manifest or a ``status`` as a dict; the
shapes follow Strimzi's API reference, linked at each builder (``kafka.strimzi.io/v1``, Strimzi 1.x).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

API_VERSION = "kafka.strimzi.io/v1"
CLUSTER_LABEL = "strimzi.io/cluster"
"""The label that ties a ``KafkaNodePool`` or a ``KafkaUser`` to its ``Kafka``."""
CRDS = ("kafkas.kafka.strimzi.io", "kafkanodepools.kafka.strimzi.io", "kafkausers.kafka.strimzi.io")
# Strimzi 1.2.0's default Kafka release (its kafka-versions.yaml), as the Kafka bed's; no CRD checks it.
KAFKA_VERSION = "4.3.1"
KAFKA_METADATA_VERSION = "4.3-IV0"
_CONDITION_TIME = "2026-01-01T00:00:00.000000Z"


def kafka(name: str, namespace: str) -> dict[str, Any]:
    """A KRaft ``Kafka`` with a plain listener on 9092 and a TLS one with SCRAM-SHA-512 on 9093.

    https://strimzi.io/docs/operators/latest/configuring.html#type-Kafka-reference
    (listeners: #type-GenericKafkaListener-reference)
    """
    return {
        "apiVersion": API_VERSION,
        "kind": "Kafka",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "kafka": {
                "version": KAFKA_VERSION,
                "listeners": [
                    {"name": "plain", "port": 9092, "type": "internal", "tls": False},
                    {
                        "name": "tls",
                        "port": 9093,
                        "type": "internal",
                        "tls": True,
                        "authentication": {"type": "scram-sha-512"},
                    },
                ],
                "config": {"offsets.topic.replication.factor": 3, "min.insync.replicas": 2},
            },
            "entityOperator": {"topicOperator": {}, "userOperator": {}},
        },
    }


def listener_status(name: str, host: str, port: int, certificates: Sequence[str] = ()) -> dict[str, Any]:
    """One entry of ``Kafka.status.listeners``: a TLS listener also lists the cluster CA's certificates (PEM).

    https://strimzi.io/docs/operators/latest/configuring.html#type-ListenerStatus-reference
    """
    status: dict[str, Any] = {
        "name": name,
        "addresses": [{"host": host, "port": port}],
        "bootstrapServers": f"{host}:{port}",
    }
    if certificates:
        status["certificates"] = list(certificates)
    return status


def kafka_status(
    *, cluster_id: str, listeners: Sequence[Mapping[str, Any]], node_pools: Sequence[str], generation: int = 1
) -> dict[str, Any]:
    """The ``status`` the cluster operator writes once the cluster is reconciled and ready.

    https://strimzi.io/docs/operators/latest/configuring.html#type-KafkaStatus-reference
    """
    return {
        "conditions": [_ready()],
        "observedGeneration": generation,
        "listeners": [dict(listener) for listener in listeners],
        "kafkaNodePools": [{"name": pool} for pool in node_pools],
        "clusterId": cluster_id,
        "kafkaVersion": KAFKA_VERSION,
        "kafkaMetadataVersion": KAFKA_METADATA_VERSION,
    }


def node_pool(
    name: str,
    namespace: str,
    cluster: str,
    *,
    replicas: int,
    volume_size: str = "10Gi",
    cpu: str = "2",
    roles: Sequence[str] = ("broker",),
) -> dict[str, Any]:
    """A ``KafkaNodePool`` of ``cluster`` whose nodes each have one persistent volume in a JBOD.

    https://strimzi.io/docs/operators/latest/configuring.html#type-KafkaNodePool-reference
    (storage: #type-JbodStorage-reference, #type-PersistentClaimStorage-reference)
    """
    return {
        "apiVersion": API_VERSION,
        "kind": "KafkaNodePool",
        "metadata": {"name": name, "namespace": namespace, "labels": {CLUSTER_LABEL: cluster}},
        "spec": {
            "replicas": replicas,
            "roles": list(roles),
            "storage": {
                "type": "jbod",
                "volumes": [{"id": 0, "type": "persistent-claim", "size": volume_size, "deleteClaim": False}],
            },
            "resources": {"requests": {"cpu": cpu}},
        },
    }


def node_pool_status(
    *, cluster: str, pool: str, cluster_id: str, node_ids: Sequence[int], roles: Sequence[str] = ("broker",)
) -> dict[str, Any]:
    """The ``status`` the cluster operator writes for a node pool: the node ids it assigned, in order.

    https://strimzi.io/docs/operators/latest/configuring.html#type-KafkaNodePoolStatus-reference
    """
    return {
        "conditions": [],
        "observedGeneration": 1,
        "nodeIds": list(node_ids),
        "clusterId": cluster_id,
        "roles": list(roles),
        "replicas": len(node_ids),
        "labelSelector": (
            f"{CLUSTER_LABEL}={cluster},strimzi.io/name={cluster}-kafka,strimzi.io/kind=Kafka,"
            f"strimzi.io/pool-name={pool}"
        ),
    }


def kafka_user(
    name: str,
    namespace: str,
    cluster: str,
    *,
    authentication: str = "scram-sha-512",
    secret_labels: Mapping[str, str] | None = None,
    secret_annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A ``KafkaUser`` (``authentication``: scram-sha-512, tls or tls-external); ``secret_labels``
    and ``secret_annotations`` go on the Secret the user operator writes.

    https://strimzi.io/docs/operators/latest/configuring.html#type-KafkaUser-reference
    (#type-KafkaUserScramSha512ClientAuthentication-reference, #type-KafkaUserTemplate-reference)
    """
    spec: dict[str, Any] = {"authentication": {"type": authentication}}
    metadata: dict[str, Any] = {}
    if secret_labels:
        metadata["labels"] = dict(secret_labels)
    if secret_annotations:
        metadata["annotations"] = dict(secret_annotations)
    if metadata:
        spec["template"] = {"secret": {"metadata": metadata}}
    return {
        "apiVersion": API_VERSION,
        "kind": "KafkaUser",
        "metadata": {"name": name, "namespace": namespace, "labels": {CLUSTER_LABEL: cluster}},
        "spec": spec,
    }


def kafka_user_status(name: str) -> dict[str, Any]:
    """The ``status`` the user operator writes: the user's name in Kafka and the Secret it keeps the
    credentials in (both the KafkaUser's name).

    https://strimzi.io/docs/operators/latest/configuring.html#type-KafkaUserStatus-reference
    """
    return {"conditions": [_ready()], "observedGeneration": 1, "username": name, "secret": name}


def scram_user_secret(name: str, password: str) -> dict[str, str]:
    """The data of a SCRAM-SHA-512 user's Secret as the user operator writes it (no user name).

    https://strimzi.io/docs/operators/latest/deploying.html#scram_sha_512_authentication
    """
    login = "org.apache.kafka.common.security.scram.ScramLoginModule"
    jaas = f'{login} required username="{name}" password="{password}";'
    return {"password": password, "sasl.jaas.config": jaas}


def tls_user_secret(certificate: str, key: str, ca: str) -> dict[str, str]:
    """The data of a tls user's Secret as the user operator writes it (PEM and PKCS #12 forms).

    https://strimzi.io/docs/operators/latest/deploying.html#tls_client_authentication
    """
    return {"ca.crt": ca, "user.crt": certificate, "user.key": key, "user.p12": "", "user.password": ""}


def _ready() -> dict[str, str]:
    return {"type": "Ready", "status": "True", "lastTransitionTime": _CONDITION_TIME}
