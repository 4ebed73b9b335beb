"""A pool's execution lease: a coordination.k8s.io/v1 Lease that at most one process holds.

Every Kafka write of an execution is fenced by :meth:`PoolLease.check` (see kafka/fence.py), and a
background thread renews the lease while the execution runs. The rules (deadlines, takeover) are in
reconcile/ownership.py; this module only reads and writes the Lease, conditionally on its
resourceVersion, so two processes can never both win the same takeover.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable

from kafka_balancer.errors import ExecutionFenced, KubernetesError, WriteConflict
from kafka_balancer.k8s.port import KubePort, LeaseWrite, PoolId
from kafka_balancer.reconcile.ownership import Observed, Ownership, expired

# Renewals per lease duration: two may fail (an apiserver restart) before the deadline passes.
RENEWALS_PER_DURATION = 3

logger = logging.getLogger(__name__)


def process_identity() -> str:
    """Unique per process: a restarted pod (same host name) is another holder."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


IDENTITY = process_identity()


def lease_name(pool: str) -> str:
    return f"{pool}-execution"


def cluster_lease_name(cluster_id: str) -> str:
    """A Kafka cluster id (base64, mixed case) as a Lease name (lower-case DNS label)."""
    return f"kafka-cluster-{hashlib.sha256(cluster_id.encode()).hexdigest()[:16]}"


class PoolLease:
    """Acquire, renew in the background, check, release. One per pool per process; the same for the
    lease of the Kafka cluster a pool executes on (:func:`cluster_lease`)."""

    def __init__(
        self,
        kube: KubePort,
        pool: PoolId,
        *,
        duration_s: int,
        identity: str = IDENTITY,
        clock: Callable[[], float] = time.monotonic,
        where: tuple[str, str] | None = None,
    ) -> None:
        self.kube = kube
        self.pool = pool
        # The Lease: the pool's own (in its namespace, owned by it, deleted with it) unless ``where``
        # (namespace, name) names another, owned by nobody.
        self.owned = where is None
        self.namespace, self.name = where or (pool.namespace, lease_name(pool.name))
        self.identity = identity
        self.duration_s = duration_s
        self.clock = clock
        self.ownership = Ownership(duration_s, clock)
        self._observed: Observed | None = None
        self._version: str | None = None
        self._transitions = 0
        self._loss_logged = False
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self.pool.key

    def _write(self, holder: str | None, transitions: int, version: str | None) -> LeaseWrite:
        """This pool's Lease as this process writes it, conditional on ``version``."""
        return LeaseWrite(
            self.namespace,
            self.name,
            self.pool if self.owned else None,
            holder,
            self.duration_s,
            transitions,
            version,
        )

    # -- acquiring ---------------------------------------------------------------------------------

    def acquire(self, give_up: Callable[[], bool], poll_s: float = 1.0) -> bool:
        """Block until held (True) or ``give_up()`` (False); renews in the background once held."""
        while not self.try_acquire():
            if give_up():
                return False
            time.sleep(poll_s)
        return True

    def try_acquire(self) -> bool:
        with self._lock:
            if self.ownership.owns():
                return True
            try:
                record = self.kube.read_lease(self.namespace, self.name)
                if record is not None and record.holder not in (None, self.identity):
                    may, self._observed = expired(
                        self._observed, record.version, record.holder, self.clock(), record.duration_s
                    )
                    if not may:
                        return False
                    logger.info(
                        "pool %s: lease of %s not renewed for %ss: taking it over",
                        self.key,
                        record.holder,
                        record.duration_s,
                    )
                transitions = 0 if record is None else record.transitions + (record.holder != self.identity)
                # The deadline counts from sending the write that makes us the holder, not from the read.
                sent = self.clock()
                self._version = self.kube.write_lease(
                    self._write(self.identity, transitions, None if record is None else record.version)
                )
                self._transitions = transitions
            except WriteConflict:
                return False  # another process wrote it first: look again next time
            except KubernetesError as err:
                logger.warning("pool %s: lease not acquired this time: %s", self.key, err)
                return False
            self._observed = None
            self.ownership.renewed(sent)
            self._loss_logged = False
        logger.info("lease of pool %s acquired by %s at wall=%.3f", self.key, self.identity, time.time())
        if self._renewer is None or not self._renewer.is_alive():
            self._stop.clear()
            self._renewer = threading.Thread(target=self._renew_loop, name=f"lease {self.key}", daemon=True)
            self._renewer.start()
        return True

    def observe(self) -> None:
        """Time the silence of whoever holds the Lease, without taking it: a later :meth:`try_acquire`
        takes it over once its holder has not renewed it for its duration since first seen here."""
        with self._lock:
            if self.ownership.owns():
                return
            try:
                record = self.kube.read_lease(self.namespace, self.name)
            except KubernetesError:
                return
            if record is not None and record.holder not in (None, self.identity):
                _, self._observed = expired(
                    self._observed, record.version, record.holder, self.clock(), record.duration_s
                )

    def holder(self) -> str | None:
        """Who holds the Lease now, as its holder wrote itself (None: nobody, or unreadable)."""
        try:
            record = self.kube.read_lease(self.namespace, self.name)
        except KubernetesError:
            return None
        return None if record is None else record.holder

    # -- while held --------------------------------------------------------------------------------

    def check(self) -> None:
        """The :class:`~kafka_balancer.kafka.fence.Fence` of the execution: raise unless held."""
        with self._lock:
            if self.ownership.owns():
                return
            reason = self.ownership.lost_because
            self._log_lost()
        raise ExecutionFenced(f"lost the execution lease of pool {self.key}: {reason}")

    def owns(self) -> bool:
        with self._lock:
            return self.ownership.owns()

    def _renew_loop(self) -> None:
        # Until released: a lease lost while the API was away is re-acquired by the same process.
        interval = self.duration_s / RENEWALS_PER_DURATION
        # Sooner when a slow answer (an apiserver starting up) left less than an interval to go.
        while not self._stop.wait(max(0.1, min(interval, self._remaining() / 2))):
            self.renew()

    def _remaining(self) -> float:
        with self._lock:
            return self.ownership.remaining()

    def renew(self) -> None:
        """One renewal, if still held. Failing to reach the API keeps the lease until its deadline."""
        with self._lock:
            if not self.ownership.owns():
                self._log_lost()
                return
            sent = self.clock()
            try:
                self._version = self.kube.write_lease(
                    self._write(self.identity, self._transitions, self._version)
                )
                self.ownership.renewed(sent)
            except WriteConflict:
                self.ownership.lose("another process took the lease over")
                self._log_lost()
            except KubernetesError as err:
                logger.warning("pool %s: lease not renewed this time: %s", self.key, err)

    def _log_lost(self) -> None:
        """Once per loss, with the last instant this process believed it owned the execution."""
        if self._loss_logged or self.ownership.ended is None:
            return
        self._loss_logged = True
        until = time.time() - (self.clock() - self.ownership.ended)
        logger.warning(
            "lease of pool %s lost by %s at wall=%.3f (owned until wall=%.3f): %s; its execution stops",
            self.key,
            self.identity,
            time.time(),
            until,
            self.ownership.lost_because,
        )

    def release(self) -> None:
        """Stop renewing; hand the lease back (if still ours) so a successor need not wait it out."""
        self._stop.set()
        if self._renewer is not None and self._renewer is not threading.current_thread():
            self._renewer.join(timeout=15)
        with self._lock:
            if not self.ownership.owns():
                return
            try:
                self.kube.write_lease(self._write(None, self._transitions, self._version))
            except KubernetesError as err:
                logger.warning("pool %s: lease not handed back (it expires instead): %s", self.key, err)
            self.ownership.lose("released")
        logger.info("lease of pool %s released by %s at wall=%.3f", self.key, self.identity, time.time())


def cluster_lease(
    kube: KubePort, pool: PoolId, cluster_id: str, namespace: str, *, duration_s: int
) -> PoolLease:
    """The lease of the Kafka cluster ``cluster_id``, as ``pool`` of this process holds it: every pool
    of every namespace that reaches that cluster takes the same Lease (in the operator's own
    ``namespace``), so two pools never execute on one cluster at once, nor touch each other's
    throttles. Its holder names the pool (:func:`holder_pool`)."""
    return PoolLease(
        kube,
        pool,
        duration_s=duration_s,
        identity=f"{IDENTITY} {pool.key}",
        where=(namespace, cluster_lease_name(cluster_id)),
    )


def holder_pool(holder: str | None) -> str:
    """The pool (namespace/name) of a cluster lease's holder."""
    return (holder or "").rpartition(" ")[2] or "another pool"
