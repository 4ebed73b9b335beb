"""Which Secrets a pool may use: only those their writer meant for it.

The operator may read every Secret of the namespaces it watches; the people who write BrokerPools may
not. So a Secret a pool names (credentials, certificates, a bearer token) is used only when the
Secret carries the annotation ``kafkabalancer.io/pools``, naming that pool (a comma-separated list) or
``*`` for every pool of its namespace: whoever may write the Secret opts it in, and a pool cannot
send another team's credentials, or any key of any Secret, to a host of its choosing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafka_balancer.errors import InputError
from kafka_balancer.k8s.port import PoolId, SecretData

POOLS_ANNOTATION = "kafkabalancer.io/pools"

ReadSecret = Callable[[str, str], SecretData | None]


def meant_for(secret: SecretData, pool: str) -> bool:
    names = {name.strip() for name in secret.annotations.get(POOLS_ANNOTATION, "").split(",")}
    return "*" in names or pool in names


def pool_secret(read: ReadSecret, pool: PoolId, field: str, name: str) -> Mapping[str, bytes] | None:
    """The data of Secret ``name`` in the pool's namespace, None when it does not exist;
    :class:`InputError`, naming ``field``, when its writer did not mean it for this pool."""
    secret = read(pool.namespace, name)
    if secret is None:
        return None
    if not meant_for(secret, pool.name):
        raise InputError(
            f"{field}: Secret {pool.namespace}/{name} is not meant for this pool: the operator uses a "
            f"Secret only when it carries the annotation {POOLS_ANNOTATION} naming the pool "
            f"({pool.name}) or *, which whoever may write the Secret adds"
        )
    return secret.data
