"""The real apiserver as the operator's services use it, with what kopf or the CRDs would carry kept
in memory instead: Events (kopf posts them from its own event loop, which these tests do not run)
and, optionally, pool status patches (for beds without the BrokerPool CRD and objects)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.reconcile.events import Event


class EventsKept(Kube):
    """Leases, ConfigMaps and Secrets on the real apiserver; Events kept in :attr:`events`."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(kubeconfig)
        self.events: list[tuple[PoolId, Event]] = []
        self._lock = threading.Lock()

    def post_event(self, pool: PoolId, event: Event) -> None:
        with self._lock:
            self.events.append((pool, event))


class StatusKept(EventsKept):
    """:class:`EventsKept`, and every status patch of a custom resource kept in :attr:`statuses`."""

    def __init__(self, kubeconfig: str) -> None:
        super().__init__(kubeconfig)
        self.statuses: list[tuple[str, str, Mapping[str, Any]]] = []

    def patch_status(self, plural: str, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        with self._lock:
            self.statuses.append((namespace, name, status))
