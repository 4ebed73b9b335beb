"""Between a pool's passes, the live brokers of its Kafka cluster: one DescribeCluster (a broker answers
it from its metadata) through an admin client kept per pool, so that a broker joining or leaving the
cluster wakes the pool's pass within seconds instead of at ``spec.detectionIntervalSeconds``.

A pass opens clients of its own and closes them; the one kept here lives until the pool's daemon
stops, or until the pass's connection changes (a rotated password, another listener). A read
blocks (the pool service makes it in a worker thread); forgetting a pool only closes its client, as
its daemon ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass

from kafka_balancer.errors import KafkaOperationError
from kafka_balancer.k8s.executions import Connect, kafka_admin
from kafka_balancer.kafka.port import AdminPort

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Kept:
    """A pool's client, and the connection it was made for."""

    bootstrap: str
    props: Mapping[str, str]
    opened: AbstractContextManager[AdminPort]
    admin: AdminPort


class BrokerWatch:
    """One per operator process, in the pool service; clients keyed by pool (``namespace/name``)."""

    def __init__(self, timeout_s: float, connect: Connect = kafka_admin) -> None:
        self._timeout_s = timeout_s
        self._connect = connect
        self._kept: dict[str, _Kept] = {}
        # Each pool's daemon reads only its own; the lock keeps a read and a forget from crossing.
        self._lock = threading.Lock()

    def live_brokers(self, pool: str, bootstrap: str, props: Mapping[str, str]) -> frozenset[int] | None:
        """The ids of the brokers the cluster lists now; None when they could not be read within the
        timeout (only in the debug log: while Kafka is away the pool's pass says so)."""
        try:
            return self._admin(pool, bootstrap, props).broker_ids()
        except KafkaOperationError as err:
            _log.debug("pool %s: live brokers not read: %s", pool, err)
            return None

    def forget(self, pool: str) -> None:
        """Close the pool's client, if it has one."""
        with self._lock:
            kept = self._kept.pop(pool, None)
        if kept is not None:
            kept.opened.__exit__(None, None, None)

    def _admin(self, pool: str, bootstrap: str, props: Mapping[str, str]) -> AdminPort:
        with self._lock:
            kept = self._kept.get(pool)
            if kept is not None and kept.bootstrap == bootstrap and kept.props == props:
                return kept.admin
        self.forget(pool)
        opened = self._connect(bootstrap, props, self._timeout_s)
        made = _Kept(bootstrap, dict(props), opened, opened.__enter__())
        with self._lock:
            self._kept[pool] = made
        return made.admin
