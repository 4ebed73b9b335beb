"""The admission webhook's side of a StatefulSet scale-down: which pool runs its brokers, what Kafka
says of them now, the answer (reconcile/scale_down.py), and the record on the pool.

Only the pools' StatefulSets reach the webhook: ``match_conditions`` scopes its configuration to them,
in the apiserver, so an operator that is down never holds up anyone else's StatefulSet. Of those,
only requests that could remove a broker reach it (a lower replica count, or the ``scale``
subresource, which can also withdraw a held scale-down): a rolling update never waits for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import InputError, KafkaOperationError, KubernetesError
from kafka_balancer.k8s.executions import Connect
from kafka_balancer.k8s.pools import parse_spec
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.kafka.cordon import ready_to_leave
from kafka_balancer.reconcile.scale_down import (
    SCALE_DOWN_ANNOTATION,
    Admission,
    ScaleDown,
    ScaleRequest,
    admit,
    brokers_removed,
    parse_scale_down,
)

_log = logging.getLogger(__name__)
MATCH_POOLS = "kafka-balancer-pools-stateful-sets"
MATCH_REMOVALS = "kafka-balancer-may-remove-brokers"
# Each of the five Kafka calls a check makes waits at most this long, so that a Kafka that does not
# answer is refused in words well within the apiserver's 30 s limit for a webhook.
KAFKA_TIMEOUT_S = 5.0


class GuardKube(Protocol):
    """The Kubernetes calls the guard makes."""

    def list_pools(self, namespace: str) -> list[dict[str, Any]]: ...

    def annotate_pool(self, namespace: str, name: str, key: str, value: str | None) -> None: ...

    def scope_webhook(self, configuration: str, conditions: list[dict[str, str]]) -> bool: ...


@dataclass(frozen=True, slots=True)
class _Pool:
    id: PoolId
    spec: BrokerPoolSpec
    held: ScaleDown | None


class ScaleGuard:
    """Answers the webhook's requests for the pools' StatefulSets."""

    def __init__(
        self,
        kube: GuardKube,
        connection: Callable[[PoolId, BrokerPoolSpec], Mapping[str, str]],
        connect: Connect,
    ) -> None:
        self.kube = kube
        self.connection = connection
        self.connect = connect

    def review(self, name: str, request: ScaleRequest, dry_run: bool) -> Admission | None:
        """The answer to ``request`` against StatefulSet ``name``; None when no pool names it. What
        cannot be checked (Kafka unreachable, an unusable pool) refuses: a broker removed with its
        replicas cannot be undone."""
        pools = self._pools_of(request.namespace, name)
        if not pools:
            return None
        where = f"StatefulSet {request.namespace}/{name}"
        if len(pools) > 1:
            names = ", ".join(p.id.name for p in pools)
            return Admission(False, f"{where}: BrokerPools {names} each name it; one may", None)
        pool = pools[0]
        ref = pool.spec.stateful_set
        assert ref is not None  # _pools_of keeps only pools that name a StatefulSet
        key = f"{pool.id.namespace}/{pool.id.name}"
        if request.wanted >= request.current:
            answer = admit(key, pool.spec.mode, ref, request, {}, None, pool.held)
        else:
            leaving = brokers_removed(ref, request.current, request.wanted)
            try:
                props = self.connection(pool.id, pool.spec)
                bootstrap = pool.spec.connection().bootstrap_servers
                with self.connect(bootstrap, props, KAFKA_TIMEOUT_S) as admin:
                    held, closed = ready_to_leave(admin, set(leaving))
            except (InputError, KafkaOperationError, KubernetesError) as err:
                return Admission(
                    False,
                    f"{where}: cannot tell whether brokers {list(leaving)} are empty ({err}); nothing "
                    "was removed; retry",
                    None,
                )
            answer = admit(key, pool.spec.mode, ref, request, held, closed, pool.held)
        if not dry_run and answer.record != pool.held:
            value = None if answer.record is None else answer.record.to_annotation()
            self.kube.annotate_pool(pool.id.namespace, pool.id.name, SCALE_DOWN_ANNOTATION, value)
            _log.info("pool %s: %s", key, answer.message)
        return answer

    def _pools_of(self, namespace: str, name: str) -> list[_Pool]:
        found = []
        for pool in self.kube.list_pools(namespace):
            stateful_set = (pool.get("spec") or {}).get("statefulSet") or {}
            if stateful_set.get("name") != name:
                continue
            meta = pool["metadata"]
            pool_id = PoolId(namespace, meta["name"], meta.get("uid", ""))
            annotations = meta.get("annotations") or {}
            try:
                spec = parse_spec(pool["spec"])
            except InputError:
                continue  # its status says why; an unusable pool guards nothing
            try:
                held = parse_scale_down(annotations.get(SCALE_DOWN_ANNOTATION))
            except InputError:
                held = None  # replaced by this request's record
            found.append(_Pool(pool_id, spec, held))
        return sorted(found, key=lambda p: p.id.name)

    def scope(self, configuration: str, stateful_sets: Iterable[tuple[str, str]]) -> None:
        """Point the webhook configuration at these (namespace, name) StatefulSets only; checked at
        every pass of every pool, so a configuration reset by a chart upgrade is scoped again."""
        if self.kube.scope_webhook(configuration, match_conditions(stateful_sets)):
            _log.info("scale-down webhook %s scoped to StatefulSets %s", configuration, sorted(stateful_sets))


def match_conditions(stateful_sets: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    """The webhook's matchConditions (CEL, evaluated by the apiserver before it calls us): the
    request is for one of these StatefulSets, and could remove a broker. A Scale object omits
    ``spec.replicas`` when it is 0."""
    names = sorted({f"{namespace}/{name}" for namespace, name in stateful_sets})
    replicas = "(has({0}.spec.replicas) ? {0}.spec.replicas : 0)"
    return [
        {
            "name": MATCH_POOLS,
            "expression": f"(request.namespace + '/' + request.name) in {json.dumps(names)}",
        },
        {
            "name": MATCH_REMOVALS,
            "expression": (
                f"request.subResource == 'scale' || {replicas.format('object')} < "
                f"{replicas.format('oldObject')}"
            ),
        },
    ]
