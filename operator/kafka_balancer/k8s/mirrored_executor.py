"""The kafka layer's executor run against the pool's recorded execution: a stored plan run (or
resumed) fenced by the pool's execution lease, cancelled when the user asks, and what an execution
leaves behind settled (an unfinished plan cancelled, throttles on brokers that are back removed).

The state file (under the operator's state directory) is the executor's own scratch copy; the
``<pool>-execution`` ConfigMap (k8s/state_mirror.py) is the record: written ahead of every Kafka
write, conditionally, so a new operator pod (another node, empty disk) or a standby replica resumes
exactly where the last owner stopped, and a stale owner cannot overwrite it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn, Protocol

from kafka_balancer.api import Execution as ExecutionSpec
from kafka_balancer.api import throttle_rate
from kafka_balancer.errors import ExecutionCancelled, ExecutionError, ExecutionHalted
from kafka_balancer.k8s.state_mirror import StateMirror
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import ExecutionState, MoveOrder, MoveStatus, load_state, save_state
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, check_same_plan, new_state
from kafka_balancer.kafka.fence import Fence, FencedAdmin
from kafka_balancer.kafka.pause import settle_in_flight
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.throttle import release_brokers, wanted_brokers
from kafka_balancer.reconcile.approval import CANCEL_ANNOTATION
from kafka_balancer.reconcile.pool_input import StoredPlan

logger = logging.getLogger(__name__)


class _MirroredExecutor(Executor):
    def __init__(self, *args: Any, mirror: Callable[[ExecutionState], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mirror = mirror

    def commit(self, state: ExecutionState) -> ExecutionState:
        state = super().commit(state)
        self._mirror(state)
        return state


def options_of(spec: ExecutionSpec, poll_interval_s: float = 2.0) -> ExecuteOptions:
    return ExecuteOptions(
        throttle=throttle_rate(spec.throttle_bytes_per_second),
        max_moves_per_broker=spec.max_moves_per_broker,
        max_moves=spec.max_moves,
        replicas_at_a_time=spec.replicas_at_a_time or 0,
        order=MoveOrder.SMALLEST_FIRST if spec.order == "SmallestFirst" else MoveOrder.PLAN,
        timeout_per_move_s=float(spec.move_timeout_seconds),
        dead_broker_timeout_s=float(spec.dead_broker_timeout_seconds),
        health_timeout_s=float(spec.health_timeout_seconds),
        wait_at_start=True,
        poll_interval_s=poll_interval_s,
    )


class RunHooks(Protocol):
    """What the caller of :func:`execute_plan` is told and asked while the plan runs."""

    def progress(self, state: ExecutionState) -> None:
        """The state, each time it is recorded."""

    def stop_requested(self) -> bool:
        """Stop at the next step, leaving everything as it is for the next owner."""

    def halt_reason(self) -> str | None:
        """Why the execution must halt (a pause, a mode that forbids executing): it stops submitting
        at the next batch, follows the moves in flight to their end with their throttles, then raises
        ExecutionHalted. None: it goes on."""

    def cancel_requested(self) -> bool:
        """The user cancels the plan: at the next look at the cluster, its moves in flight are
        cancelled and its throttles removed, then ExecutionCancelled is raised. Takes precedence over
        a halt."""


@dataclass(frozen=True)
class RunSite:
    """Where a plan runs: the Kafka cluster, the fence every write to it passes, the record of the
    pool's execution, and the directory of the executor's scratch copy of it."""

    admin: AdminPort
    fence: Fence
    mirror: StateMirror
    state_dir: Path
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


def execute_plan(
    stored: StoredPlan, options: ExecuteOptions, site: RunSite, hooks: RunHooks
) -> ExecutionState:
    """Execute ``stored`` to the end (resuming the recorded run of the same plan); raises on failure.

    Every Kafka write is checked against ``site.fence``; losing it raises ExecutionFenced at once.
    """
    mirror = site.mirror
    state_path = _state_path(site.state_dir, mirror, stored.id)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    plan = stored.reassignments

    def mirror_commit(state: ExecutionState) -> None:
        if mirror.write(stored.id, state):
            hooks.progress(state)

    fenced = FencedAdmin(site.admin, site.fence)
    settle_unfinished(fenced, mirror, site.state_dir, keep=stored.id, clock=site.clock, sleep=site.sleep)
    recorded = mirror.load()
    if recorded is not None and recorded[0] == stored.id:
        # The record, not the local file: another process may have gone on since this one wrote it.
        state = recorded[1]
        check_same_plan(state, plan, state_path)
        logger.info("resuming plan %s of pool %s", stored.id, mirror.pool.key)
    else:
        state = new_state(site.admin, plan, options, site.clock())
        state = replace(state, throttled_brokers=inherited_throttles(mirror))
    save_state(state_path, state)
    executor = _MirroredExecutor(
        fenced,
        state_path,
        options,
        log=logger.info,
        mirror=mirror_commit,
        cancel_requested=lambda: (
            hooks.stop_requested() or hooks.cancel_requested() or hooks.halt_reason() is not None
        ),
        clock=site.clock,
        sleep=site.sleep,
    )
    try:
        final = executor.run(state)
    except ExecutionError:
        if hooks.stop_requested():
            raise
        if hooks.cancel_requested():
            cancel_plan(stored.id, executor, load_state(state_path), mirror, hooks)
        reason = hooks.halt_reason()
        if reason is None:
            raise
        settled = settle_in_flight(
            executor,
            load_state(state_path),
            lambda: hooks.stop_requested() or hooks.cancel_requested() or hooks.halt_reason() is None,
        )
        if not hooks.stop_requested() and hooks.cancel_requested():
            # Cancelled while halting: what is still in flight is cancelled rather than followed.
            cancel_plan(stored.id, executor, settled, mirror, hooks)
        left = len(settled.by_status(MoveStatus.IN_FLIGHT))
        mirror.write(stored.id, settled, force=True)
        hooks.progress(settled)
        raise ExecutionHalted(
            f"{reason}: stopped at the next batch"
            + (f"; {left} move(s) still in flight keep their throttles" if left else "; no throttle left")
        ) from None
    mirror.write(stored.id, final, force=True)
    hooks.progress(final)
    return final


def cancel_plan(
    plan: str, executor: Executor, state: ExecutionState, mirror: StateMirror, hooks: RunHooks
) -> NoReturn:
    """Cancel the running ``plan`` on request, as a deleted pool's is (kafka/cancel.py): its moves in
    flight cancelled, the others not started, its throttles removed; then raise ExecutionCancelled
    saying how many moves in flight were cancelled (its text follows "cancelled")."""
    in_flight = {m.tp for m in state.by_status(MoveStatus.IN_FLIGHT)}
    final = cancel_execution(
        executor.admin, state, executor.commit, clock=executor.clock, sleep=executor.sleep
    )
    mirror.write(plan, final, force=True)
    hooks.progress(final)
    raise ExecutionCancelled(cancelled_text(in_flight, final))


def cancelled_text(in_flight: set[tuple[str, int]], final: ExecutionState) -> str:
    """What a cancel on request did, as words that follow "cancelled": the moves of ``in_flight``
    cancelled, the others not started, those done, and the throttles left on brokers that are down."""
    cancelled = final.by_status(MoveStatus.CANCELLED)
    stopped = sum(1 for m in cancelled if m.tp in in_flight)
    left = sorted(final.throttled_brokers)
    done = len(final.by_status(MoveStatus.DONE))
    return (
        f"on request ({CANCEL_ANNOTATION}): {stopped} move(s) in flight cancelled, "
        f"{len(cancelled) - stopped} not started, {done} done"
        + (
            f"; its throttles stay on broker(s) {', '.join(left)}, which are down, until they are back"
            if left
            else "; every throttle it set removed"
        )
    )


def _state_path(state_dir: Path, mirror: StateMirror, plan: str) -> Path:
    return state_dir / f"{mirror.pool.namespace}.{mirror.pool.name}.{plan}.json"


def _file_commit(
    path: Path, mirror: StateMirror, plan: str, clock: Callable[[], float]
) -> Callable[[ExecutionState], ExecutionState]:
    def commit(current: ExecutionState) -> ExecutionState:
        current = replace(current, updated_at=clock())
        path.parent.mkdir(parents=True, exist_ok=True)
        save_state(path, current)
        mirror.write(plan, current)
        return current

    return commit


def settle_unfinished(
    admin: AdminPort,
    mirror: StateMirror,
    state_dir: Path,
    keep: str | None = None,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Cancel the pool's recorded execution if it is unfinished and not plan ``keep``.

    A pool runs one plan at a time. An execution that failed half-way, or that a deleted pool leaves,
    still has moves in flight and throttles set; they are ours, and a later plan would take them for
    someone else's and leave them. Returns the id of the plan cancelled, if any. The caller holds the
    pool's execution lease (``admin`` is fenced by it).
    """
    recorded = mirror.load()
    if recorded is None or recorded[0] == keep or recorded[1].finished_at is not None:
        return None
    plan, state = recorded
    commit = _file_commit(_state_path(state_dir, mirror, plan), mirror, plan, clock)
    final = cancel_execution(admin, state, commit, clock=clock, sleep=sleep)
    mirror.write(plan, final, force=True)
    logger.info("pool %s: cancelled unfinished plan %s, removed its throttles", mirror.pool.key, plan)
    return plan


def release_returned_brokers(
    admin: Callable[[], AdminPort], mirror: StateMirror, state_dir: Path
) -> list[str]:
    """Remove our rates from brokers the last execution had to leave them on (down at its end) and
    that are back; run at every sync, so a throttle outlives its broker's downtime by one interval.
    Brokers that moves still in flight need keep theirs. Returns the brokers released.
    The caller holds the pool's execution lease."""
    recorded = mirror.load()
    if recorded is None or not recorded[1].throttled_brokers:
        return []
    plan, state = recorded
    port = admin()
    needed = wanted_brokers(state.by_status(MoveStatus.IN_FLIGHT))
    commit = _file_commit(_state_path(state_dir, mirror, plan), mirror, plan, time.time)
    after = release_brokers(port, state, commit, keep=needed)
    released = sorted(set(state.throttled_brokers) - set(after.throttled_brokers))
    if released:
        logger.info(
            "pool %s: removed throttles plan %s left on broker(s) %s, which are back",
            mirror.pool.key,
            plan,
            ", ".join(released),
        )
    return released


def inherited_throttles(mirror: StateMirror) -> dict[str, tuple[str, ...]]:
    """Broker throttles an earlier plan could not remove (its brokers were down): a new plan's state
    takes them over, so they are still removed when those brokers come back."""
    recorded = mirror.load()
    return dict(recorded[1].throttled_brokers) if recorded is not None else {}
