"""A scale-down of the pool's StatefulSet, held back until the brokers it removes are empty.

A StatefulSet removes its highest ordinals first and at once: a broker still holding replicas would
take them with it (with RF 1, the data). So the operator's admission webhook asks ``admit`` about
each request that changes the StatefulSet's replica count. A scale-down whose brokers hold replicas
is refused with one sentence, and recorded on the pool (``SCALE_DOWN_ANNOTATION``); each pass then
drains those brokers as if they were in ``spec.drain`` (same rack first, cordoned). The same request,
retried once they are empty, goes through. ``kubectl scale`` back to the current count or above
withdraws the drain, as does removing the annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from kafka_balancer.api import BrokerPoolSpec, StatefulSetRef
from kafka_balancer.errors import InputError

SCALE_DOWN_ANNOTATION = "kafkabalancer.io/scale-down"


@dataclass(frozen=True, slots=True)
class ScaleDown:
    """A scale-down held back: the StatefulSet, the replica count it asked for, the brokers that
    count removes and the replicas they held when it was first asked (how far the drain is along)."""

    stateful_set: str
    replicas: int
    brokers: tuple[int, ...]
    replicas_held: int

    def to_annotation(self) -> str:
        return json.dumps(
            {
                "statefulSet": self.stateful_set,
                "replicas": self.replicas,
                "brokers": list(self.brokers),
                "replicasHeld": self.replicas_held,
            },
            separators=(",", ":"),
        )


def parse_scale_down(text: str | None) -> ScaleDown | None:
    """The annotation as the webhook wrote it. Anyone who may edit the pool may edit it too, so it is
    read as input: whatever it says could as well be written in ``spec.drain``."""
    if text is None:
        return None
    where = f"metadata.annotations[{SCALE_DOWN_ANNOTATION}]"
    try:
        doc: Any = json.loads(text)
    except ValueError:
        raise InputError(f"{where}: not JSON; remove the annotation to withdraw the scale-down") from None
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a JSON object")
    name, replicas, brokers, held = (
        doc.get(k) for k in ("statefulSet", "replicas", "brokers", "replicasHeld")
    )
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.statefulSet: a StatefulSet name is required")
    if not _count(replicas):
        raise InputError(f"{where}.replicas: a replica count (0 or more) is required")
    if not isinstance(brokers, list) or not brokers or len(brokers) > 1000 or not all(map(_count, brokers)):
        raise InputError(f"{where}.brokers: a list of 1 to 1000 broker ids is required")
    if not _count(held):
        raise InputError(f"{where}.replicasHeld: a replica count (0 or more) is required")
    return ScaleDown(name, replicas, tuple(sorted(set(brokers))), held)


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2_000_000_000


def with_scale_down(spec: BrokerPoolSpec, held: ScaleDown | None) -> BrokerPoolSpec:
    """The spec a pass works with: the held scale-down's brokers drained as if listed in
    ``spec.drain`` (and so not warmed up). A record of another StatefulSet than the spec's (the spec
    changed since) drains nothing."""
    if held is None or spec.stateful_set is None or held.stateful_set != spec.stateful_set.name:
        return spec
    drain = sorted({*spec.drain, *held.brokers})
    warm = [b for b in spec.warm_up.brokers if b not in held.brokers]
    return spec.model_copy(
        update={"drain": drain, "warm_up": spec.warm_up.model_copy(update={"brokers": warm})}
    )


def brokers_removed(ref: StatefulSetRef, current: int, wanted: int) -> tuple[int, ...]:
    """The brokers whose pods a change from ``current`` to ``wanted`` replicas removes."""
    return tuple(ref.broker_id(ordinal) for ordinal in range(wanted, current))


@dataclass(frozen=True, slots=True)
class Admission:
    """The webhook's answer, and what the pool's annotation says after it (None: no annotation).
    A dry-run request gets the answer and changes nothing."""

    allowed: bool
    message: str
    record: ScaleDown | None


@dataclass(frozen=True, slots=True)
class ScaleRequest:
    """One request against the pool's StatefulSet: the replica counts before and after, and whether
    it came through the ``scale`` subresource (``kubectl scale``, an autoscaler)."""

    namespace: str
    current: int
    wanted: int
    via_scale: bool


def admit(
    pool: str,
    mode: str,
    ref: StatefulSetRef,
    request: ScaleRequest,
    replicas_on: Mapping[int, int],
    cordoned: frozenset[int] | None,
    held: ScaleDown | None,
) -> Admission:
    """Whether ``request`` may go through now.

    ``replicas_on``: the replicas each broker of the cluster holds now (Kafka's metadata, asked for
    this request). ``cordoned``: the brokers cordoned now, None where Kafka has no cordon (before
    4.3); a broker that is empty but still takes new topics' replicas is not ready to go."""
    name = f"StatefulSet {request.namespace}/{ref.name}"
    if request.wanted >= request.current:
        if held is not None and request.via_scale:
            return Admission(True, f"{name}: scale-down to {held.replicas} withdrawn; drain stopped", None)
        return Admission(True, f"{name}: no broker removed", held)
    brokers = brokers_removed(ref, request.current, request.wanted)
    holding = {b: replicas_on.get(b, 0) for b in brokers if replicas_on.get(b, 0) > 0}
    open_ = [b for b in brokers if cordoned is not None and b not in cordoned]
    left = sum(holding.values())
    before = held.replicas_held if held is not None and held.brokers == brokers else left
    record = ScaleDown(ref.name, request.wanted, brokers, max(before, left))
    if not holding and not open_:
        return Admission(True, f"{name}: brokers {list(brokers)} are empty; scale-down allowed", record)
    if holding:
        moved = record.replicas_held - left
        state = (
            f"brokers {sorted(holding)} still hold {left} replicas ({moved} of {record.replicas_held} "
            "moved so far)"
        )
    else:
        state = f"brokers {open_} are empty but not yet cordoned"
    how = (
        "its plan waits for approval (mode Manual)"
        if mode == "Manual"
        else "nothing moves (mode DryRun)"
        if mode == "DryRun"
        else "the drain runs by itself"
    )
    return Admission(
        False,
        f"{name}: scale-down to {request.wanted} replicas held back: {state}; BrokerPool {pool} drains "
        f"them into their racks and {how}; retry the same scale-down once they are empty (a GitOps "
        "tool retries by itself)",
        record,
    )
