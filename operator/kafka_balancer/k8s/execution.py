"""Running a stored plan with the kafka layer's executor; its state is mirrored into a ConfigMap.

The state file (under the operator's state directory) is the executor's own; the ConfigMap copy lets a
new operator pod (another node, empty disk) resume exactly where the old one stopped.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kafka_balancer.api import Execution as ExecutionSpec
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.kafka.cancel import cancel_execution
from kafka_balancer.kafka.execution_state import (
    ExecutionState,
    MoveOrder,
    MoveStatus,
    load_state,
    save_state,
    state_document,
    state_from_document,
)
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, check_same_plan, new_state
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.throttle import release_brokers, wanted_brokers
from kafka_balancer.kube_quantity import parse_quantity
from kafka_balancer.reconcile.pool import StoredPlan, execution_config_map

logger = logging.getLogger(__name__)
STATE_KEY = "state.json"

Progress = Callable[[ExecutionState], None]


class _MirroredExecutor(Executor):
    def __init__(self, *args: Any, mirror: Callable[[ExecutionState, bool], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mirror = mirror

    def commit(self, state: ExecutionState) -> ExecutionState:
        state = super().commit(state)
        self._mirror(state, False)
        return state


def options_of(spec: ExecutionSpec, poll_interval_s: float = 2.0) -> ExecuteOptions:
    return ExecuteOptions(
        throttle=int(parse_quantity(spec.throttle_bytes_per_second)),
        max_moves_per_broker=spec.max_moves_per_broker,
        max_moves=spec.max_moves,
        replicas_at_a_time=spec.replicas_at_a_time or 0,
        order=MoveOrder.SMALLEST_FIRST if spec.order == "SmallestFirst" else MoveOrder.PLAN,
        timeout_per_move_s=float(spec.move_timeout_seconds),
        dead_broker_timeout_s=float(spec.dead_broker_timeout_seconds),
        poll_interval_s=poll_interval_s,
    )


def execute_plan(
    kube: KubePort,
    admin: AdminPort,
    state_dir: Path,
    pool: PoolId,
    stored: StoredPlan,
    options: ExecuteOptions,
    progress: Progress,
    cancel_requested: Callable[[], bool],
    *,
    mirror_every_s: float,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> ExecutionState:
    """Execute ``stored`` to the end (resuming a previous run of the same plan); raises on failure."""
    state_path = state_dir / f"{pool.namespace}.{pool.name}.{stored.id}.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    plan = stored.reassignments
    last_mirror = [-mirror_every_s]

    def mirror(state: ExecutionState, final: bool) -> None:
        now = time.monotonic()
        if not final and now - last_mirror[0] < mirror_every_s:
            return
        last_mirror[0] = now
        mirror_state(kube, pool, stored.id, state)
        progress(state)

    settle_unfinished(kube, admin, state_dir, pool, keep=stored.id, clock=clock, sleep=sleep)
    if not state_path.exists():
        mirrored = blobs.load(kube, pool.namespace, execution_config_map(pool.name), STATE_KEY)
        if mirrored is not None and mirrored[0].get("plan.id") == stored.id:
            state_path.write_bytes(mirrored[1])
    if state_path.exists():
        state = load_state(state_path)
        check_same_plan(state, plan, state_path)
        logger.info("resuming plan %s of pool %s", stored.id, pool.key)
    else:
        state = new_state(admin, plan, options, clock())
        state = replace(state, throttled_brokers=inherited_throttles(kube, state_dir, pool))
    executor = _MirroredExecutor(
        admin,
        state_path,
        options,
        log=logger.info,
        mirror=mirror,
        cancel_requested=cancel_requested,
        clock=clock,
        sleep=sleep,
    )
    final = executor.run(state)
    mirror(final, True)
    return final


def mirror_state(kube: KubePort, pool: PoolId, plan: str, state: ExecutionState) -> None:
    """The executor's state in ``<pool>-execution``, for a new operator pod to resume from."""
    document = json_text(state_document(state)).encode()
    blobs.store(
        kube, pool.namespace, execution_config_map(pool.name), pool, {"plan.id": plan}, STATE_KEY, document
    )


def _recorded(kube: KubePort, state_dir: Path, pool: PoolId) -> tuple[str, Path, ExecutionState] | None:
    """The pool's last execution: its plan id, local state path and state (None if it never ran)."""
    namespace, name = pool.namespace, pool.name
    mirrored = blobs.load(kube, namespace, execution_config_map(name), STATE_KEY)
    if mirrored is None:
        return None
    plan = str(mirrored[0]["plan.id"])
    path = state_dir / f"{namespace}.{name}.{plan}.json"
    # The local file is the executor's own, newer than the mirror (written at most every few seconds).
    state = load_state(path) if path.exists() else state_from_document(json.loads(mirrored[1]))
    return plan, path, state


def _file_commit(path: Path) -> Callable[[ExecutionState], ExecutionState]:
    def commit(current: ExecutionState) -> ExecutionState:
        current = replace(current, updated_at=time.time())
        path.parent.mkdir(parents=True, exist_ok=True)
        save_state(path, current)
        return current

    return commit


def settle_unfinished(
    kube: KubePort,
    admin: AdminPort,
    state_dir: Path,
    pool: PoolId,
    keep: str | None = None,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Cancel the pool's recorded execution if it is unfinished and not plan ``keep``.

    A pool runs one plan at a time. An execution that failed half-way, or that a deleted pool leaves,
    still has moves in flight and throttles set; they are ours, and a later plan would take them for
    someone else's and leave them. Returns the id of the plan cancelled, if any.
    """
    recorded = _recorded(kube, state_dir, pool)
    if recorded is None or recorded[0] == keep or recorded[2].finished_at is not None:
        return None
    plan, path, state = recorded
    final = cancel_execution(admin, state, _file_commit(path), clock=clock, sleep=sleep)
    mirror_state(kube, pool, plan, final)
    logger.info("pool %s: cancelled unfinished plan %s, removed its throttles", pool.key, plan)
    return plan


def release_returned_brokers(
    kube: KubePort, admin: Callable[[], AdminPort], state_dir: Path, pool: PoolId
) -> list[str]:
    """Remove our rates from brokers the last execution had to leave them on (down at its end) and
    that are back; run at every reconcile, so a throttle outlives its broker's downtime by one
    interval. Brokers that moves still in flight need keep theirs. Returns the brokers released."""
    recorded = _recorded(kube, state_dir, pool)
    if recorded is None or not recorded[2].throttled_brokers:
        return []
    plan, path, state = recorded
    port = admin()
    needed = wanted_brokers(state.by_status(MoveStatus.IN_FLIGHT))
    after = release_brokers(port, state, _file_commit(path), keep=needed)
    released = sorted(set(state.throttled_brokers) - set(after.throttled_brokers))
    if released:
        mirror_state(kube, pool, plan, after)
        logger.info(
            "pool %s: removed throttles plan %s left on broker(s) %s, which are back",
            pool.key,
            plan,
            ", ".join(released),
        )
    return released


def inherited_throttles(kube: KubePort, state_dir: Path, pool: PoolId) -> dict[str, tuple[str, ...]]:
    """Broker throttles an earlier plan could not remove (its brokers were down): a new plan's state
    takes them over, so they are still removed when those brokers come back."""
    recorded = _recorded(kube, state_dir, pool)
    return dict(recorded[2].throttled_brokers) if recorded is not None else {}
