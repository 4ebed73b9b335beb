"""The Strimzi resources a pool names, read for a pass (what they mean: reconcile/strimzi.py)."""

from __future__ import annotations

from kafka_balancer.api import StrimziRef
from kafka_balancer.errors import InputError, KubernetesError
from kafka_balancer.k8s.pool_secrets import pool_secret
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.reconcile.strimzi import (
    CLUSTER_LABEL,
    GROUP,
    VERSION,
    StrimziCluster,
    ca_secret_name,
    user_secret_name,
)


def read_strimzi(kube: KubePort, pool: PoolId, ref: StrimziRef) -> StrimziCluster:
    """The Kafka, its node pools, its cluster CA Secret and the KafkaUser with its Secret, in the
    pool's namespace. The user's Secret holds credentials, so it is used only when meant for the
    pool (k8s/pool_secrets.py); the CA Secret holds none."""
    namespace = pool.namespace
    try:
        kafka = kube.read_custom_object(GROUP, VERSION, "kafkas", namespace, ref.kafka)
        node_pools = kube.list_custom_objects(
            GROUP, VERSION, "kafkanodepools", namespace, f"{CLUSTER_LABEL}={ref.kafka}"
        )
        user = None
        if ref.user is not None:
            user = kube.read_custom_object(GROUP, VERSION, "kafkausers", namespace, ref.user)
    except KubernetesError as err:
        raise InputError(
            f"spec.strimzi: {err}; the operator reads Strimzi's Kafka, KafkaNodePool and KafkaUser "
            "resources when installed with the chart value strimzi.enabled=true"
        ) from err
    ca = kube.read_secret(namespace, ca_secret_name(ref.kafka))
    secret = user_secret_name(user)
    user_secret = None if secret is None else pool_secret(kube.read_secret, pool, "spec.strimzi.user", secret)
    return StrimziCluster(kafka, node_pools, None if ca is None else ca.data, user, user_secret)
