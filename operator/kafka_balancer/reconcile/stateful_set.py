"""A pool's capacities read from the StatefulSet that runs its brokers, where the pool does not give
them: a broker's disk is what its volume claims request, its cpu what its Kafka container may use.

Network capacity is nowhere in a StatefulSet, so the pool always gives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import InputError
from kafka_balancer.kube_quantity import is_quantity, parse_quantity

KAFKA_CONTAINER = "kafka"


def with_stateful_set_capacity(spec: BrokerPoolSpec, manifest: Mapping[str, Any] | None) -> BrokerPoolSpec:
    """``spec`` with ``capacity.disk`` and ``capacity.cpu`` filled from ``manifest`` (the StatefulSet
    as the API returns it, None when it does not exist) where the pool left them out."""
    capacity = spec.capacity
    if capacity.disk is not None and capacity.cpu is not None:
        return spec
    ref = spec.stateful_set
    assert ref is not None  # BrokerPoolSpec requires both without a StatefulSet
    if manifest is None:
        raise InputError(
            f"spec.statefulSet: StatefulSet {ref.name} not found in the pool's namespace (capacity.disk "
            "and capacity.cpu are read from it when the pool does not give them)"
        )
    template = manifest.get("spec") or {}
    disk = capacity.disk if capacity.disk is not None else _storage(ref.name, template)
    cpu = capacity.cpu if capacity.cpu is not None else _cpu(ref.name, template)
    return spec.model_copy(update={"capacity": capacity.model_copy(update={"disk": disk, "cpu": cpu})})


def _storage(name: str, spec: Mapping[str, Any]) -> int:
    """The sum of the volume claim templates' storage requests (JBOD: one claim per log dir)."""
    total = 0.0
    for claim in spec.get("volumeClaimTemplates") or []:
        requested = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
        storage = requested.get("storage")
        if storage is not None:
            where = "volumeClaimTemplates[].spec.resources.requests.storage"
            total += checked_quantity(f"StatefulSet {name}", where, storage)
    if total <= 0:
        raise InputError(
            f"capacity.disk: not given, and StatefulSet {name} has no volume claim template with a "
            "storage request to read it from"
        )
    return int(total)


def _cpu(name: str, spec: Mapping[str, Any]) -> str:
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    kafka = next(
        (c for c in containers if c.get("name") == KAFKA_CONTAINER), containers[0] if containers else {}
    )
    return resource_cpu(f"StatefulSet {name}'s container {kafka.get('name', '?')}", kafka.get("resources"))


def resource_cpu(owner: str, resources: Mapping[str, Any] | None) -> str:
    """The cpu a Kubernetes ``resources`` block may use: its limit, else its request."""
    resources = resources or {}
    cpu = (resources.get("limits") or {}).get("cpu") or (resources.get("requests") or {}).get("cpu")
    if cpu is None:
        raise InputError(f"capacity.cpu: not given, and {owner} has no cpu limit or request to read it from")
    checked_quantity(owner, "resources.cpu", cpu)
    return str(cpu)


def checked_quantity(owner: str, where: str, value: object) -> float:
    if not isinstance(value, (int, str)) or not is_quantity(value):
        raise InputError(f"{owner}: {where} {value!r} is not a Kubernetes quantity")
    return parse_quantity(value)
