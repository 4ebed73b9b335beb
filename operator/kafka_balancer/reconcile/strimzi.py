"""A pool that names a Strimzi ``Kafka``: its connection, capacities and scale-downs read from the
resources Strimzi's operators write, so nobody copies them by hand and nothing goes stale.

- Bootstrap servers: the named listener's ``bootstrapServers`` in the Kafka's status; its security
  protocol from the listener's ``tls`` and ``authentication`` in the Kafka's spec.
- The cluster CA: every certificate of the ``<kafka>-cluster-ca-cert`` Secret (during a CA renewal
  Strimzi keeps the old one beside the new one, and clients must trust both). A CA certificate is
  no credential, and Strimzi writes that Secret, so it needs no opt-in.
- Credentials: the ``KafkaUser``'s Secret exactly as the user operator writes it (``password`` for
  SCRAM-SHA-512, with the user name from the KafkaUser's status; ``user.crt``/``user.key`` for
  TLS), read again at every pass, so a renewed certificate or password is used at once. Like every
  Secret a pool names, it must carry the ``kafkabalancer.io/pools`` annotation (k8s/pool_secrets.py):
  the KafkaUser's ``spec.template.secret.metadata.annotations`` puts it there.
- Capacities: per node pool, disk from its storage (the sum of a JBOD's volumes) and cpu from its
  resources, for the node ids in its status; values the BrokerPool gives win.
- Scale-downs: a node pool whose ``spec.replicas`` is below the node ids it has removes the ids
  named by ``strimzi.io/remove-node-ids`` first, then the highest, as Strimzi does. Those brokers
  are drained as if listed in ``spec.drain`` (same rack first, cordoned); once they are empty,
  Strimzi's own check lets it remove them. Raising ``replicas`` again withdraws the drain.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_balancer.api import (
    BrokerPoolSpec,
    Capacity,
    CapacityOverride,
    KafkaConnection,
    Sasl,
    SecretKeyRef,
    SecretRef,
    StrimziRef,
    Tls,
)
from kafka_balancer.errors import InputError
from kafka_balancer.reconcile.stateful_set import checked_quantity, resource_cpu

GROUP = "kafka.strimzi.io"
VERSION = "v1"
CLUSTER_LABEL = "strimzi.io/cluster"
REMOVE_NODE_IDS = "strimzi.io/remove-node-ids"
BROKER_ROLE = "broker"


def ca_secret_name(kafka: str) -> str:
    return f"{kafka}-cluster-ca-cert"


@dataclass(frozen=True, slots=True)
class StrimziCluster:
    """What the pool service read for a pass, as the API returned it (None: not found)."""

    kafka: Mapping[str, Any] | None
    node_pools: Sequence[Mapping[str, Any]]
    ca_secret: Mapping[str, bytes] | None
    user: Mapping[str, Any] | None = None
    user_secret: Mapping[str, bytes] | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    """The spec a pass works with (``kafka`` filled, capacities and the node pools' scale-downs
    applied), and the credentials in the shapes ``reconcile/connection.py`` takes."""

    spec: BrokerPoolSpec
    sasl: Mapping[str, str] | None
    tls: Mapping[str, bytes] | None
    scale_downs: Mapping[str, tuple[int, ...]]  # node pool -> the node ids its scale-down removes


def user_secret_name(user: Mapping[str, Any] | None) -> str | None:
    """The Secret the user operator keeps the KafkaUser's credentials in, once it has written one."""
    if user is None:
        return None
    name = (user.get("status") or {}).get("secret")
    return name if isinstance(name, str) and name else None


def resolve(spec: BrokerPoolSpec, found: StrimziCluster) -> Resolved:
    ref = spec.strimzi
    assert ref is not None  # only pools that name a Strimzi Kafka are resolved
    kafka = _kafka(ref, found.kafka)
    connection, sasl, tls = _connection(ref, kafka, found)
    pools = _node_pools(ref, found.node_pools)
    scale_downs = {_name(p): removed for p in pools if (removed := removed_node_ids(p))}
    leaving = sorted({b for ids in scale_downs.values() for b in ids})
    capacity = _capacity(spec, pools)
    drain = sorted({*spec.drain, *leaving})
    warm = [b for b in spec.warm_up.brokers if b not in leaving]
    resolved = spec.model_copy(
        update={
            "kafka": connection,
            "capacity": capacity,
            "drain": drain,
            "warm_up": spec.warm_up.model_copy(update={"brokers": warm}),
        }
    )
    return Resolved(resolved, sasl, tls, scale_downs)


def _kafka(ref: StrimziRef, kafka: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if kafka is None:
        raise InputError(f"spec.strimzi.kafka: Kafka {ref.kafka} not found in the pool's namespace")
    cruise_control = (kafka.get("spec") or {}).get("cruiseControl") or {}
    if cruise_control.get("autoRebalance"):
        raise InputError(
            f"spec.strimzi.kafka: Kafka {ref.kafka} has spec.cruiseControl.autoRebalance, so Strimzi's "
            "Cruise Control moves the same replicas on every scaling; remove autoRebalance (or this "
            "pool): one balancer per cluster"
        )
    return kafka


def _connection(
    ref: StrimziRef, kafka: Mapping[str, Any], found: StrimziCluster
) -> tuple[KafkaConnection, dict[str, str] | None, dict[str, bytes] | None]:
    listeners = ((kafka.get("spec") or {}).get("kafka") or {}).get("listeners") or []
    listener = next((x for x in listeners if isinstance(x, dict) and x.get("name") == ref.listener), None)
    if listener is None:
        names = [x.get("name") for x in listeners if isinstance(x, dict)]
        raise InputError(
            f"spec.strimzi.listener: Kafka {ref.kafka} has no listener {ref.listener!r} (it has {names})"
        )
    statuses = (kafka.get("status") or {}).get("listeners") or []
    status = next((x for x in statuses if isinstance(x, dict) and x.get("name") == ref.listener), None)
    bootstrap = (status or {}).get("bootstrapServers")
    if not isinstance(bootstrap, str) or not bootstrap:
        raise InputError(
            f"spec.strimzi.listener: Kafka {ref.kafka}'s status gives no bootstrap servers for listener "
            f"{ref.listener} yet (Strimzi writes them once the cluster is ready)"
        )
    tls_on = listener.get("tls") is True
    auth = (listener.get("authentication") or {}).get("type")
    where = f"Kafka {ref.kafka}'s listener {ref.listener}"
    if auth not in (None, "scram-sha-512", "tls"):
        raise InputError(
            f"spec.strimzi.listener: {where} authenticates with {auth}, which the operator does not "
            "support; name a listener with scram-sha-512, tls or no authentication"
        )
    if auth is not None and ref.user is None:
        raise InputError(
            f"spec.strimzi.user: {where} authenticates with {auth}; name the KafkaUser to log in as"
        )
    protocol = (
        ("SASL_SSL" if tls_on else "SASL_PLAINTEXT")
        if auth == "scram-sha-512"
        else "SSL"
        if tls_on
        else "PLAINTEXT"
    )
    tls: dict[str, bytes] | None = None
    if tls_on:
        tls = {"ca.crt": _ca_bundle(ref.kafka, found.ca_secret)}
    sasl: dict[str, str] | None = None
    user_secret = user_secret_name(found.user) or ""
    if auth is not None:
        data = _user_secret(ref, found)
        user_auth = ((found.user or {}).get("spec") or {}).get("authentication", {}).get("type")
        if auth == "scram-sha-512":
            username = ((found.user or {}).get("status") or {}).get("username")
            if user_auth != "scram-sha-512" or "password" not in data or not isinstance(username, str):
                raise InputError(
                    f"spec.strimzi.user: KafkaUser {ref.user} is no scram-sha-512 user with a password "
                    f"in its Secret {user_secret}, which {where} needs"
                )
            sasl = {"username": username, "password": _text(data["password"], user_secret, "password")}
        else:
            if user_auth != "tls" or not {"user.crt", "user.key"} <= set(data):
                raise InputError(
                    f"spec.strimzi.user: KafkaUser {ref.user} is no tls user with user.crt and user.key in "
                    f"its Secret {user_secret} (a tls-external user's certificate is not in it), which "
                    f"{where} needs"
                )
            if tls is None:
                # Strimzi refuses such a Kafka; one written by hand must not crash the pass.
                raise InputError(f"spec.strimzi.listener: {where} authenticates with tls but has tls: false")
            tls.update({"tls.crt": data["user.crt"], "tls.key": data["user.key"]})
    connection = KafkaConnection.model_validate(
        {
            "bootstrapServers": bootstrap,
            "securityProtocol": protocol,
            **(
                {"sasl": Sasl(mechanism="SCRAM-SHA-512", secretRef=SecretKeyRef(name=user_secret))}
                if sasl is not None
                else {}
            ),
            **({"tls": Tls(secretRef=SecretRef(name=ca_secret_name(ref.kafka)))} if tls is not None else {}),
        }
    )
    return connection, sasl, tls


def _ca_bundle(kafka: str, secret: Mapping[str, bytes] | None) -> bytes:
    name = ca_secret_name(kafka)
    if secret is None:
        raise InputError(f"spec.strimzi.kafka: the cluster CA Secret {name} is missing")
    # ca.crt first, then the certificates a renewal keeps, in a stable order.
    keys = sorted((k for k in secret if k.endswith(".crt")), key=lambda k: (k != "ca.crt", k))
    if "ca.crt" not in keys:
        raise InputError(f"spec.strimzi.kafka: the cluster CA Secret {name} has no ca.crt")
    return b"".join(secret[k] if secret[k].endswith(b"\n") else secret[k] + b"\n" for k in keys)


def _user_secret(ref: StrimziRef, found: StrimziCluster) -> Mapping[str, bytes]:
    if found.user is None:
        raise InputError(f"spec.strimzi.user: KafkaUser {ref.user} not found in the pool's namespace")
    name = user_secret_name(found.user)
    if name is None:
        raise InputError(
            f"spec.strimzi.user: KafkaUser {ref.user} has no Secret in its status yet (Strimzi's user "
            "operator writes it once the user is ready)"
        )
    if found.user_secret is None:
        raise InputError(f"spec.strimzi.user: Secret {name} of KafkaUser {ref.user} is missing")
    return found.user_secret


def _text(value: bytes, secret: str, key: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise InputError(f"spec.strimzi.user: Secret {secret}'s {key} is not UTF-8 text") from None


def _name(pool: Mapping[str, Any]) -> str:
    return str((pool.get("metadata") or {}).get("name", "?"))


def _node_pools(ref: StrimziRef, found: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The node pools of the Kafka that hold brokers: those named, else every one of the Kafka."""
    mine = [
        p for p in found if ((p.get("metadata") or {}).get("labels") or {}).get(CLUSTER_LABEL) == ref.kafka
    ]
    if ref.node_pools:
        by_name = {_name(p): p for p in mine}
        missing = [n for n in ref.node_pools if n not in by_name]
        if missing:
            raise InputError(
                f"spec.strimzi.nodePools: no KafkaNodePool {missing} of Kafka {ref.kafka} in the pool's "
                "namespace"
            )
        mine = [by_name[n] for n in ref.node_pools]
    brokers = [p for p in mine if BROKER_ROLE in ((p.get("spec") or {}).get("roles") or [])]
    if not brokers:
        raise InputError(f"spec.strimzi: Kafka {ref.kafka} has no KafkaNodePool with the broker role")
    return brokers


def node_ids(pool: Mapping[str, Any]) -> list[int]:
    ids = (pool.get("status") or {}).get("nodeIds") or []
    return [i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0]


def removed_node_ids(pool: Mapping[str, Any]) -> tuple[int, ...]:
    """The node ids a scale-down of ``pool`` removes: those its ``strimzi.io/remove-node-ids``
    annotation names first (in its order), then the highest, until ``spec.replicas`` remain."""
    ids = node_ids(pool)
    wanted = (pool.get("spec") or {}).get("replicas")
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted >= len(ids):
        return ()
    annotation = ((pool.get("metadata") or {}).get("annotations") or {}).get(REMOVE_NODE_IDS)
    named = [i for i in parse_node_ids(_name(pool), annotation) if i in ids]
    order = list(dict.fromkeys([*named, *sorted(ids, reverse=True)]))
    return tuple(sorted(order[: len(ids) - max(wanted, 0)]))


_RANGE = re.compile(r"^\s*(\d{1,10})\s*(?:-\s*(\d{1,10})\s*)?$")


def parse_node_ids(pool: str, text: str | None) -> list[int]:
    """Strimzi's node id list, such as ``[3, 5-7]``: ids and ranges (a range may run downwards)."""
    if text is None or not text.strip():
        return []
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise InputError(
            f"KafkaNodePool {pool}: annotation {REMOVE_NODE_IDS} {text!r} is not a list like [3, 5-7]"
        )
    found: list[int] = []
    for item in body[1:-1].split(","):
        match = _RANGE.match(item)
        if match is None:
            raise InputError(
                f"KafkaNodePool {pool}: annotation {REMOVE_NODE_IDS} {text!r} is not a list like [3, 5-7]"
            )
        low, high = int(match[1]), int(match[2] or match[1])
        if abs(high - low) > 10_000:
            raise InputError(f"KafkaNodePool {pool}: annotation {REMOVE_NODE_IDS} has a range over 10000 ids")
        step = 1 if high >= low else -1
        found.extend(range(low, high + step, step))
    return found


def _capacity(spec: BrokerPoolSpec, pools: Sequence[Mapping[str, Any]]) -> Capacity:
    """``spec.capacity`` with each node pool's disk and cpu as overrides for its node ids, where the
    pool does not give them; the first node pool's also as the default (for ids not yet listed)."""
    capacity = spec.capacity
    if capacity.disk is not None and capacity.cpu is not None:
        return capacity
    given = {o.broker for o in capacity.overrides}
    overrides = list(capacity.overrides)
    defaults: tuple[int | str, int | str] | None = None
    for pool in pools:
        disk = capacity.disk if capacity.disk is not None else _storage(pool)
        cpu = capacity.cpu if capacity.cpu is not None else _cpu(pool)
        defaults = defaults or (disk, cpu)
        for broker in node_ids(pool):
            if broker not in given:
                overrides.append(CapacityOverride(broker=broker, disk=disk, cpu=cpu))
                given.add(broker)
    assert defaults is not None  # _node_pools returns at least one
    disk, cpu = defaults
    return capacity.model_copy(
        update={
            "disk": disk,
            "cpu": cpu,
            "overrides": overrides,
        }
    )


def _storage(pool: Mapping[str, Any]) -> int:
    storage = (pool.get("spec") or {}).get("storage") or {}
    volumes = storage.get("volumes") if storage.get("type") == "jbod" else [storage]
    total = 0.0
    for volume in volumes or []:
        if not isinstance(volume, dict):
            continue
        size = volume.get("size") if volume.get("type") == "persistent-claim" else volume.get("sizeLimit")
        if size is not None:
            total += checked_quantity(f"KafkaNodePool {_name(pool)}", "spec.storage size", size)
    if total <= 0:
        raise InputError(
            f"capacity.disk: not given, and KafkaNodePool {_name(pool)} has no persistent-claim size (or "
            "ephemeral sizeLimit) to read it from"
        )
    return int(total)


def _cpu(pool: Mapping[str, Any]) -> str:
    return resource_cpu(f"KafkaNodePool {_name(pool)}", (pool.get("spec") or {}).get("resources"))
