"""The execution service: runs a pool's approved plan and tells the user how it goes.

At most one execution per pool at a time in this process (a lock per pool, held by the worker thread,
which can outlive the daemon that started it); its progress, end and failure go into the pool's
``status.execution`` / ``status.plan``, Events and metrics. The mechanics (resume, mirror, settle)
are in :mod:`kafka_balancer.k8s.execution`. Every method blocks: the pool service calls them from its
worker thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import KafkaBalancerError, KafkaOperationError
from kafka_balancer.k8s.execution import (
    execute_plan,
    options_of,
    release_returned_brokers,
    settle_unfinished,
)
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.kafka.admin import TIMEOUT_S, KafkaAdmin
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.progress import duration_text, eta_seconds
from kafka_balancer.reconcile.pool import Event, StoredPlan
from kafka_balancer.reconcile.status import (
    ExecutionPhase,
    ExecutionProgress,
    ExecutionStatus,
    ExecutionUpdate,
    PlanProgress,
)

PLURAL_POOLS = "brokerpools"
_log = logging.getLogger(__name__)

# A Kafka admin client for (bootstrap servers, client properties, the longest an admin call may
# wait), closed when the block ends.
Connect = Callable[[str, Mapping[str, str], float], AbstractContextManager[AdminPort]]


def kafka_admin(
    bootstrap: str, props: Mapping[str, str], timeout_s: float
) -> AbstractContextManager[AdminPort]:
    return closing(KafkaAdmin(bootstrap, props, timeout_s=timeout_s))


@dataclass(frozen=True)
class Liveness:
    """What the pool's daemon knows while an execution runs: kopf's live view of the pool."""

    stopping: Callable[[], bool]  # the daemon is stopping (shutdown, or peering handed over)
    paused: Callable[[], bool]  # spec.paused, as it is now


class ExecutionBusy(KafkaBalancerError):
    """The pool's execution did not stop in time for the pool's deletion; kopf retries."""


def execution_progress(state: ExecutionState, now: float) -> tuple[ExecutionProgress, str]:
    """An execution's progress as status fields (integers: no floats in status) and a one-line message."""
    done, total = state.bytes_done, state.bytes_total
    moves_done, moves = len(state.by_status(MoveStatus.DONE)), len(state.moves)
    eta = eta_seconds(state, now)
    message = f"{moves_done}/{moves} moves, {100.0 * done / total if total else 100.0:.0f}% of bytes"
    progress = ExecutionProgress(
        moves_done=moves_done,
        moves_in_flight=len(state.by_status(MoveStatus.IN_FLIGHT)),
        moves_pending=len(state.by_status(MoveStatus.PENDING)),
        bytes_done=done,
        bytes_total=total,
        eta_seconds=None if eta is None else round(eta),
    )
    return progress, message + (f", ETA {duration_text(eta)}" if eta is not None else "")


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
    ) -> None:
        self.kube = kube
        self.state_dir = state_dir / "executions"
        self.timings = timings
        self.metrics = metrics
        self._connect = connect
        self._clock = clock
        self._sleep = sleep
        # Held by the worker thread that executes a pool's plan, which can outlive its cancelled daemon.
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

    def execute(
        self, pool: PoolId, stored: StoredPlan, spec: BrokerPoolSpec, props: Mapping[str, str], live: Liveness
    ) -> ExecutionPhase | None:
        """Run ``stored`` to its end; the phase it ended in (None: stopped for another operator)."""
        self.kube.post_event(
            pool, Event("Normal", "ExecutionStarted", f"executing plan {stored.id} ({stored.moves} moves)")
        )
        self._write(pool, ExecutionUpdate(ExecutionStatus(stored.id, ExecutionPhase.RUNNING, "starting")))

        def progress(state: ExecutionState) -> None:
            fields, message = execution_progress(state, self._clock())
            self.metrics.moves_done.labels(pool.key).set(fields.moves_done)
            self.metrics.bytes_moved.labels(pool.key).set(fields.bytes_done)
            running = ExecutionStatus(stored.id, ExecutionPhase.RUNNING, message, fields)
            self._write(
                pool,
                ExecutionUpdate(
                    running, PlanProgress(fields.moves_done, len(state.moves) - fields.moves_done)
                ),
            )

        options = options_of(spec.execution, self.timings.execution_poll_s)
        # A broker that hangs must not stretch the dead-broker timeout to the client's request timeout.
        connection = self._connect(spec.kafka.bootstrap_servers, props, options.request_timeout_s)
        try:
            with self._locks[pool.key], connection as admin:
                execute_plan(
                    self.kube,
                    admin,
                    self.state_dir,
                    pool,
                    stored,
                    options,
                    progress,
                    # Pausing the pool stops the execution at its next batch. So does stopping the
                    # daemon (shutdown, or peering handing over to another replica): the worker thread
                    # outlives a cancelled coroutine, and the state lets the next one resume.
                    lambda: live.stopping() or live.paused(),
                    mirror_every_s=self.timings.mirror_every_s,
                    clock=self._clock,
                    sleep=self._sleep,
                )
        except KafkaBalancerError as err:
            return self._stopped(pool, stored, err, live)
        self.metrics.executions.labels(pool.key, "succeeded").inc()
        self.kube.post_event(
            pool, Event("Normal", "ExecutionFinished", f"plan {stored.id} executed and verified")
        )
        succeeded = ExecutionStatus(stored.id, ExecutionPhase.SUCCEEDED, "", moves_done=stored.moves)
        self._write(pool, ExecutionUpdate(succeeded, PlanProgress(stored.moves, 0, executed_id=stored.id)))
        return ExecutionPhase.SUCCEEDED

    def _stopped(
        self, pool: PoolId, stored: StoredPlan, err: KafkaBalancerError, live: Liveness
    ) -> ExecutionPhase | None:
        if live.stopping():
            _log.info("plan %s: stopped submitting moves; the next active operator resumes it", stored.id)
            return None
        paused = live.paused()
        if not paused:
            _log.error("plan %s failed: %s", stored.id, err)
            self.metrics.executions.labels(pool.key, "failed").inc()
        self.kube.post_event(
            pool,
            Event(
                "Normal" if paused else "Warning",
                "ExecutionPaused" if paused else "ExecutionFailed",
                f"plan {stored.id}: {err}",
            ),
        )
        phase = ExecutionPhase.PAUSED if paused else ExecutionPhase.FAILED
        self._write(pool, ExecutionUpdate(ExecutionStatus(stored.id, phase, str(err))))
        return phase

    def release_left_throttles(
        self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str]
    ) -> list[str]:
        """Level-based: throttles an execution had to leave on a broker that was down go once it is back."""
        lock = self._locks[pool.key]
        if not lock.acquire(blocking=False):
            return []  # an execution (or the pool's deletion) is handling the pool's throttles right now
        try:
            with self._admins(spec, props) as admin:
                return release_returned_brokers(self.kube, admin, self.state_dir, pool)
        except KafkaOperationError as err:
            _log.warning("pool %s: left throttles not released yet: %s", pool.key, err)
            return []
        finally:
            lock.release()

    def settle_deleted(self, pool: PoolId, spec: BrokerPoolSpec, props: Mapping[str, str]) -> str | None:
        """A deleted pool's moves still in flight are cancelled and its throttles removed; the id of
        the plan cancelled, if any. :class:`ExecutionBusy` while its execution is still stopping."""
        lock = self._locks[pool.key]
        # The daemon was told to stop; its execution thread stops at its next step.
        if not lock.acquire(timeout=self.timings.deletion_wait_s):
            raise ExecutionBusy("the pool's execution is still stopping")
        try:
            with self._connect(spec.kafka.bootstrap_servers, props, TIMEOUT_S) as admin:
                return settle_unfinished(
                    self.kube, admin, self.state_dir, pool, clock=self._clock, sleep=self._sleep
                )
        finally:
            lock.release()

    @contextmanager
    def _admins(self, spec: BrokerPoolSpec, props: Mapping[str, str]) -> Iterator[Callable[[], AdminPort]]:
        """Clients made on demand (most passes have no left throttle: no connection), all closed after."""
        opened: list[AbstractContextManager[AdminPort]] = []

        def admin() -> AdminPort:
            opened.append(self._connect(spec.kafka.bootstrap_servers, props, TIMEOUT_S))
            return opened[-1].__enter__()

        try:
            yield admin
        finally:
            for made in opened:
                made.__exit__(None, None, None)

    def _write(self, pool: PoolId, update: ExecutionUpdate) -> None:
        self.kube.patch_status(PLURAL_POOLS, pool.namespace, pool.name, update.to_dict())
