"""The pool service: one sync of a BrokerPool — read (Kafka, Kubernetes), decide (reconcile/), write back,
and run the plan when the decision says so — and the cleanup of a deleted pool.

Its async methods are the only boundary between kopf's event loop and blocking work: each runs one
whole sync (or cleanup), or one look at a pool's live brokers between syncs, in a worker thread.
kopf itself is only touched by handlers.py.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.errors import (
    ConfigMapTooLarge,
    ForeignConfigMap,
    InputError,
    KafkaAccessDenied,
    KafkaOperationError,
)
from kafka_balancer.formats.errors import one_line
from kafka_balancer.formats.plan_file import parse_plan, plan_document
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.broker_watch import BrokerWatch
from kafka_balancer.k8s.executions import Connect, ExecutionService, kafka_admin
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.loads_map import store_loads, stored_partition_counts
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import Liveness, SeenPool
from kafka_balancer.k8s.pool_secrets import pool_secret
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.scored_loads import Loads
from kafka_balancer.k8s.settings import Limits, Timings
from kafka_balancer.k8s.strimzi import read_strimzi
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION, CANCEL_ANNOTATION, Action, plan_id
from kafka_balancer.reconcile.brokers import Lifecycle
from kafka_balancer.reconcile.conditions import FALSE, TRUE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.connection import client_properties
from kafka_balancer.reconcile.events import Event, sentence
from kafka_balancer.reconcile.executing import cancelled_event, cancels_stopped, execution_conditions
from kafka_balancer.reconcile.healing import GUARD_REASON
from kafka_balancer.reconcile.names import plan_config_map
from kafka_balancer.reconcile.observed_brokers import membership_change
from kafka_balancer.reconcile.pool import PoolOutcome, decide_pool
from kafka_balancer.reconcile.pool_input import Cordoning, LoadSource, PoolInput, StoredPlan, UsageSource
from kafka_balancer.reconcile.scale_down import SCALE_DOWN_ANNOTATION, parse_scale_down, with_scale_down
from kafka_balancer.reconcile.snapshot import ClusterMetadata
from kafka_balancer.reconcile.stateful_set import with_stateful_set_capacity
from kafka_balancer.reconcile.status import (
    BalancerGoalStatus,
    ExecutionPhase,
    ExecutionStatus,
    ExecutionUpdate,
    PoolStatus,
    rfc3339,
)
from kafka_balancer.reconcile.strimzi import resolve as resolve_strimzi

T = TypeVar("T")
PLURAL_POOLS = "brokerpools"
PLAN_KEY = "plan.json"
REPAIRS_KEY = "repairs"
PLURAL_GOALS = "balancergoals"
_log = logging.getLogger(__name__)
# A label value's limit: the pool's name labels the ConfigMaps and Leases made for it.
MAX_POOL_NAME = 63


class ClusterReader(Protocol):
    """Where a sync reads the cluster from: :class:`~kafka_balancer.k8s.source.ClusterSource`."""

    # What the last read of each pool (namespace/name) used: scored or collected loads, broker cpu.
    load_sources: dict[str, LoadSource]
    usage_sources: dict[str, UsageSource]

    def read(
        self,
        pool: PoolId,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        goals: Sequence[tuple[str, BalancerGoalSpec]] = (),
    ) -> tuple[ClusterMetadata, Loads]: ...


@dataclass(frozen=True)
class GoalObject:
    """A BalancerGoal as kopf's index holds it."""

    name: str
    spec: Mapping[str, Any]
    generation: int
    conditions: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class PoolObject:
    """A BrokerPool as one sync sees it, with the goals that name it."""

    id: PoolId
    generation: int
    spec: Mapping[str, Any]
    status: Mapping[str, Any]
    annotations: Mapping[str, str]
    goals: tuple[GoalObject, ...] = ()


@dataclass(frozen=True)
class SyncResult:
    """How a sync ended: ``retry_after`` seconds when Kafka could not be reached (kopf backs off);
    ``executed``, the plan it ran to its end, which the next pass confirms (Balanced, Drained, the
    next warm-up step) without waiting for the pool's interval; ``brokers``, the live brokers it
    read, whose change wakes the next pass (None: it read none); ``next_step_at``, when a warming
    broker goes a step further, at which the next pass is due."""

    outcome: PoolOutcome | None = None
    retry_after: float | None = None
    message: str = ""
    executed: str | None = None
    brokers: frozenset[int] | None = None

    @property
    def next_step_at(self) -> float | None:
        return None if self.outcome is None else self.outcome.next_step_at


def parse_spec(spec: Mapping[str, Any]) -> BrokerPoolSpec:
    try:
        return BrokerPoolSpec.model_validate(dict(spec))
    except ValidationError as err:
        raise InputError(one_line(err, "spec")) from None


def parse_goals(goals: Sequence[GoalObject]) -> list[tuple[str, BalancerGoalSpec]]:
    """Goals as the index holds them; one the apiserver accepted but we cannot read is named."""
    parsed = []
    for goal in sorted(goals, key=lambda g: g.name):
        try:
            parsed.append((goal.name, BalancerGoalSpec.model_validate(dict(goal.spec))))
        except ValidationError as err:
            raise InputError(f"BalancerGoal {goal.name}: {one_line(err, 'spec')}") from None
    return parsed


def failure(condition_type: str, reason: str, message: str) -> Condition:
    return Condition(condition_type, FALSE, reason, message)


class PoolService:
    """One per operator process; created at startup and shared through kopf's memo."""

    def __init__(
        self,
        kube: KubePort,
        source: ClusterReader,
        executions: ExecutionService,
        state_dir: Path,
        timings: Timings,
        metrics: OperatorMetrics,
        *,
        allow_cleartext_credentials: bool = False,
        limits: Limits | None = None,
        connect: Connect = kafka_admin,
    ) -> None:
        self.kube = kube
        # The passes' worker threads: as many syncs at once as the limit says, beside the executions
        # (which run in the pass that starts them, for as long as their plan), so that executing
        # pools never leave the others without a worker.
        limits = limits or Limits()
        self._workers = ThreadPoolExecutor(limits.syncs + limits.executions, thread_name_prefix="pool-pass")
        # Operator-wide (KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS): a pool's spec cannot allow it.
        self.allow_cleartext_credentials = allow_cleartext_credentials
        self.metrics = metrics
        self.source = source
        self.executions = executions
        self.state_dir = state_dir
        self.timings = timings
        # Each pool's topics' partition counts at its last plan: what makes a partition new at the next.
        # In memory: after a restart the first plan places new partitions without telling them apart.
        self.known_partitions: dict[str, Mapping[str, int]] = {}
        # Each pool's spec and client properties at its last pass: what its deletion cleans up with
        # when its Secrets are gone already (a namespace deleted with the pool). In memory only.
        self.last_connection: dict[str, tuple[BrokerPoolSpec, dict[str, str]]] = {}
        # Each pool's live brokers between its passes, read with the connection of its last pass.
        self.broker_watch = BrokerWatch(timings.broker_check_s, connect)

    # -- the boundary: kopf's event loop awaits these ---------------------------------------------

    async def sync(self, pool: PoolObject, retry: int, live: Liveness) -> SyncResult:
        return await self._in_worker(self.sync_blocking, pool, retry, live)

    async def clean_up(self, pool: PoolId, spec: Mapping[str, Any], status: Mapping[str, Any]) -> str | None:
        return await self._in_worker(self.clean_up_blocking, pool, spec, status)

    async def brokers_changed(self, pool: PoolId, seen: frozenset[int]) -> bool:
        # Not in the passes' workers: while they are all busy the daemon must still see its own wakes.
        return await asyncio.to_thread(self.brokers_changed_blocking, pool, seen)

    async def _in_worker(self, work: Callable[..., T], *args: Any) -> T:
        # As asyncio.to_thread does: the context goes along (kopf posts Events from it).
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._workers, context.run, work, *args)

    # -- the work, in a worker thread ---------------------------------------------------------------

    def sync_blocking(self, pool: PoolObject, retry: int, live: Liveness) -> SyncResult:
        """Read, decide, write the pool's status, ConfigMaps and goal statuses; execute when decided."""
        key = pool.id.key
        try:
            if len(pool.id.name) > MAX_POOL_NAME:
                # The CRD refuses such names; one created before it did still must not crash the daemon.
                raise InputError(
                    f"metadata.name: {len(pool.id.name)} characters, over {MAX_POOL_NAME}: it is the "
                    "value of the kafkabalancer.io/pool label; recreate the pool under a shorter name"
                )
            # A scale-down the webhook held back drains its brokers as spec.drain would.
            held = parse_scale_down(pool.annotations.get(SCALE_DOWN_ANNOTATION))
            spec = with_scale_down(parse_spec(pool.spec), held)
            if spec.stateful_set is not None and None in (spec.capacity.disk, spec.capacity.cpu):
                found = self.kube.read_stateful_set(pool.id.namespace, spec.stateful_set.name)
                spec = with_stateful_set_capacity(spec, found)
            goals = parse_goals(pool.goals)
            spec, props = self.resolve(pool.id, spec)
            self.last_connection[key] = (spec, props)
        except InputError as err:
            # An unusable spec or Secret: say so; the next spec change (or interval) tries again.
            self.report_failure(pool, failure("SpecValid", "InvalidSpec", str(err)))
            self.metrics.pool_seen(key, None)
            self.metrics.reconciles.labels(key, "invalid").inc()
            return SyncResult()
        self.metrics.pool_seen(key, spec.scoring.engine)
        try:
            outcome, brokers = self.decide_and_write(pool, spec, goals, props)
        except KafkaOperationError as err:
            message = str(err)  # names the bootstrap servers and what failed (login, TLS, timeout)
            # Reached, but ACLs hide part of the cluster: said apart, as no retry alone fixes it.
            reason = "NotAuthorized" if isinstance(err, KafkaAccessDenied) else "Unreachable"
            self.report_failure(pool, failure("KafkaReachable", reason, message))
            self.metrics.reconciles.labels(key, "unreachable").inc()
            self.metrics.kafka_reachable.labels(key).set(0)
            return SyncResult(retry_after=self.timings.backoff(retry), message=message)
        except ForeignConfigMap as err:
            # Someone else's ConfigMap under one of the pool's names: said, and looked at again next
            # interval (it may be deleted, or be the old pool's, which Kubernetes deletes).
            self.report_failure(pool, failure("ConfigMapsOwned", "ForeignConfigMap", str(err)))
            self.metrics.reconciles.labels(key, "invalid").inc()
            return SyncResult()
        self.metrics.reconciles.labels(key, "ok").inc()
        self.metrics.kafka_reachable.labels(key).set(1)
        _log.info("pool %s reconciled: %s", key, outcome.decision.message)
        for event in outcome.events:
            self.kube.post_event(pool.id, event)
        self.record_metrics(pool.id, outcome.status)
        if outcome.decision.action is Action.EXECUTE:
            stored = outcome.new_plan or self.stored_plan(pool.id)
            if stored is not None:
                written = outcome.status.to_dict()
                seen = SeenPool(
                    pool.generation,
                    pool.status.get("execution"),
                    written["conditions"],
                    pool.annotations.get(APPROVE_ANNOTATION),
                )
                self.metrics.execution_running.labels(key).set(1)
                try:
                    phase = self.executions.execute(pool.id, stored, spec, props, live, seen)
                finally:
                    self.metrics.execution_running.labels(key).set(0)
                executed = stored.id if phase is ExecutionPhase.SUCCEEDED else None
                return SyncResult(outcome, executed=executed, brokers=brokers)
        else:
            last = ExecutionStatus.from_dict(pool.status.get("execution"))
            if last is not None and cancels_stopped(last, pool.annotations.get(CANCEL_ANNOTATION)):
                self.cancel_stopped(pool, outcome, spec, props, last.plan_id)
            else:
                failed = last.plan_id if last is not None and last.phase is ExecutionPhase.FAILED else None
                self.executions.release_left_throttles(pool.id, spec, props, failed)
        return SyncResult(outcome, brokers=brokers)

    def brokers_changed_blocking(self, pool: PoolId, seen: frozenset[int]) -> bool:
        """Whether the cluster's live brokers differ from ``seen``, read with the connection of the
        pool's last pass; a change is logged once, as it wakes the pass."""
        last = self.last_connection.get(pool.key)
        if last is None:
            return False
        spec, props = last
        now = self.broker_watch.live_brokers(pool.key, spec.connection().bootstrap_servers, props)
        change = membership_change(seen, now)
        if change is None:
            return False
        _log.info("pool %s: %s: syncing now", pool.key, change)
        return True

    def cancel_stopped(
        self,
        pool: PoolObject,
        outcome: PoolOutcome,
        spec: BrokerPoolSpec,
        props: Mapping[str, str],
        plan: str,
    ) -> None:
        """The cancel request of a plan whose execution is paused (or was left by a process that is
        gone): carried out by this pass and reported as a running one's is."""
        how = self.executions.cancel_stopped(pool.id, spec, props, plan)
        if how is None:
            return
        event = cancelled_event(plan, how)
        _log.info("pool %s: %s", pool.id.key, event.message)
        self.metrics.executions.labels(pool.id.key, "cancelled").inc()
        self.kube.post_event(pool.id, event)
        execution = ExecutionStatus(plan, ExecutionPhase.CANCELLED, how)
        written = outcome.status.to_dict()["conditions"]
        conditions = execution_conditions(written, execution, generation=pool.generation, now=time.time())
        update = ExecutionUpdate(execution, None, conditions)
        self.kube.patch_status(PLURAL_POOLS, pool.id.namespace, pool.id.name, update.to_dict())

    def clean_up_blocking(
        self, pool: PoolId, spec: Mapping[str, Any], status: Mapping[str, Any]
    ) -> str | None:
        """The pool's finalizer: our moves still in flight are cancelled, our throttles removed and
        the brokers we cordoned uncordoned. Returns the plan cancelled; raises KafkaOperationError or
        ExecutionBusy to be retried."""
        self.metrics.forget(pool.key)
        self.known_partitions.pop(pool.key, None)
        try:
            parsed, props = self.resolve(pool, parse_spec(spec))
        except InputError as err:
            # A pool deleted with its namespace: its Secrets went first. The credentials it last
            # connected with (in this process) still clean up what it left.
            last = self.last_connection.get(pool.key)
            if last is None:
                _log.warning(
                    "pool %s deleted; its Kafka connection is unusable, nothing cleaned: %s", pool.key, err
                )
                return None
            _log.info("pool %s deleted (%s): cleaning up with the connection it last used", pool.key, err)
            parsed, props = last
        cancelled = self.executions.settle_deleted(pool, parsed, props)
        cordoned = frozenset(int(b) for b in status.get("cordonedBrokers") or [])
        if cordoned:
            self.executions.cordon(parsed, props, frozenset(), cordoned)
        self.last_connection.pop(pool.key, None)
        return cancelled

    def connection(self, pool: PoolId, spec: BrokerPoolSpec) -> dict[str, str]:
        return self.resolve(pool, spec)[1]

    def resolve(self, pool: PoolId, spec: BrokerPoolSpec) -> tuple[BrokerPoolSpec, dict[str, str]]:
        """The spec a pass works with (a Strimzi pool's connection, capacities and scale-downs read
        from Strimzi's resources) and its client properties, with credentials from the pool's
        Secrets (files for TLS keys, mode 0600)."""
        sasl: Mapping[str, str] | None = None
        tls: Mapping[str, bytes] | None = None
        if spec.strimzi is not None:
            resolved = resolve_strimzi(spec, read_strimzi(self.kube, pool, spec.strimzi))
            spec, sasl, tls = resolved.spec, resolved.sasl, resolved.tls
        kafka = spec.connection()
        cleartext = kafka.security_protocol == "SASL_PLAINTEXT"
        if kafka.sasl is not None and cleartext and not self.allow_cleartext_credentials:
            raise InputError(
                f"kafka.securityProtocol: SASL_PLAINTEXT would send the credentials of Secret "
                f"{kafka.sasl.secret_ref.name} unencrypted; use SASL_SSL, or allow it for every pool "
                "with the operator setting KAFKA_BALANCER_ALLOW_CLEARTEXT_CREDENTIALS "
                "(chart value kafka.allowCleartextCredentials)"
            )
        if spec.strimzi is None and kafka.sasl is not None:
            data = pool_secret(
                self.kube.read_secret, pool, "kafka.sasl.secretRef", kafka.sasl.secret_ref.name
            )
            sasl = None if data is None else {k: v.decode() for k, v in data.items()}
        if spec.strimzi is None and kafka.tls is not None:
            tls = pool_secret(self.kube.read_secret, pool, "kafka.tls.secretRef", kafka.tls.secret_ref.name)
            if tls is None:
                raise InputError(f"kafka.tls.secretRef: Secret {kafka.tls.secret_ref.name} is missing")
        tls_files: dict[str, Path] | None = None
        if tls is not None:
            folder = self.state_dir / "tls" / f"{pool.namespace}.{pool.name}"
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            tls_files = {}
            for key in ("ca.crt", "tls.crt", "tls.key"):
                if key in tls:
                    path = folder / key
                    path.touch(mode=0o600)
                    path.write_bytes(tls[key])
                    tls_files[key] = path
        return spec, client_properties(kafka, sasl, tls_files)

    def stored_plan(self, pool: PoolId) -> StoredPlan | None:
        """The plan the pool's plan ConfigMap holds, under the id of its content. Anyone who may edit
        ConfigMaps in the namespace can edit it: one whose content no longer has the id recorded beside
        it is refused with an Event and taken as no plan, so the next plan written replaces it and an
        approval of the recorded id never runs the edit."""
        name = plan_config_map(pool.name)
        found = blobs.load(self.kube, pool.namespace, name, pool, PLAN_KEY)
        if found is None:
            return None
        fields, document = found
        recorded = fields.get("plan.id", "")
        try:
            reassignments = parse_plan(json.loads(document), f"ConfigMap {name}")
            content = plan_id(plan_document(reassignments))
            edit = None if recorded == content else f"holds plan {content}"
        except (InputError, ValueError) as err:
            edit = f"holds no valid plan ({err})"
        if edit is not None:
            message = (
                f"ConfigMap {name} was edited after the operator wrote it: it records plan {recorded!r} "
                f"but {edit}; refused (never executed) and replaced by the next plan"
            )
            _log.warning("pool %s: %s", pool.key, message)
            self.kube.post_event(pool, Event("Warning", "PlanRefused", sentence(message)))
            return None
        return StoredPlan(
            content,
            reassignments,
            int(fields["bytes-to-move"]),
            int(fields["moves"]),
            fields.get(REPAIRS_KEY),
        )

    def partition_counts(self, pool: PoolId) -> Mapping[str, int] | None:
        """Each topic's partition count at the pool's latest plan: this process's, else the one
        stored beside that plan's report; None before the pool's first plan."""
        known = self.known_partitions.get(pool.key)
        if known is not None:
            return known
        # Stored so that an operator that restarted still tells of the partitions created since.
        return stored_partition_counts(self.kube, pool)

    def decide_and_write(
        self,
        pool: PoolObject,
        spec: BrokerPoolSpec,
        goals: list[tuple[str, BalancerGoalSpec]],
        props: Mapping[str, str],
    ) -> tuple[PoolOutcome, frozenset[int]]:
        """Read Kafka (raises KafkaOperationError), decide, write ConfigMaps, status, goal status;
        the outcome, and the live brokers read."""
        metadata, loads = self.source.read(pool.id, spec, props, goals)
        cordoning = self.cordon(pool, spec, props)
        started = time.monotonic()
        outcome = decide_pool(
            PoolInput(
                name=pool.id.name,
                spec=spec,
                generation=pool.generation,
                status=pool.status,
                approved=pool.annotations.get(APPROVE_ANNOTATION),
                goals=goals,
                metadata=metadata,
                loads=loads,
                stored=self.stored_plan(pool.id),
                load_source=self.source.load_sources.get(pool.id.key),
                usage_source=self.source.usage_sources.get(pool.id.key),
                now=time.time(),
                known_partitions=self.partition_counts(pool.id),
                cordoning=cordoning,
                cancel=pool.annotations.get(CANCEL_ANNOTATION),
            )
        )
        self.metrics.plan_seconds.labels(pool.id.key).observe(time.monotonic() - started)
        self.metrics.offline_log_dirs.labels(pool.id.key).set(len(metadata.offline_log_dirs()))
        for result in outcome.goal_results:
            goal = result.name or result.type
            self.metrics.goal_satisfied.labels(pool.id.key, goal).set(1 if result.satisfied else 0)
            self.metrics.goal_deviation.labels(pool.id.key, goal).set(result.deviation)
        self.write(pool, outcome)
        if outcome.partitions is not None:
            self.known_partitions[pool.id.key] = outcome.partitions
        self.metrics.new_partitions.labels(pool.id.key).inc(outcome.new_partitions)
        return outcome, frozenset(metadata.live)

    def cleanup_waits(
        self, pool: PoolId, err: KafkaOperationError, retry: int, retries: int, every_s: int
    ) -> None:
        """An Event on a deleted pool whose clean-up cannot reach Kafka: it waits, or (the last try)
        is let go with what may be left."""
        if retry + 1 >= retries:
            message = (
                f"Kafka unreachable for {retries * every_s // 60} minutes: the pool is let go; moves of "
                f"its plan may still be in flight and its throttles or cordons set ({err})"
            )
            self.kube.post_event(pool, Event("Warning", "CleanupAbandoned", sentence(message)))
            return
        left = (retries - retry - 1) * every_s // 60
        message = (
            f"the pool's deletion waits to cancel its moves and remove its throttles: Kafka unreachable "
            f"({err}); retried every {every_s} s, for {left} more minute(s)"
        )
        self.kube.post_event(pool, Event("Warning", "CleanupWaiting", sentence(message)))

    def cordon(self, pool: PoolObject, spec: BrokerPoolSpec, props: Mapping[str, str]) -> Cordoning | None:
        """Cordon the brokers the pool drains, uncordon those it no longer does (KIP-1066); None when
        there is neither. Each broker is put on record (status.cordonedBrokers) before it is
        cordoned, so a crash in between cannot leave one the operator does not know it cordoned."""
        recorded = frozenset(int(b) for b in pool.status.get("cordonedBrokers") or [])
        wanted = frozenset(spec.drain)
        if not wanted and not recorded:
            return None
        if wanted - recorded:
            ahead = {"cordonedBrokers": sorted(recorded | wanted)}
            self.kube.patch_status(PLURAL_POOLS, pool.id.namespace, pool.id.name, ahead)
        try:
            ours = self.executions.cordon(spec, props, wanted, recorded | wanted)
        except KafkaOperationError as err:
            return Cordoning(recorded | wanted, error=str(err))
        if ours is None:
            return Cordoning(recorded, supported=False)
        return Cordoning(ours)

    def write(self, pool: PoolObject, outcome: PoolOutcome) -> None:
        """The new plan and its report into the pool's ConfigMaps, then the pool's and goals' status."""
        owner = pool.id
        if outcome.new_plan is not None:
            plan = outcome.new_plan
            fields = {"plan.id": plan.id, "moves": str(plan.moves), "bytes-to-move": str(plan.bytes_to_move)}
            if plan.repairs is not None:
                # Kept with the plan: a repair interrupted by a restart resumes without approval.
                fields[REPAIRS_KEY] = plan.repairs
            blobs.store(
                self.kube,
                owner.namespace,
                plan_config_map(owner.name),
                owner,
                fields,
                PLAN_KEY,
                json_text(plan_document(plan.reassignments)).encode(),
            )
        status = outcome.status
        # A pass that made a plan has both; one that did not keeps the ones stored.
        if outcome.report is not None and outcome.partitions is not None:
            try:
                store_loads(self.kube, owner, outcome.report, outcome.partitions)
            except ConfigMapTooLarge as err:
                # Only the report is lost: the pool plans and executes on.
                _log.warning("pool %s: %s", owner.key, err)
                unstored = failure("ReportStored", "TooLarge", f"the plan's report is not stored: {err}")
                now = rfc3339(time.time())
                dated = merge_conditions(
                    pool.status.get("conditions") or [], [unstored], generation=pool.generation, now=now
                )
                status = replace(status, conditions=(*status.conditions, *dated))
        self.kube.patch_status(PLURAL_POOLS, owner.namespace, owner.name, status.to_dict())
        self.write_goal_statuses(pool, outcome)

    def write_goal_statuses(self, pool: PoolObject, outcome: PoolOutcome) -> None:
        """Each named goal's Satisfied condition: whether the goal holds on the cluster as it is
        now (the goals' ``before``), not whether it would after the plan."""
        now = rfc3339(time.time())
        previous = {goal.name: goal for goal in pool.goals}
        for result in outcome.goal_results:
            goal = previous.get(result.name) if result.name else None
            if goal is None:
                continue
            condition = Condition(
                "Satisfied",
                TRUE if result.satisfied else FALSE,
                "GoalHolds" if result.satisfied else "GoalViolated",
                result.detail
                or (
                    "the goal holds on the cluster as it is now"
                    if result.satisfied
                    else "the goal is not met on the cluster as it is now"
                ),
            )
            status = BalancerGoalStatus(
                goal.generation,
                result.worst_deviation,
                merge_conditions(goal.conditions, [condition], generation=goal.generation, now=now),
            )
            self.kube.patch_status(PLURAL_GOALS, pool.id.namespace, result.name, status.to_dict())

    def report_failure(self, pool: PoolObject, condition: Condition) -> None:
        """Write a single failing condition (Kafka unreachable, unusable spec) and the Ready summary."""
        previous = pool.status.get("conditions") or []
        merged = merge_conditions(
            previous, [ready([condition]), condition], generation=pool.generation, now=rfc3339(time.time())
        )
        # The other conditions are kept as they were: a list is replaced whole by a merge patch.
        kept = [c for c in previous if c.get("type") not in (condition.type, "Ready")]
        status = PoolStatus(pool.generation, merged).to_dict()
        status["conditions"] += kept
        self.kube.patch_status(PLURAL_POOLS, pool.id.namespace, pool.id.name, status)

    def record_metrics(self, pool: PoolId, status: PoolStatus) -> None:
        plan = status.plan
        self.metrics.plan_moves.labels(pool.key).set(plan.moves_total if plan else 0)
        self.metrics.plan_bytes.labels(pool.key).set(plan.bytes_to_move if plan else 0)
        balanced = status.condition("Balanced")
        self.metrics.balanced.labels(pool.key).set(
            1 if balanced is not None and balanced.status == TRUE else 0
        )
        blocked = status.condition("DrainBlocked")
        self.metrics.drain_blocked.labels(pool.key).set(1 if blocked and blocked.status == TRUE else 0)
        executing = status.condition("Executing")
        failed = executing is not None and executing.reason == "ExecutionFailed"
        self.metrics.execution_failed.labels(pool.key).set(1 if failed else 0)
        states = [b.state for b in status.brokers or ()]
        self.metrics.brokers_missing.labels(pool.key).set(states.count(Lifecycle.MISSING.value))
        self.metrics.brokers_failed.labels(pool.key).set(states.count(Lifecycle.FAILED.value))
        failure = status.condition("BrokerFailure")
        guarded = failure is not None and failure.reason == GUARD_REASON
        self.metrics.self_healing_blocked.labels(pool.key).set(1 if guarded else 0)
