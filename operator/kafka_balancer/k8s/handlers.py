"""kopf registrations, and nothing else: startup (kopf's settings, the services into ``memo``), login,
an index of goals by pool, one daemon per BrokerPool, the pool's finalizer, and its hand-over on uninstall.

Each handler turns kopf's arguments into plain values, calls one service method and maps the result
back to kopf (a retry, a delay). A daemon (not a fixed-interval timer) so each pool's interval follows
its spec, and an approval or a spec change is acted on within seconds instead of at the next interval.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import kopf
from kubernetes import client, config

from kafka_balancer.api import GROUP, VERSION
from kafka_balancer.errors import KafkaOperationError, KubernetesError, UnreadableConfigMap
from kafka_balancer.k8s.executions import ExecutionBusy, ExecutionService, kafka_admin
from kafka_balancer.k8s.handover import RELEASE_ANNOTATION, RELEASED, REQUESTED
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import Liveness
from kafka_balancer.k8s.pools import GoalObject, PoolObject, PoolService
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.scale_guard import ScaleGuard
from kafka_balancer.k8s.settings import OperatorSettings
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION, CANCEL_ANNOTATION
from kafka_balancer.reconcile.scale_down import SCALE_DOWN_ANNOTATION, ScaleRequest

_log = logging.getLogger(__name__)
ANNOTATION_PREFIX = "kafkabalancer.io"
# Where the ValidatingWebhookConfiguration points the apiserver: kopf routes /<handler id>.
WEBHOOK_PATH = "/scale-down"
# kopf's wait for a daemon to end once told to stop (a sync in flight ends in its worker thread).
DAEMON_CANCELLATION_S = 10.0
# A deleted pool whose Kafka cannot be reached keeps its finalizer this long (retries x seconds):
# a throttle or a move left behind is worse than a deletion that waits.
CLEANUP_RETRIES = 180
CLEANUP_RETRY_S = 10


@kopf.on.startup()
def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """kopf's settings, then the services every handler shares (metrics, the pool service and its
    execution service), from ``memo.settings``."""
    # Handler progress in our annotations, not in status (the status schema is ours and pruned).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, key="last-handled-configuration"
    )
    # Only our own Events (plan ready, execution, drain) and kopf's warnings reach users.
    settings.posting.level = logging.WARNING
    # Without the peering objects two replicas would both act: refuse to run unpeered.
    settings.peering.mandatory = True
    operator: OperatorSettings = memo.settings
    settings.peering.lifetime = operator.peering_lifetime_s
    settings.watching.server_timeout = 300
    kube = Kube(str(operator.kubeconfig) if operator.kubeconfig else None)
    memo.kube = kube
    memo.metrics = OperatorMetrics()
    executions = ExecutionService(
        kube,
        operator.state_dir,
        operator.timings,
        memo.metrics,
        namespace=operator.namespace,
        max_executions=operator.limits.executions,
    )
    source = ClusterSource.for_operator(kube, operator, memo.metrics)
    memo.pools = PoolService(
        kube,
        source,
        executions,
        operator.state_dir,
        operator.timings,
        memo.metrics,
        allow_cleartext_credentials=operator.allow_cleartext_credentials,
        limits=operator.limits,
    )
    if operator.metrics_port is not None:
        memo.metrics.serve(operator.metrics_port)
    if operator.webhook is not None:
        webhook = operator.webhook
        memo.scale_guard = ScaleGuard(kube, memo.pools.connection, kafka_admin)
        settings.admission.server = kopf.WebhookServer(
            addr=webhook.address,
            port=webhook.port,
            certfile=str(webhook.cert_dir / "tls.crt"),
            pkeyfile=str(webhook.cert_dir / "tls.key"),
        )
        # Registered only with a server to serve them: kopf refuses to start with admission
        # handlers and no server, and a local run has no certificate. One handler for the
        # StatefulSet and its scale subresource, served at /scale-down (WEBHOOK_PATH).
        kopf.on.validate(
            "apps",
            "v1",
            "statefulsets",
            operations=["UPDATE"],
            subresource="*",
            side_effects=True,
            id=WEBHOOK_PATH.strip("/"),
        )(review_scale_down)


def review_scale_down(
    name: str,
    namespace: str | None,
    body: kopf.Body,
    subresource: str | None,
    dryrun: bool,
    memo: kopf.Memo,
    **kwargs: Any,
) -> None:
    """The scale-down webhook: a change of a pool's StatefulSet that would remove brokers still
    holding replicas is refused with the sentence saying why and what to do."""
    via_scale = subresource == "scale"
    current = replica_count(kwargs.get("old"), via_scale)
    request = ScaleRequest(namespace or "", current, replica_count(body, via_scale), via_scale)
    guard: ScaleGuard = memo.scale_guard
    answer = guard.review(name, request, dryrun)
    if answer is not None and not answer.allowed:
        raise kopf.AdmissionError(answer.message, code=403)


def replica_count(body: kopf.Body | None, via_scale: bool) -> int:
    """A StatefulSet's replicas default to 1; a Scale object omits a count of 0."""
    if body is None:
        return 0
    return int(body.get("spec", {}).get("replicas", 0 if via_scale else 1))


@kopf.index(GROUP, VERSION, "brokerpools")  # type: ignore[arg-type]
def pool_stateful_sets(namespace: str, name: str, spec: kopf.Spec, **_: Any) -> dict[tuple[str, str], str]:
    stateful_set = (spec.get("statefulSet") or {}).get("name")
    return {(namespace, stateful_set): name} if stateful_set else {}


@kopf.on.login()
def login(logger: kopf.Logger, memo: kopf.Memo, **kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's client login, from ``--kubeconfig`` when given (kopf alone reads only the default path)."""
    operator: OperatorSettings = memo.settings
    if operator.kubeconfig is None:
        return kopf.login_via_client(logger=logger, memo=memo, **kwargs)
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(operator.kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
    header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization")
    scheme, _, token = (header or "").partition(" ")
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
    )


@kopf.index(GROUP, VERSION, "balancergoals")  # type: ignore[arg-type]
def goals_by_pool(
    namespace: str, name: str, spec: kopf.Spec, meta: kopf.Meta, status: kopf.Status, **_: Any
) -> dict[tuple[str, str], GoalObject]:
    pool = (spec.get("poolRef") or {}).get("name", "")
    conditions = tuple(dict(c) for c in status.get("conditions") or [])
    return {(namespace, pool): GoalObject(name, dict(spec), int(meta.get("generation", 0)), conditions)}


def _held(annotations: kopf.Annotations, **_: Any) -> bool:
    """Not being handed back by an uninstall (handover.py): the operator acts on the pool."""
    return RELEASE_ANNOTATION not in annotations


def _not_released(annotations: kopf.Annotations, **_: Any) -> bool:
    """The operator still owes the pool its clean-up: kopf keeps the finalizer while this holds."""
    return annotations.get(RELEASE_ANNOTATION) != RELEASED


@kopf.daemon(GROUP, VERSION, "brokerpools", when=_held, cancellation_timeout=DAEMON_CANCELLATION_S)  # type: ignore[arg-type]
async def pool_daemon(
    stopped: kopf.DaemonStopped,
    body: kopf.Body,
    namespace: str,
    name: str,
    uid: str,
    retry: int,
    goals_by_pool: kopf.Index[tuple[str, str], GoalObject],
    pool_stateful_sets: kopf.Index[tuple[str, str], str],
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """Sync the pool every ``detectionIntervalSeconds``, and at once when its spec, its approval, its
    cancel request or the goals that name it change, when a broker joins or leaves its Kafka cluster,
    when a warming broker's next step (or its warm-up's end) falls due, and after a pass that ran a
    plan to its end (the next one sees the moves done: Balanced, Drained, a warm-up's next step)."""
    pools: PoolService = memo.pools
    wake_s = pools.timings.wake_s
    check_s = pools.timings.broker_check_s
    pool = PoolId(namespace, name, uid)
    # kopf's body is its live view: pausing the pool or stopping the daemon is seen mid-execution.
    live = Liveness(
        stopping=lambda: bool(stopped),
        paused=lambda: bool(body.spec.get("paused", False)),
        mode=lambda: body.spec.get("mode"),
        approved=lambda: body.meta.annotations.get(APPROVE_ANNOTATION),
        repair_hard_goals=lambda: (body.spec.get("selfHealing") or {}).get("repairHardGoals"),
        heal_brokers=lambda: (body.spec.get("selfHealing") or {}).get("enabled"),
        cancel=lambda: body.meta.annotations.get(CANCEL_ANNOTATION),
    )
    try:
        while not stopped:
            await _scope_webhook(memo, pool_stateful_sets)
            goals = tuple(goals_by_pool.get((namespace, name), []))
            seen = _wakes(body, goals)
            observed = PoolObject(
                pool,
                int(body.meta.get("generation", 0)),
                dict(body.spec),
                dict(body.status),
                dict(body.meta.annotations),
                goals,
            )
            result = await pools.sync(observed, retry, live)
            if result.retry_after is not None:
                raise kopf.TemporaryError(result.message, delay=result.retry_after)
            deadline = time.monotonic() + float(body.spec.get("detectionIntervalSeconds", 60))
            if result.next_step_at is not None:
                # Not before one wake-up: a pass on a kopf view that does not show the step this one
                # wrote yet would tell of that step again.
                step_due = time.monotonic() + max(wake_s, result.next_step_at - time.time())
                deadline = min(deadline, step_due)
            check_at = time.monotonic() + check_s
            while not stopped and time.monotonic() < deadline:
                if _wakes(body, tuple(goals_by_pool.get((namespace, name), []))) != seen:
                    break
                # Once kopf's view shows the plan executed (the status its end wrote), not before: a
                # pass on the older view would take the plan for one still to run.
                if result.executed and (body.status.get("plan") or {}).get("executedId") == result.executed:
                    break
                if result.brokers is not None and time.monotonic() >= check_at:
                    # From the read's start: one that went unanswered (sent to a broker that was
                    # leaving) is followed at the next wake-up by one on a fresh client.
                    check_at = time.monotonic() + check_s
                    if await pools.brokers_changed(pool, result.brokers):
                        break
                await stopped.wait(wake_s)
            retry = 0
    finally:
        pools.broker_watch.forget(pool.key)


async def _scope_webhook(
    memo: kopf.Memo, stateful_sets: kopf.Index[tuple[str, str], str], leaving: PoolId | None = None
) -> None:
    """Keep the scale-down webhook's configuration on the pools' StatefulSets (but ``leaving``'s)."""
    operator: OperatorSettings = memo.settings
    if operator.webhook is None:
        return
    guard: ScaleGuard = memo.scale_guard
    kept = [
        key
        for key, names in stateful_sets.items()
        if leaving is None or key[0] != leaving.namespace or set(names) != {leaving.name}
    ]
    try:
        await asyncio.to_thread(guard.scope, operator.webhook.configuration, kept)
    except KubernetesError as err:
        # The next pass tries again; meanwhile the configuration keeps its last scope.
        _log.warning("cannot scope the scale-down webhook: %s", err)


def _wakes(body: kopf.Body, goals: tuple[GoalObject, ...]) -> tuple[object, ...]:
    """What a pool's daemon acts on at once: its spec, an approval or a cancel request, a scale-down
    held back, and a goal that names it added, edited or deleted. A goal's status is not among them:
    the pass writes it.

    A pool and its goals applied together reach the operator on two watches: the first pass may
    see only some of the goals, and the others wake it as they arrive."""
    annotations = body.meta.annotations
    return (
        body.meta.get("generation"),
        annotations.get(APPROVE_ANNOTATION),
        annotations.get(CANCEL_ANNOTATION),
        annotations.get(SCALE_DOWN_ANNOTATION),
        frozenset((goal.name, goal.generation) for goal in goals),
    )


@kopf.on.delete(  # type: ignore[arg-type]
    GROUP, VERSION, "brokerpools", when=_not_released, retries=CLEANUP_RETRIES, backoff=CLEANUP_RETRY_S
)
async def pool_deleted(
    namespace: str,
    name: str,
    uid: str,
    spec: kopf.Spec,
    status: kopf.Status,
    retry: int,
    logger: kopf.Logger,
    pool_stateful_sets: kopf.Index[tuple[str, str], str],
    memo: kopf.Memo,
    **_: Any,
) -> None:
    """The pool's finalizer: our moves still in flight are cancelled, our throttles removed and the
    brokers we cordoned uncordoned.

    While Kafka cannot be reached the deletion waits, retried every CLEANUP_RETRY_S for
    CLEANUP_RETRIES times (30 minutes), with an Event each time; then the pool is let go anyway, so a
    Kafka that is gone for good cannot block the deletion forever, and an Event says what may be left.
    """
    pools: PoolService = memo.pools
    pool = PoolId(namespace, name, uid)
    await _scope_webhook(memo, pool_stateful_sets, leaving=pool)
    try:
        cancelled = await pools.clean_up(pool, dict(spec), dict(status))
    except ExecutionBusy as err:
        raise kopf.TemporaryError(str(err), delay=CLEANUP_RETRY_S) from err
    except KafkaOperationError as err:
        pools.cleanup_waits(pool, err, retry, CLEANUP_RETRIES, CLEANUP_RETRY_S)
        raise kopf.TemporaryError(
            f"cannot reach Kafka to clean up the pool: {err}", delay=CLEANUP_RETRY_S
        ) from err
    except UnreadableConfigMap as err:
        # Which moves and throttles are ours is known only from the record: nothing is guessed.
        raise kopf.TemporaryError(
            f"cannot clean up the pool: {err}; restore it, or delete it to let the pool go "
            "without cancelling its moves or removing its throttles",
            delay=CLEANUP_RETRY_S,
        ) from err
    if cancelled:
        logger.info("pool %s deleted: plan %s cancelled, throttles removed", pool.key, cancelled)


@kopf.daemon(  # type: ignore[arg-type]
    GROUP,
    VERSION,
    "brokerpools",
    annotations={RELEASE_ANNOTATION: REQUESTED},
    backoff=CLEANUP_RETRY_S,
    cancellation_timeout=DAEMON_CANCELLATION_S,
)
async def pool_release(
    namespace: str,
    name: str,
    uid: str,
    spec: kopf.Spec,
    status: kopf.Status,
    pool_stateful_sets: kopf.Index[tuple[str, str], str],
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """An uninstall hands the pool back (handover.py): its daemon stopped (its filter no longer
    matches), the clean-up of a deletion (moves in flight cancelled, throttles removed, brokers
    uncordoned), then the mark RELEASED, on which kopf drops the finalizer. Retried while Kafka cannot
    be reached: the uninstall's hook waits rather than leave a throttle behind."""
    pools: PoolService = memo.pools
    pool = PoolId(namespace, name, uid)
    await _scope_webhook(memo, pool_stateful_sets, leaving=pool)
    try:
        cancelled = await pools.clean_up(pool, dict(spec), dict(status))
    except (ExecutionBusy, KafkaOperationError, UnreadableConfigMap) as err:
        raise kopf.TemporaryError(f"cannot release the pool yet: {err}", delay=CLEANUP_RETRY_S) from err
    kube: Kube = memo.kube
    await asyncio.to_thread(kube.annotate_pool, namespace, name, RELEASE_ANNOTATION, RELEASED)
    logger.info("pool %s released%s", pool.key, f": plan {cancelled} cancelled" if cancelled else "")
