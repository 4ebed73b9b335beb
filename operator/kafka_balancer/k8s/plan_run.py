"""One execution of a pool's plan by this process, from the pool's lease to the report of its end.

The execution service (k8s/executions.py) admits it (a slot of the process, the pool's lock) and
hands it a Kafka client; the run holds the pool's execution lease and the Kafka cluster's while it
writes to Kafka, resumes what the record says after losing them, halts at its next batch when the
spec no longer lets it go on (a pause, mode DryRun, a withdrawn approval or opt-in), cancels its
moves in flight when the user cancels the plan (the cancel annotation), and tells the
user how it goes: the pool's ``status.execution`` / ``status.plan`` with the ``Executing`` and
``Ready`` conditions, Events and metrics. An apiserver outage is ridden out and reported
(KubernetesApiOutage) once it is back. The mechanics (resume, mirror, settle) are in
:mod:`kafka_balancer.k8s.mirrored_executor`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.durations import age_text
from kafka_balancer.errors import (
    ExecutionCancelled,
    ExecutionFenced,
    ExecutionHalted,
    KafkaBalancerError,
    KubernetesUnavailable,
)
from kafka_balancer.k8s.lease import PoolLease, holder_pool
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.mirrored_executor import RunSite, execute_plan, options_of
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.fence import Fences
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.progress import cap_text, eta_seconds
from kafka_balancer.kube_quantity import binary_quantity
from kafka_balancer.reconcile.approval import CANCEL_ANNOTATION, repair_opted_in
from kafka_balancer.reconcile.approval import cancel_requested as cancel_named
from kafka_balancer.reconcile.approval import halt_reason as reason_to_halt
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.executing import cancelled_event, execution_conditions
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
    # The cancel annotation as it is now (None: no request); the sync never starts a plan it names.
    cancel: Callable[[], str | None] = _unknown


@dataclass(frozen=True)
class SeenPool:
    """The pool as the sync that starts an execution left it: what the execution's status writes
    start from (a merge patch replaces the conditions list whole)."""

    generation: int
    execution: Mapping[str, Any] | None  # status.execution
    conditions: Sequence[Mapping[str, Any]]  # status.conditions
    approved: str | None  # the approval annotation


class RunServices(Protocol):
    """What a run uses of the execution service that starts it: the process's clients, settings and
    time, and the leases the service keeps for the process's life (a takeover counts a stale
    holder's silence across runs)."""

    kube: KubePort
    metrics: OperatorMetrics
    timings: Timings
    state_dir: Path
    clock: Callable[[], float]
    sleep: Callable[[float], None]

    def lease(self, pool: PoolId) -> PoolLease: ...

    def cluster_lease(self, pool: PoolId, admin: AdminPort) -> PoolLease: ...


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
        eta=None if eta is None else age_text(eta),
        dir_bytes_done=dir_done,
        dir_bytes_total=dir_total,
        moves_skipped=len(state.by_status(MoveStatus.SKIPPED)),
    )
    message += f", ETA {age_text(eta)}" if eta is not None else ""
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


class PlanRun:
    """One execution of ``stored`` on ``pool``'s cluster, as the sync that started it saw the pool
    (``seen``) and as its daemon sees it now (``live``)."""

    def __init__(
        self,
        services: RunServices,
        pool: PoolId,
        stored: StoredPlan,
        spec: BrokerPoolSpec,
        live: Liveness,
        seen: SeenPool,
    ) -> None:
        self.services = services
        self.pool = pool
        self.stored = stored
        self.spec = spec
        self.live = live
        self.seen = seen
        self.lease = services.lease(pool)
        self.options = options_of(spec.execution, services.timings.execution_poll_s)
        # Set once the API answers again after an outage during this run; kept in the status message.
        self._outage: str | None = None
        # What the run last waited for (its batch's partitions' health): an Event when that changes.
        self._waited = ""
        self._resumed = (seen.execution or {}).get("planId") == stored.id
        # One for every attempt: an outage that cost the lease is reported once the API is back.
        self._mirror = StateMirror(
            services.kube, pool, timings=services.timings, check=self.lease.check, on_recovered=self.recovered
        )

    def execute(
        self, lock: threading.Lock, connection: AbstractContextManager[AdminPort]
    ) -> ExecutionPhase | None:
        """Run the plan to its end under ``lock`` (the pool's, in this process) with the client
        ``connection`` opens; the phase it ended in (None: stopped for another operator, or finished
        by the one that took it over)."""
        try:
            with lock, connection as admin:
                finished_here = self._run(admin)
        except ExecutionFenced:
            _log.info(
                "plan %s: stopped submitting moves; the next active operator resumes it", self.stored.id
            )
            return None
        except KafkaBalancerError as err:
            return self._stopped(err)
        if finished_here is None:
            _log.info("plan %s: finished by the process that took it over", self.stored.id)
            return None
        return self._finished(finished_here)

    def halt_reason(self) -> str | None:
        """kopf's live view of the pool: a pause, a mode change or a withdrawn approval (or opt-in,
        for a repair) stops the execution at its next batch."""
        live, spec, stored = self.live, self.spec, self.stored
        repair_hard_goals = live.repair_hard_goals()
        heal_brokers = live.heal_brokers()
        opted_in = stored.repairs is not None and repair_opted_in(
            stored.repairs,
            repair_hard_goals=spec.self_healing.repair_hard_goals
            if repair_hard_goals is None
            else repair_hard_goals,
            heal_brokers=spec.self_healing.enabled if heal_brokers is None else heal_brokers,
        )
        return reason_to_halt(
            mode=live.mode() or spec.mode,
            paused=live.paused(),
            approved=self.seen.approved if live.approved is None else live.approved(),
            plan=stored.id,
            repair=opted_in,
        )

    def cancel_requested(self) -> bool:
        """kopf's live view of the pool: the cancel annotation names this plan."""
        return cancel_named(requested=self.live.cancel(), plan=self.stored.id)

    def stop_requested(self) -> bool:
        # The worker thread outlives a cancelled daemon (shutdown, or peering handing over to another
        # replica): it stops at its next step; the record lets the next owner resume.
        return self.live.stopping()

    def progress(self, state: ExecutionState) -> None:
        """The execution's state as committed: status, metrics, and an Event when what it waits for
        changes."""
        services, stored = self.services, self.stored
        if state.waiting and state.waiting != self._waited:
            services.kube.post_event(
                self.pool,
                Event("Warning", "ExecutionWaiting", sentence(f"Plan {stored.id}: {state.waiting}")),
            )
        self._waited = state.waiting
        fields, message = execution_progress(state, services.clock())
        services.metrics.execution_progress(self.pool.key, state, services.clock())
        reason = self.halt_reason()
        if self.cancel_requested():
            message = f"cancelling on request: {message}"
        elif reason is not None:
            message = f"halting ({reason}): nothing more is submitted; {message}"
        if self._outage is not None:
            message = f"{message}; {self._outage}"
        self._write(
            ExecutionStatus(
                stored.id, ExecutionPhase.RUNNING, message, fields, waiting=state.waiting or None
            ),
            PlanProgress(fields.moves_done, len(state.moves) - fields.moves_done),
        )

    def recovered(self, seconds: float) -> None:
        """The Kubernetes API answers again after ``seconds`` away."""
        self._outage = f"the Kubernetes API was unreachable for {age_text(seconds)}; moves went on"
        self.services.kube.post_event(
            self.pool,
            Event("Warning", "KubernetesApiOutage", sentence(f"Plan {self.stored.id}: {self._outage}")),
        )

    def _write(self, execution: ExecutionStatus, plan: PlanProgress | None = None) -> None:
        conditions = execution_conditions(
            self.seen.conditions, execution, generation=self.seen.generation, now=self.services.clock()
        )
        update = ExecutionUpdate(execution, plan, conditions)
        try:
            self.services.kube.patch_status(
                PLURAL_POOLS, self.pool.namespace, self.pool.name, update.to_dict()
            )
        except KubernetesUnavailable as err:
            _log.warning("pool %s: status not written this time: %s", self.pool.key, err)

    def _hold(self, cluster: PoolLease) -> bool:
        """Hold the Kafka cluster's lease (True), waiting while another pool executes on it and saying
        which; False once told to stop or halt meanwhile."""
        stored = self.stored
        told = ""
        while not cluster.try_acquire():
            if self._gives_up():
                return False
            holder = holder_pool(cluster.holder())
            if holder != told:
                told = holder
                text = f"waiting: pool {holder} is executing a plan on the same Kafka cluster"
                _log.info("plan %s: %s", stored.id, text)
                self.services.kube.post_event(
                    self.pool, Event("Normal", "ExecutionWaiting", sentence(f"Plan {stored.id} is {text}"))
                )
                self._write(ExecutionStatus(stored.id, ExecutionPhase.RUNNING, text, waiting=text))
            self.services.sleep(self.services.timings.wake_s)
        return True

    def _give_up(self, cluster: PoolLease) -> bool:
        # While the pool's lease is awaited, so is the cluster's: a holder silent on both (a process
        # frozen mid-execution) is then taken over from both after one lease duration, not one after
        # the other.
        cluster.observe()
        return self._gives_up()

    def _gives_up(self) -> bool:
        """Stop waiting to start: told to stop, to halt, or the plan cancelled before it started."""
        return self.stop_requested() or self.cancel_requested() or self.halt_reason() is not None

    def _not_started(self) -> KafkaBalancerError:
        """Why the run ends without having held its leases (nothing of it was started by this wait)."""
        if not self.stop_requested() and self.cancel_requested():
            return ExecutionCancelled(f"on request ({CANCEL_ANNOTATION}) while it waited to start")
        return ExecutionHalted(self.halt_reason() or "the operator is stopping")

    def _run(self, admin: AdminPort) -> ExecutionState | None:
        """The final state once this process ran the plan to its end; None if another one finished it."""
        services, stored, lease = self.services, self.stored, self.lease
        cluster = services.cluster_lease(self.pool, admin)
        while True:
            if not lease.acquire(partial(self._give_up, cluster)):
                raise self._not_started()
            if not self._hold(cluster):
                lease.release()
                raise self._not_started()
            try:
                recorded = self._mirror.load() if self._resumed else None
                if recorded is not None and recorded[0] == stored.id and recorded[1].finished_at:
                    return None  # the owner that took over while this process was away finished it
                # Once per plan, by the process that holds its lease; a takeover resumes quietly.
                if not self._resumed:
                    services.kube.post_event(
                        self.pool,
                        Event(
                            "Normal",
                            "ExecutionStarted",
                            f"Executing plan {stored.id}: {stored.moves} replica move(s) copying "
                            f"{binary_quantity(stored.bytes_to_move)}.",
                        ),
                    )
                message = "resuming" if self._resumed else "starting"
                self._resumed = True
                self._write(ExecutionStatus(stored.id, ExecutionPhase.RUNNING, message))
                site = RunSite(
                    admin,
                    Fences(lease, cluster),
                    self._mirror,
                    services.state_dir,
                    services.clock,
                    services.sleep,
                )
                return execute_plan(stored, self.options, site, self)
            except ExecutionFenced as err:
                # Nothing more was written to Kafka. Whoever holds the lease now goes on; if nobody
                # took it (the API was away for longer than the lease), this process takes it back.
                _log.warning("plan %s: %s", stored.id, err)
                if self.stop_requested():
                    raise
            finally:
                cluster.release()
                lease.release()

    def _finished(self, final: ExecutionState) -> ExecutionPhase:
        stored = self.stored
        self.services.metrics.executions.labels(self.pool.key, "succeeded").inc()
        skipped = skipped_text(final)
        self.services.kube.post_event(
            self.pool,
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
            self.services.kube.post_event(
                self.pool, Event("Warning", "MovesSkipped", sentence(f"Plan {stored.id}: {skipped}"))
            )
        self._write(
            ExecutionStatus(stored.id, ExecutionPhase.SUCCEEDED, skipped, moves_done=stored.moves),
            PlanProgress(stored.moves, 0, executed_id=stored.id),
        )
        return ExecutionPhase.SUCCEEDED

    def _stopped(self, err: KafkaBalancerError) -> ExecutionPhase | None:
        stored = self.stored
        if self.stop_requested():
            _log.info("plan %s: stopped submitting moves; the next active operator resumes it", stored.id)
            return None
        if isinstance(err, ExecutionCancelled):
            return self._cancelled(err)
        halted = isinstance(err, ExecutionHalted)
        if not halted:
            _log.error("plan %s failed: %s", stored.id, err)
            self.services.metrics.executions.labels(self.pool.key, "failed").inc()
        self.services.kube.post_event(
            self.pool,
            Event(
                "Normal" if halted else "Warning",
                "ExecutionPaused" if halted else "ExecutionFailed",
                sentence(f"Plan {stored.id} {'halted' if halted else 'failed'}: {err}"),
            ),
        )
        phase = ExecutionPhase.PAUSED if halted else ExecutionPhase.FAILED
        self._write(ExecutionStatus(stored.id, phase, str(err)))
        return phase

    def _cancelled(self, err: ExecutionCancelled) -> ExecutionPhase:
        stored = self.stored
        event = cancelled_event(stored.id, str(err))
        _log.info("pool %s: %s", self.pool.key, event.message)
        self.services.metrics.executions.labels(self.pool.key, "cancelled").inc()
        self.services.kube.post_event(self.pool, event)
        self._write(ExecutionStatus(stored.id, ExecutionPhase.CANCELLED, str(err)))
        return ExecutionPhase.CANCELLED
