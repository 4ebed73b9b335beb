"""kopf registrations: an index of goals by pool, and one reconcile daemon per BrokerPool.

A daemon (not a fixed-interval timer) so each pool's interval follows its spec, and an approval or a
spec change is acted on within seconds instead of at the next interval.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

import kopf

from kafka_balancer.api import GROUP, VERSION
from kafka_balancer.errors import InputError, KafkaBalancerError, KafkaOperationError
from kafka_balancer.k8s import metrics
from kafka_balancer.k8s.execution import execute_plan, release_returned_brokers, settle_unfinished
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.pools import PoolReconciler, failure, parse_goals, parse_spec
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.progress import progress_status
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION, Action
from kafka_balancer.reconcile.pool import PoolOutcome, StoredPlan

# Re-check for a spec change or an approval this often between reconciles.
WAKE_S = 2.0
# Backoff after Kafka could not be reached: 10 s, 20 s, 40 s, ... at most 5 min.
BACKOFF_S, BACKOFF_MAX_S = 10.0, 300.0

_log = logging.getLogger(__name__)


class Runtime:
    """What the handlers share; set up by main.configure before kopf starts."""

    reconciler: PoolReconciler | None = None
    # Held by the worker thread that executes a pool's plan, which can outlive its cancelled daemon.
    executing: ClassVar[defaultdict[str, threading.Lock]] = defaultdict(threading.Lock)


def setup(kubeconfig: str | None, state_dir: Path) -> None:
    kube = Kube(kubeconfig)
    Runtime.reconciler = PoolReconciler(kube, ClusterSource.for_operator(kube, state_dir), state_dir)


@kopf.index(GROUP, VERSION, "balancergoals")  # type: ignore[arg-type]
def goals_by_pool(
    namespace: str, name: str, spec: kopf.Spec, meta: kopf.Meta, status: kopf.Status, **_: Any
) -> dict[tuple[str, str], dict[str, Any]]:
    pool = (spec.get("poolRef") or {}).get("name", "")
    return {
        (namespace, pool): {
            "name": name,
            "spec": dict(spec),
            "generation": meta.get("generation", 0),
            "conditions": list(status.get("conditions") or []),
        }
    }


@kopf.daemon(GROUP, VERSION, "brokerpools", cancellation_timeout=10.0)  # type: ignore[arg-type]
async def pool_daemon(
    stopped: kopf.DaemonStopped,
    body: kopf.Body,
    namespace: str,
    name: str,
    uid: str,
    retry: int,
    goals_by_pool: kopf.Index[tuple[str, str], dict[str, Any]],
    logger: kopf.Logger,
    **_: Any,
) -> None:
    reconciler = Runtime.reconciler
    assert reconciler is not None, "handlers.setup() runs before kopf"
    pool = PoolId(namespace, name, uid)
    while not stopped:
        seen = (body.meta.get("generation"), body.meta.annotations.get(APPROVE_ANNOTATION))
        await reconcile_once(reconciler, pool, body, goals_by_pool, retry, logger, stopped)
        interval = float(body.spec.get("detectionIntervalSeconds", 60))
        deadline = time.monotonic() + interval
        while not stopped and time.monotonic() < deadline:
            now = (body.meta.get("generation"), body.meta.annotations.get(APPROVE_ANNOTATION))
            if now != seen:
                break
            await stopped.wait(WAKE_S)
        retry = 0


@kopf.on.delete(GROUP, VERSION, "brokerpools", retries=6, backoff=10)  # type: ignore[arg-type]
async def pool_deleted(
    namespace: str, name: str, uid: str, spec: kopf.Spec, logger: kopf.Logger, **_: Any
) -> None:
    """The pool's finalizer: our moves still in flight are cancelled and our throttles removed.

    After the retries (about a minute) the pool is let go anyway, so a Kafka that is gone for good
    cannot block the deletion forever; the log says what may be left.
    """
    reconciler = Runtime.reconciler
    assert reconciler is not None, "handlers.setup() runs before kopf"
    pool = PoolId(namespace, name, uid)
    try:
        parsed = parse_spec(spec)
        props = await asyncio.to_thread(reconciler.connection, pool, parsed)
    except InputError as err:
        logger.warning(
            "pool %s deleted; its Kafka connection is unusable, nothing cleaned: %s", pool.key, err
        )
        return
    lock = Runtime.executing[pool.key]
    # The daemon was told to stop; its execution thread stops at its next step.
    if not await asyncio.to_thread(lock.acquire, True, 120.0):
        raise kopf.TemporaryError("the pool's execution is still stopping", delay=10)
    try:
        admin = KafkaAdmin(parsed.kafka.bootstrap_servers, props)
        try:
            cancelled = await asyncio.to_thread(
                settle_unfinished, reconciler.kube, admin, reconciler.state_dir / "executions", pool
            )
        finally:
            admin.close()
    except KafkaOperationError as err:
        raise kopf.TemporaryError(f"cannot reach Kafka to cancel the pool's moves: {err}", delay=10) from err
    finally:
        lock.release()
    if cancelled:
        logger.info("pool %s deleted: plan %s cancelled, throttles removed", pool.key, cancelled)


async def reconcile_once(
    reconciler: PoolReconciler,
    pool: PoolId,
    body: kopf.Body,
    goals_index: kopf.Index[tuple[str, str], dict[str, Any]],
    retry: int,
    logger: kopf.Logger,
    stopped: kopf.DaemonStopped,
) -> None:
    generation = int(body.meta.get("generation", 0))
    status = dict(body.status)
    try:
        spec = parse_spec(body.spec)
        goal_docs = list(goals_index.get((pool.namespace, pool.name), []))
        goals = parse_goals(goal_docs)
        props = await asyncio.to_thread(reconciler.connection, pool, spec)
    except InputError as err:
        # An unusable spec or Secret: say so; the next spec change (or interval) tries again.
        await asyncio.to_thread(
            reconciler.report_failure, pool, generation, status, failure("SpecValid", "InvalidSpec", str(err))
        )
        metrics.RECONCILES.labels(pool.key, "invalid").inc()
        return
    previous_goals = {g["name"]: (int(g["generation"]), list(g["conditions"])) for g in goal_docs}
    try:
        outcome = await asyncio.to_thread(
            reconciler.reconcile,
            pool,
            spec,
            generation,
            status,
            dict(body.meta.annotations),
            goals,
            previous_goals,
            props,
        )
    except KafkaOperationError as err:
        message = str(err)  # names the bootstrap servers and what failed (login, TLS, timeout)
        await asyncio.to_thread(
            reconciler.report_failure,
            pool,
            generation,
            status,
            failure("KafkaReachable", "Unreachable", message),
        )
        metrics.RECONCILES.labels(pool.key, "unreachable").inc()
        delay = min(BACKOFF_MAX_S, BACKOFF_S * 2**retry)
        raise kopf.TemporaryError(message, delay=delay) from err
    metrics.RECONCILES.labels(pool.key, "ok").inc()
    logger.info("pool %s reconciled: %s", pool.key, outcome.decision.message)
    for event in outcome.events:
        kopf.event(body, type=event.type, reason=event.reason, message=event.message)
    plan = outcome.status.plan
    metrics.PLAN_MOVES.labels(pool.key).set(plan.moves_total if plan else 0)
    metrics.PLAN_BYTES.labels(pool.key).set(plan.bytes_to_move if plan else 0)
    balanced_condition = outcome.status.condition("Balanced")
    balanced = balanced_condition is not None and balanced_condition.status == "True"
    metrics.BALANCED.labels(pool.key).set(1 if balanced else 0)
    if outcome.decision.action is Action.EXECUTE:
        await execute(reconciler, pool, body, spec, outcome, props, logger, stopped)
    else:
        await asyncio.to_thread(release_left_throttles, reconciler, pool, spec, props)


def release_left_throttles(
    reconciler: PoolReconciler, pool: PoolId, spec: Any, props: dict[str, str]
) -> None:
    """Level-based: throttles an execution had to leave on a broker that was down go once it is back."""
    lock = Runtime.executing[pool.key]
    if not lock.acquire(blocking=False):
        return  # an execution (or the pool's deletion) is handling the pool's throttles right now
    admins: list[KafkaAdmin] = []

    def admin() -> KafkaAdmin:
        admins.append(KafkaAdmin(spec.kafka.bootstrap_servers, props))
        return admins[-1]

    try:
        release_returned_brokers(reconciler.kube, admin, reconciler.state_dir / "executions", pool)
    except KafkaOperationError as err:
        _log.warning("pool %s: left throttles not released yet: %s", pool.key, err)
    finally:
        for made in admins:
            made.close()
        lock.release()


async def execute(
    reconciler: PoolReconciler,
    pool: PoolId,
    body: kopf.Body,
    spec: Any,
    outcome: PoolOutcome,
    props: dict[str, str],
    logger: kopf.Logger,
    stopped: kopf.DaemonStopped,
) -> None:
    stored: StoredPlan | None = outcome.new_plan or await asyncio.to_thread(reconciler.stored_plan, pool)
    if stored is None:
        return
    kube = reconciler.kube

    def progress(state: ExecutionState) -> None:
        fields = progress_status(state, time.time())
        done = len(state.by_status(MoveStatus.DONE))
        metrics.MOVES_DONE.labels(pool.key).set(done)
        kube.patch_status(
            "brokerpools",
            pool.namespace,
            pool.name,
            {
                "execution": {"planId": stored.id, "phase": "Running", **fields},
                "plan": {"movesDone": done, "movesRemaining": len(state.moves) - done},
            },
        )

    kopf.event(
        body,
        type="Normal",
        reason="ExecutionStarted",
        message=f"executing plan {stored.id} ({stored.moves} moves)",
    )
    await asyncio.to_thread(
        kube.patch_status,
        "brokerpools",
        pool.namespace,
        pool.name,
        {"execution": {"planId": stored.id, "phase": "Running", "message": "starting"}},
    )

    def run(*args: Any) -> None:
        with Runtime.executing[pool.key]:
            execute_plan(*args)

    try:
        await asyncio.to_thread(
            run,
            kube,
            reconciler.state_dir / "executions",
            pool,
            stored,
            spec.kafka.bootstrap_servers,
            props,
            spec.execution,
            progress,
            # The body is kopf's live view: pausing the pool stops the execution at its next batch.
            # So does stopping the daemon (shutdown, or peering handing over to another replica):
            # the worker thread outlives a cancelled coroutine, and the state lets the next one resume.
            lambda: bool(stopped) or bool(body.spec.get("paused", False)),
        )
    except KafkaBalancerError as err:
        if stopped:
            logger.info("plan %s: stopped submitting moves; the next active operator resumes it", stored.id)
            return
        paused = bool(body.spec.get("paused", False))
        if not paused:
            logger.error("plan %s failed: %s", stored.id, err)
            metrics.EXECUTIONS.labels(pool.key, "failed").inc()
        kopf.event(
            body,
            type="Normal" if paused else "Warning",
            reason="ExecutionPaused" if paused else "ExecutionFailed",
            message=f"plan {stored.id}: {err}",
        )
        phase = "Paused" if paused else "Failed"
        await asyncio.to_thread(
            kube.patch_status,
            "brokerpools",
            pool.namespace,
            pool.name,
            {"execution": {"planId": stored.id, "phase": phase, "message": str(err)}},
        )
        return
    metrics.EXECUTIONS.labels(pool.key, "succeeded").inc()
    kopf.event(
        body, type="Normal", reason="ExecutionFinished", message=f"plan {stored.id} executed and verified"
    )
    await asyncio.to_thread(
        kube.patch_status,
        "brokerpools",
        pool.namespace,
        pool.name,
        {
            "execution": {
                "planId": stored.id,
                "phase": "Succeeded",
                "movesDone": stored.moves,
                "message": "",
            },
            "plan": {"executedId": stored.id, "movesDone": stored.moves, "movesRemaining": 0},
        },
    )
