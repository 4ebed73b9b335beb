"""The execution service: runs a pool's approved plan and tells the user how it goes.

At most one execution per pool at a time in this process (a lock per pool, held by the worker thread,
which can outlive the daemon that started it), and at most one across processes: every Kafka write
is fenced by the pool's execution lease (k8s/lease.py) and every state write is conditional
(k8s/state_mirror.py), so a replica frozen past its peering lifetime cannot act on a pool another
replica took over. A pause, mode DryRun or a withdrawn approval (for a repair that runs unapproved:
the opt-in turned off) halts the run at its next batch and releases its throttles as its moves
finish. Its progress, end and failure go into the pool's ``status.execution`` / ``status.plan``
with the ``Executing`` and ``Ready`` conditions, Events and metrics; an apiserver outage is ridden
out and reported (KubernetesApiOutage) once it is back. The mechanics (resume, mirror, settle) are
in :mod:`kafka_balancer.k8s.execution`. Every method blocks: the pool service calls them from its
worker thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import (
    ExecutionFenced,
    ExecutionHalted,
    KafkaBalancerError,
    KubernetesUnavailable,
)
from kafka_balancer.k8s.execution import (
    execute_plan,
    options_of,
    release_returned_brokers,
    settle_unfinished,
)
from kafka_balancer.k8s.lease import PoolLease, cluster_lease, holder_pool
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import DEFAULT_LIMITS, DEFAULT_NAMESPACE, Timings
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.admin import TIMEOUT_S, KafkaAdmin
from kafka_balancer.kafka.cordon import sync_cordons
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.fence import FencedAdmin, Fences
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.progress import cap_text, duration_text, eta_seconds
from kafka_balancer.kube_quantity import binary_quantity
from kafka_balancer.reconcile.approval import halt_reason, repair_opted_in
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.executing import execution_conditions
from kafka_balancer.reconcile.pool_input import StoredPlan
from kafka_balancer.reconcile.status import (
    ExecutionPhase,
    ExecutionProgress,
    ExecutionStatus,
    ExecutionUpdate,
    PlanProgress,
)

PLURAL_POOLS = "brokerpools"
# An Event names this many of the partitions an execution skipped (a deleted topic can have hundreds).
SHOWN_SKIPPED = 3
_log = logging.getLogger(__name__)

# A Kafka admin client for (bootstrap servers, client properties, the longest an admin call may
# wait), closed when the block ends.
Connect = Callable[[str, Mapping[str, str], float], AbstractContextManager[AdminPort]]


def kafka_admin(
    bootstrap: str, props: Mapping[str, str], timeout_s: float
) -> AbstractContextManager[AdminPort]:
    return closing(KafkaAdmin(bootstrap, props, timeout_s=timeout_s))


def _unknown() -> str | None:
    return None


def _unknown_flag() -> bool | None:
    return None


@dataclass(frozen=True)
class Liveness:
    """What the pool's daemon knows while an execution runs: kopf's live view of the pool."""

    stopping: Callable[[], bool]  # the daemon is stopping (shutdown, or peering handed over)
    paused: Callable[[], bool]  # spec.paused, as it is now
    # spec.mode as it is now; None: as the sync read it (the parsed spec's mode).
    mode: Callable[[], str | None] = _unknown
    # The approval annotation as it is now; None here (no live view): as the sync read it.
    approved: Callable[[], str | None] | None = None
    # spec.selfHealing.repairHardGoals and .enabled as they are now; None: as the sync read them.
    repair_hard_goals: Callable[[], bool | None] = _unknown_flag
    heal_brokers: Callable[[], bool | None] = _unknown_flag


@dataclass(frozen=True)
class SeenPool:
    """The pool as the sync that starts an execution left it: what the execution's status writes
    start from (a merge patch replaces the conditions list whole)."""

    generation: int
    execution: Mapping[str, Any] | None  # status.execution
    conditions: Sequence[Mapping[str, Any]]  # status.conditions
    approved: str | None  # the approval annotation


class ExecutionBusy(KafkaBalancerError):
    """The pool's execution did not stop in time for the pool's deletion; kopf retries."""


def execution_progress(state: ExecutionState, now: float) -> tuple[ExecutionProgress, str]:
    """An execution's progress as status fields (integers: no floats in status) and a one-line message."""
    done, total = state.bytes_done, state.bytes_total
    moves_done, moves = len(state.by_status(MoveStatus.DONE)), len(state.moves)
    eta = eta_seconds(state, now)
    message = f"{moves_done}/{moves} moves, {100.0 * done / total if total else 100.0:.0f}% of bytes"
    dir_done, dir_total = state.dir_bytes_done, state.dir_bytes_total
    if dir_total:
        message += f", {100.0 * dir_done / dir_total:.0f}% of log-dir bytes"
    progress = ExecutionProgress(
        moves_done=moves_done,
        moves_in_flight=len(state.by_status(MoveStatus.IN_FLIGHT)),
        moves_pending=len(state.by_status(MoveStatus.PENDING)),
        bytes_done=done,
        bytes_total=total,
        eta_seconds=None if eta is None else round(eta),
        eta=None if eta is None else duration_text(eta),
        dir_bytes_done=dir_done,
        dir_bytes_total=dir_total,
        moves_skipped=len(state.by_status(MoveStatus.SKIPPED)),
    )
    message += f", ETA {duration_text(eta)}" if eta is not None else ""
    return progress, message + (f"; {cap_text(state)}" if cap_text(state) else "")


def skipped_text(state: ExecutionState) -> str:
    """The partitions an execution left alone and why (a topic deleted, replicas someone else
    changed), the first few named; "" when it skipped none."""
    skipped = state.by_status(MoveStatus.SKIPPED)
    if not skipped:
        return ""
    shown = "; ".join(f"{m.topic}-{m.partition}: {m.reason}" for m in skipped[:SHOWN_SKIPPED])
    more = f"; and {len(skipped) - SHOWN_SKIPPED} more" if len(skipped) > SHOWN_SKIPPED else ""
    return f"{len(skipped)} partition move(s) skipped ({shown}{more}); the next plan places them anew"


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
        self._clock = clock
        self._sleep = sleep
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
            return self._execute(pool, stored, spec, props, live, seen)
        finally:
            self._slots.release()

    def _execute(
        self,
        pool: PoolId,
        stored: StoredPlan,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        live: Liveness,
        seen: SeenPool,
    ) -> ExecutionPhase | None:
        lease = self.lease(pool)
        # Set once the API answers again after an outage during this run; kept in the status message.
        outage: list[str] = []
        # What the run last waited for (its batch's partitions' health): an Event when that changes.
        waited = [""]

        def halt() -> str | None:
            # kopf's live view of the pool: a pause, a mode change or a withdrawn approval (or opt-in,
            # for a repair) stops the execution at its next batch.
            repair_hard_goals = live.repair_hard_goals()
            heal_brokers = live.heal_brokers()
            opted_in = stored.repairs is not None and repair_opted_in(
                stored.repairs,
                repair_hard_goals=spec.self_healing.repair_hard_goals
                if repair_hard_goals is None
                else repair_hard_goals,
                heal_brokers=spec.self_healing.enabled if heal_brokers is None else heal_brokers,
            )
            return halt_reason(
                mode=live.mode() or spec.mode,
                paused=live.paused(),
                approved=seen.approved if live.approved is None else live.approved(),
                plan=stored.id,
                repair=opted_in,
            )

        def write(execution: ExecutionStatus, plan: PlanProgress | None = None) -> None:
            conditions = execution_conditions(
                seen.conditions, execution, generation=seen.generation, now=self._clock()
            )
            try:
                self._write(pool, ExecutionUpdate(execution, plan, conditions))
            except KubernetesUnavailable as err:
                _log.warning("pool %s: status not written this time: %s", pool.key, err)

        def progress(state: ExecutionState) -> None:
            if state.waiting and state.waiting != waited[-1]:
                self.kube.post_event(
                    pool, Event("Warning", "ExecutionWaiting", sentence(f"Plan {stored.id}: {state.waiting}"))
                )
            waited.append(state.waiting)
            fields, message = execution_progress(state, self._clock())
            self.metrics.execution_progress(pool.key, state, self._clock())
            reason = halt()
            if reason is not None:
                message = f"halting ({reason}): nothing more is submitted; {message}"
            if outage:
                message = f"{message}; {outage[-1]}"
            write(
                ExecutionStatus(
                    stored.id, ExecutionPhase.RUNNING, message, fields, waiting=state.waiting or None
                ),
                PlanProgress(fields.moves_done, len(state.moves) - fields.moves_done),
            )

        def recovered(seconds: float) -> None:
            note = f"the Kubernetes API was unreachable for {seconds:.0f}s; moves went on"
            outage.append(note)
            self.kube.post_event(
                pool, Event("Warning", "KubernetesApiOutage", sentence(f"Plan {stored.id}: {note}"))
            )

        resumed = (seen.execution or {}).get("planId") == stored.id
        # One for every attempt: an outage that cost the lease is reported once the API is back.
        mirror = StateMirror(self.kube, pool, timings=self.timings, check=lease.check, on_recovered=recovered)
        options = options_of(spec.execution, self.timings.execution_poll_s)

        def wait_for(cluster: PoolLease) -> bool:
            """Hold the Kafka cluster's lease (True), waiting while another pool executes on it and
            saying which; False once told to stop or halt meanwhile."""
            told = ""
            while not cluster.try_acquire():
                if live.stopping() or halt() is not None:
                    return False
                holder = holder_pool(cluster.holder())
                if holder != told:
                    told = holder
                    text = f"waiting: pool {holder} is executing a plan on the same Kafka cluster"
                    _log.info("plan %s: %s", stored.id, text)
                    self.kube.post_event(
                        pool, Event("Normal", "ExecutionWaiting", sentence(f"Plan {stored.id} is {text}"))
                    )
                    write(ExecutionStatus(stored.id, ExecutionPhase.RUNNING, text, waiting=text))
                self._sleep(self.timings.wake_s)
            return True

        def run(admin: AdminPort) -> ExecutionState | None:
            """The final state once this process ran the plan to its end; None if another one
            finished it."""
            nonlocal resumed
            cluster = self.cluster_lease(pool, admin)

            def give_up() -> bool:
                # While the pool's lease is awaited, so is the cluster's: a holder silent on both (a
                # process frozen mid-execution) is then taken over from both after one lease
                # duration, not one after the other.
                cluster.observe()
                return live.stopping() or halt() is not None

            while True:
                if not lease.acquire(give_up):
                    raise ExecutionHalted(halt() or "the operator is stopping")
                if not wait_for(cluster):
                    lease.release()
                    raise ExecutionHalted(halt() or "the operator is stopping")
                try:
                    recorded = mirror.load() if resumed else None
                    if recorded is not None and recorded[0] == stored.id and recorded[1].finished_at:
                        return None  # the owner that took over while this process was away finished it
                    # Once per plan, by the process that holds its lease; a takeover resumes quietly.
                    if not resumed:
                        self.kube.post_event(
                            pool,
                            Event(
                                "Normal",
                                "ExecutionStarted",
                                f"Executing plan {stored.id}: {stored.moves} replica move(s) copying "
                                f"{binary_quantity(stored.bytes_to_move)}.",
                            ),
                        )
                    message = "resuming" if resumed else "starting"
                    resumed = True
                    write(ExecutionStatus(stored.id, ExecutionPhase.RUNNING, message))
                    return execute_plan(
                        mirror,
                        Fences(lease, cluster),
                        admin,
                        self.state_dir,
                        stored,
                        options,
                        progress,
                        # The worker thread outlives a cancelled daemon (shutdown, or peering handing
                        # over to another replica): it stops at its next step; the record lets the
                        # next owner resume.
                        live.stopping,
                        halt,
                        clock=self._clock,
                        sleep=self._sleep,
                    )
                except ExecutionFenced as err:
                    # Nothing more was written to Kafka. Whoever holds the lease now goes on; if nobody
                    # took it (the API was away for longer than the lease), this process takes it back.
                    _log.warning("plan %s: %s", stored.id, err)
                    if live.stopping():
                        raise
                finally:
                    cluster.release()
                    lease.release()

        # A broker that hangs must not stretch the dead-broker timeout to the client's request timeout.
        connection = self._connect(spec.kafka.bootstrap_servers, props, options.request_timeout_s)
        try:
            with self._locks[pool.key], connection as admin:
                finished_here = run(admin)
        except ExecutionFenced:
            _log.info("plan %s: stopped submitting moves; the next active operator resumes it", stored.id)
            return None
        except KafkaBalancerError as err:
            return self._stopped(pool, stored, err, live, write)
        if finished_here is None:
            _log.info("plan %s: finished by the process that took it over", stored.id)
            return None
        self.metrics.executions.labels(pool.key, "succeeded").inc()
        skipped = skipped_text(finished_here)
        self.kube.post_event(
            pool,
            Event(
                "Normal",
                "ExecutionFinished",
                sentence(
                    f"Plan {stored.id} executed and verified: {stored.moves} replica move(s) done"
                    + (f"; {skipped}" if skipped else "")
                ),
            ),
        )
        if skipped:
            self.kube.post_event(
                pool, Event("Warning", "MovesSkipped", sentence(f"Plan {stored.id}: {skipped}"))
            )
        write(
            ExecutionStatus(stored.id, ExecutionPhase.SUCCEEDED, skipped, moves_done=stored.moves),
            PlanProgress(stored.moves, 0, executed_id=stored.id),
        )
        return ExecutionPhase.SUCCEEDED

    def _stopped(
        self,
        pool: PoolId,
        stored: StoredPlan,
        err: KafkaBalancerError,
        live: Liveness,
        write: Callable[[ExecutionStatus], None],
    ) -> ExecutionPhase | None:
        if live.stopping():
            _log.info("plan %s: stopped submitting moves; the next active operator resumes it", stored.id)
            return None
        halted = isinstance(err, ExecutionHalted)
        if not halted:
            _log.error("plan %s failed: %s", stored.id, err)
            self.metrics.executions.labels(pool.key, "failed").inc()
        self.kube.post_event(
            pool,
            Event(
                "Normal" if halted else "Warning",
                "ExecutionPaused" if halted else "ExecutionFailed",
                sentence(f"Plan {stored.id} {'halted' if halted else 'failed'}: {err}"),
            ),
        )
        phase = ExecutionPhase.PAUSED if halted else ExecutionPhase.FAILED
        write(ExecutionStatus(stored.id, phase, str(err)))
        return phase

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

    def _settle_failed(
        self, pool: PoolId, plan: str, state: ExecutionState, admin: AdminPort, mirror: StateMirror
    ) -> list[str]:
        in_flight = len(state.by_status(MoveStatus.IN_FLIGHT))
        settle_unfinished(admin, mirror, self.state_dir, clock=self._clock, sleep=self._sleep)
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
        with self._connect(spec.kafka.bootstrap_servers, props, TIMEOUT_S) as admin:
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
            with self._connect(spec.kafka.bootstrap_servers, props, TIMEOUT_S) as admin:
                cluster = self.cluster_lease(pool, admin)
                if not cluster.acquire(lambda: time.monotonic() > give_up):
                    busy = holder_pool(cluster.holder())
                    raise ExecutionBusy(f"pool {busy} is executing a plan on the same Kafka cluster")
                try:
                    return settle_unfinished(
                        FencedAdmin(admin, Fences(lease, cluster)),
                        mirror,
                        self.state_dir,
                        clock=self._clock,
                        sleep=self._sleep,
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
            opened.append(self._connect(spec.kafka.bootstrap_servers, props, TIMEOUT_S))
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

    def _write(self, pool: PoolId, update: ExecutionUpdate) -> None:
        self.kube.patch_status(PLURAL_POOLS, pool.namespace, pool.name, update.to_dict())
