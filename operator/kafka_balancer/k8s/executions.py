"""The execution service: starts each pool's approved plan (k8s/plan_run.py runs it) and settles what
executions leave behind: throttles on brokers that were down, a failed plan's moves, a deleted pool's.

At most one execution per pool at a time in this process (a lock per pool, held by the worker thread,
which can outlive the daemon that started it), at most ``max_executions`` at once, and at most one
across processes: every Kafka write is fenced by the pool's execution lease (k8s/lease.py), kept here
for the process's life, and every state write is conditional (k8s/state_mirror.py), so a replica
frozen past its peering lifetime cannot act on a pool another replica took over. Every method
blocks: the pool service calls them from its worker thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import KafkaBalancerError
from kafka_balancer.k8s.lease import PoolLease, cluster_lease, holder_pool
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.mirrored_executor import cancelled_text, release_returned_brokers, settle_unfinished
from kafka_balancer.k8s.plan_run import Liveness, PlanRun, SeenPool
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import DEFAULT_LIMITS, DEFAULT_NAMESPACE, Timings
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.admin import TIMEOUT_S, KafkaAdmin
from kafka_balancer.kafka.cordon import sync_cordons
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.fence import FencedAdmin, Fences
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.reconcile.approval import CANCEL_ANNOTATION
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.pool_input import StoredPlan
from kafka_balancer.reconcile.status import ExecutionPhase

_log = logging.getLogger(__name__)

# A Kafka admin client for (bootstrap servers, client properties, the longest an admin call may
# wait), closed when the block ends.
Connect = Callable[[str, Mapping[str, str], float], AbstractContextManager[AdminPort]]


def kafka_admin(
    bootstrap: str, props: Mapping[str, str], timeout_s: float
) -> AbstractContextManager[AdminPort]:
    return closing(KafkaAdmin(bootstrap, props, timeout_s=timeout_s))


class ExecutionBusy(KafkaBalancerError):
    """The pool's execution did not stop in time for the pool's deletion; kopf retries."""


class ExecutionService:
    """One per operator process; created at startup and shared through kopf's memo."""

    def __init__(
        self,
        kube: KubePort,
        state_dir: Path,
        timings: Timings,
        metrics: OperatorMetrics,
        connect: Connect = kafka_admin,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        namespace: str = DEFAULT_NAMESPACE,
        max_executions: int = DEFAULT_LIMITS.executions,
    ) -> None:
        self.kube = kube
        # Each execution holds a worker thread and Kafka clients until its plan ends.
        self.max_executions = max_executions
        self._slots = threading.BoundedSemaphore(max_executions)
        # Pools whose plan found no slot, and which plan: told once, not at every pass.
        self._queued: dict[str, str] = {}
        # Where the Kafka clusters' leases live (the operator's own namespace).
        self.namespace = namespace
        self.state_dir = state_dir / "executions"
        self.timings = timings
        self.metrics = metrics
        self._connect = connect
        self.clock = clock
        self.sleep = sleep
        # Held by the worker thread that executes a pool's plan, which can outlive its cancelled daemon.
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        # One per pool for the process's life: a takeover counts a stale holder's silence across passes.
        self._leases: dict[str, PoolLease] = {}
        self._leases_lock = threading.Lock()

    def lease(self, pool: PoolId) -> PoolLease:
        with self._leases_lock:
            if pool.key not in self._leases:
                self._leases[pool.key] = PoolLease(self.kube, pool, duration_s=self.timings.lease_duration_s)
            return self._leases[pool.key]

    def cluster_lease(self, pool: PoolId, admin: AdminPort) -> PoolLease:
        """The lease of the Kafka cluster ``admin`` reaches, as ``pool`` holds it."""
        cluster = admin.cluster_id()
        key = f"{pool.key} {cluster}"
        with self._leases_lock:
            if key not in self._leases:
                self._leases[key] = cluster_lease(
                    self.kube, pool, cluster, self.namespace, duration_s=self.timings.lease_duration_s
                )
            return self._leases[key]

    def execute(
        self,
        pool: PoolId,
        stored: StoredPlan,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        live: Liveness,
        seen: SeenPool,
    ) -> ExecutionPhase | None:
        """Run ``stored`` to its end, holding the pool's execution lease; the phase it ended in
        (None: stopped for another operator, finished by the one that took it over, or not started
        because this process runs ``max_executions`` already: a later pass starts it)."""
        if not self._slots.acquire(blocking=False):
            if self._queued.get(pool.key) != stored.id:
                self._queued[pool.key] = stored.id
                text = (
                    f"Plan {stored.id} waits: {self.max_executions} plan(s) are executing in this "
                    "operator process, its limit (KAFKA_BALANCER_MAX_EXECUTIONS); a later pass starts it"
                )
                _log.info("pool %s: %s", pool.key, text)
                self.kube.post_event(pool, Event("Normal", "ExecutionQueued", sentence(text)))
            return None
        self._queued.pop(pool.key, None)
        try:
            run = PlanRun(self, pool, stored, spec, live, seen)
            # A broker that hangs must not stretch the dead-broker timeout to the client's request timeout.
            connection = self._connect(
                spec.connection().bootstrap_servers, props, run.options.request_timeout_s
            )
            return run.execute(self._locks[pool.key], connection)
        finally:
            self._slots.release()

    def release_left_throttles(
        self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str], failed: str | None = None
    ) -> list[str]:
        """Level-based, at every pass that does not execute: throttles an execution had to leave on a
        broker that was down go once it is back; and ``failed``, the plan the status says failed, is
        cancelled if its record is unfinished: this pass does not run it again (a Manual approval
        that no longer names it, a newer plan, a pause), so nothing else would take its moves in
        flight and its throttles back. Only by the holder of the pool's execution lease, taken only
        when there is something to do. Returns the brokers whose throttles went."""
        lock = self._locks[pool.key]
        if not lock.acquire(blocking=False):
            return []  # an execution (or the pool's deletion) is handling the pool's throttles right now
        try:
            lease = self.lease(pool)
            try:
                recorded = StateMirror(self.kube, pool, timings=self.timings).load()
            except KafkaBalancerError as err:
                _log.warning("pool %s: left throttles not looked at: %s", pool.key, err)
                return []
            if recorded is None:
                return []
            plan, state = recorded
            abandoned = plan == failed and state.finished_at is None
            if not (abandoned or state.throttled_brokers) or not lease.try_acquire():
                # Nothing left behind; or another process holds the pool's execution: its throttles
                # are its own.
                return []
            try:
                with self._admins(pool, spec, props, lease) as admin:
                    mirror = StateMirror(self.kube, pool, timings=self.timings, check=lease.check)
                    if abandoned:
                        return self._settle_failed(pool, plan, state, admin(), mirror)
                    return release_returned_brokers(admin, mirror, self.state_dir)
            except KafkaBalancerError as err:
                _log.warning("pool %s: left throttles not released yet: %s", pool.key, err)
                return []
            finally:
                lease.release()
        finally:
            lock.release()

    def cancel_stopped(
        self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str], plan: str
    ) -> str | None:
        """Cancel on request ``plan``, whose execution is unfinished but not running (paused, or left
        by a process that is gone): its moves still in flight cancelled, the others never started, its
        throttles removed, as a running one's are. What it did, as words that follow "cancelled"; None
        while an execution in this process or another holds the pool (a later pass tries again)."""
        lock = self._locks[pool.key]
        if not lock.acquire(blocking=False):
            return None
        try:
            lease = self.lease(pool)
            if not lease.try_acquire():
                return None
            try:
                mirror = StateMirror(self.kube, pool, timings=self.timings, check=lease.check)
                recorded = mirror.load()
                if recorded is None or recorded[0] != plan or recorded[1].finished_at is not None:
                    # Nothing of it in Kafka: no record of it (paused before its first move).
                    return f"on request ({CANCEL_ANNOTATION}) before any move of it started"
                in_flight = {m.tp for m in recorded[1].by_status(MoveStatus.IN_FLIGHT)}
                with self._admins(pool, spec, props, lease) as admin:
                    settle_unfinished(admin(), mirror, self.state_dir, clock=self.clock, sleep=self.sleep)
                after = mirror.load()
                return None if after is None else cancelled_text(in_flight, after[1])
            except KafkaBalancerError as err:
                _log.warning("pool %s: plan %s not cancelled yet: %s", pool.key, plan, err)
                return None
            finally:
                lease.release()
        finally:
            lock.release()

    def _settle_failed(
        self, pool: PoolId, plan: str, state: ExecutionState, admin: AdminPort, mirror: StateMirror
    ) -> list[str]:
        in_flight = len(state.by_status(MoveStatus.IN_FLIGHT))
        settle_unfinished(admin, mirror, self.state_dir, clock=self.clock, sleep=self.sleep)
        after = mirror.load()
        left = sorted(after[1].throttled_brokers) if after is not None else []
        text = f"Plan {plan} failed and is not run again: {in_flight} move(s) in flight cancelled"
        if left:
            text += (
                f"; its throttles stay on broker(s) {', '.join(left)}, which are down, until they are back"
            )
        else:
            text += " and every throttle it set removed"
        _log.info("pool %s: %s", pool.key, text)
        self.kube.post_event(pool, Event("Normal", "FailedPlanSettled", sentence(text)))
        return sorted(set(state.throttled_brokers) - set(left))

    def cordon(
        self, spec: BrokerPoolSpec, props: Mapping[str, str], wanted: frozenset[int], ours: frozenset[int]
    ) -> frozenset[int] | None:
        """kafka/cordon.py's sync_cordons on the pool's cluster: the brokers held cordoned now, or
        None when its Kafka does not know cordoning."""
        with self._connect(spec.connection().bootstrap_servers, props, TIMEOUT_S) as admin:
            return sync_cordons(admin, wanted, ours)

    def settle_deleted(self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str]) -> str | None:
        """A deleted pool's moves still in flight are cancelled and its throttles removed; the id of
        the plan cancelled, if any. :class:`ExecutionBusy` while its execution is still stopping or
        another process holds the pool's execution lease."""
        lock = self._locks[pool.key]
        # The daemon was told to stop; its execution thread stops at its next step.
        if not lock.acquire(timeout=self.timings.deletion_wait_s):
            raise ExecutionBusy("the pool's execution is still stopping")
        lease = self.lease(pool)
        try:
            give_up = time.monotonic() + 2 * lease.duration_s
            if not lease.acquire(lambda: time.monotonic() > give_up):
                raise ExecutionBusy("another process holds the pool's execution lease")
            mirror = StateMirror(self.kube, pool, timings=self.timings, check=lease.check)
            recorded = mirror.load()
            if recorded is None or recorded[1].finished_at is not None:
                return None  # nothing in flight: no need to reach Kafka (it may be gone for good)
            with self._connect(spec.connection().bootstrap_servers, props, TIMEOUT_S) as admin:
                cluster = self.cluster_lease(pool, admin)
                if not cluster.acquire(lambda: time.monotonic() > give_up):
                    busy = holder_pool(cluster.holder())
                    raise ExecutionBusy(f"pool {busy} is executing a plan on the same Kafka cluster")
                try:
                    return settle_unfinished(
                        FencedAdmin(admin, Fences(lease, cluster)),
                        mirror,
                        self.state_dir,
                        clock=self.clock,
                        sleep=self.sleep,
                    )
                finally:
                    cluster.release()
        finally:
            lease.release()
            lock.release()

    @contextmanager
    def _admins(
        self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str], lease: PoolLease
    ) -> Iterator[Callable[[], AdminPort]]:
        """Fenced clients made on demand (a pass may find nothing to release), each holding the Kafka
        cluster's lease too (:class:`ExecutionBusy` while another pool executes on the cluster); all
        closed, and the cluster's lease handed back, after."""
        opened: list[AbstractContextManager[AdminPort]] = []
        held: list[PoolLease] = []

        def admin() -> AdminPort:
            opened.append(self._connect(spec.connection().bootstrap_servers, props, TIMEOUT_S))
            made = opened[-1].__enter__()
            cluster = self.cluster_lease(pool, made)
            if not cluster.try_acquire():
                busy = holder_pool(cluster.holder())
                raise ExecutionBusy(f"pool {busy} is executing a plan on the same Kafka cluster")
            held.append(cluster)
            return FencedAdmin(made, Fences(lease, cluster))

        try:
            yield admin
        finally:
            for cluster in held:
                cluster.release()
            for made in opened:
                made.__exit__(None, None, None)
