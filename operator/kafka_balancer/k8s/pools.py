"""One reconcile pass of a BrokerPool: read (Kafka, Kubernetes), call reconcile.pool, write back.

Everything blocking runs in a worker thread; kopf itself (events) is only touched by handlers.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.formats.plan_file import parse_plan, plan_document
from kafka_balancer.k8s import blobs, metrics
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION
from kafka_balancer.reconcile.conditions import FALSE, Condition, merge_conditions, ready
from kafka_balancer.reconcile.connection import client_properties
from kafka_balancer.reconcile.pool import (
    Event,
    PoolInput,
    PoolOutcome,
    StoredPlan,
    decide_pool,
    loads_config_map,
    plan_config_map,
    rfc3339,
)
from kafka_balancer.report.document import report_text

PLURAL_POOLS = "brokerpools"
PLAN_KEY = "plan.json"
PLURAL_GOALS = "balancergoals"


def parse_spec(spec: Mapping[str, Any]) -> BrokerPoolSpec:
    try:
        return BrokerPoolSpec.model_validate(dict(spec))
    except ValidationError as err:
        raise InputError(one_line(err, "spec")) from None


def parse_goals(goals: Sequence[Mapping[str, Any]]) -> list[tuple[str, BalancerGoalSpec]]:
    """Goals as the index holds them; one the apiserver accepted but we cannot read is skipped by name."""
    parsed = []
    for goal in sorted(goals, key=lambda g: str(g["name"])):
        try:
            parsed.append((str(goal["name"]), BalancerGoalSpec.model_validate(dict(goal["spec"]))))
        except ValidationError as err:
            raise InputError(f"BalancerGoal {goal['name']}: {one_line(err, 'spec')}") from None
    return parsed


class PoolReconciler:
    def __init__(self, kube: KubePort, source: ClusterSource, state_dir: Path) -> None:
        self.kube = kube
        self.source = source
        self.state_dir = state_dir

    def connection(self, pool: PoolId, spec: BrokerPoolSpec) -> dict[str, str]:
        """Client properties with credentials from the pool's Secrets (files for TLS keys, mode 0600)."""
        kafka = spec.kafka
        sasl = None
        if kafka.sasl is not None:
            data = self.kube.read_secret(pool.namespace, kafka.sasl.secret_ref.name)
            sasl = None if data is None else {k: v.decode() for k, v in data.items()}
        tls_files: dict[str, Path] | None = None
        if kafka.tls is not None:
            data = self.kube.read_secret(pool.namespace, kafka.tls.secret_ref.name)
            if data is None:
                raise InputError(f"kafka.tls.secretRef: Secret {kafka.tls.secret_ref.name} is missing")
            folder = self.state_dir / "tls" / f"{pool.namespace}.{pool.name}"
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            written: dict[str, Path] = {}
            for key in ("ca.crt", "tls.crt", "tls.key"):
                if key in data:
                    path = folder / key
                    path.touch(mode=0o600)
                    path.write_bytes(data[key])
                    written[key] = path
            tls_files = written
        return client_properties(kafka, sasl, tls_files)

    def stored_plan(self, pool: PoolId) -> StoredPlan | None:
        found = blobs.load(self.kube, pool.namespace, plan_config_map(pool.name), PLAN_KEY)
        if found is None:
            return None
        fields, document = found
        reassignments = parse_plan(json.loads(document), f"ConfigMap {plan_config_map(pool.name)}")
        return StoredPlan(
            fields["plan.id"], reassignments, int(fields["bytes-to-move"]), int(fields["moves"])
        )

    def reconcile(
        self,
        pool: PoolId,
        spec: BrokerPoolSpec,
        generation: int,
        status: Mapping[str, Any],
        annotations: Mapping[str, str],
        goals: list[tuple[str, BalancerGoalSpec]],
        previous_goal_conditions: Mapping[str, tuple[int, list[Any]]],
        props: Mapping[str, str],
    ) -> PoolOutcome:
        """Blocking: read Kafka (raises KafkaOperationError), plan, write ConfigMaps, status, goal status."""
        metadata, loads = self.source.read(pool, spec, props, goals)
        started = time.monotonic()
        outcome = decide_pool(
            PoolInput(
                name=pool.name,
                spec=spec,
                generation=generation,
                status=status,
                approved=annotations.get(APPROVE_ANNOTATION),
                goals=goals,
                metadata=metadata,
                loads=loads,
                stored=self.stored_plan(pool),
                load_source=self.source.load_sources.get(pool.key),
                usage_source=self.source.usage_sources.get(pool.key),
                now=time.time(),
            )
        )
        metrics.PLAN_SECONDS.labels(pool.key).observe(time.monotonic() - started)
        for result in outcome.goal_results:
            goal = result.name or result.type
            metrics.GOAL_SATISFIED.labels(pool.key, goal).set(1 if result.satisfied else 0)
            metrics.GOAL_DEVIATION.labels(pool.key, goal).set(result.deviation)
        if outcome.new_plan is not None:
            plan = outcome.new_plan
            blobs.store(
                self.kube,
                pool.namespace,
                plan_config_map(pool.name),
                pool,
                {"plan.id": plan.id, "moves": str(plan.moves), "bytes-to-move": str(plan.bytes_to_move)},
                PLAN_KEY,
                json_text(plan_document(plan.reassignments)).encode(),
            )
        if outcome.report is not None:
            self.kube.write_config_map(
                pool.namespace,
                loads_config_map(pool.name),
                pool,
                {"report.json": json_text(outcome.report), "report.txt": report_text(outcome.report)},
            )
        self.kube.patch_status(PLURAL_POOLS, pool.namespace, pool.name, outcome.status.to_dict())
        self.write_goal_statuses(pool, outcome, previous_goal_conditions)
        return outcome

    def write_goal_statuses(
        self, pool: PoolId, outcome: PoolOutcome, previous: Mapping[str, tuple[int, list[Any]]]
    ) -> None:
        """Each named goal's Satisfied condition; ``previous``: name → (generation, conditions)."""
        now = rfc3339(time.time())
        for result in outcome.goal_results:
            if not result.name or result.name not in previous:
                continue
            generation, conditions = previous[result.name]
            condition = Condition(
                "Satisfied",
                "True" if result.satisfied else "False",
                "GoalHolds" if result.satisfied else "GoalViolated",
                result.detail
                or ("the goal holds after the plan" if result.satisfied else "the goal is not met"),
            )
            self.kube.patch_status(
                PLURAL_GOALS,
                pool.namespace,
                result.name,
                {
                    "observedGeneration": generation,
                    "worstDeviation": result.worst_deviation,
                    "conditions": merge_conditions(conditions, [condition], generation=generation, now=now),
                },
            )

    def report_failure(
        self, pool: PoolId, generation: int, status: Mapping[str, Any], condition: Condition
    ) -> None:
        """Write a single failing condition (Kafka unreachable, unusable spec) and the Ready summary."""
        kept = [c for c in status.get("conditions") or [] if c.get("type") not in (condition.type, "Ready")]
        current = [ready([condition]), condition]
        merged = merge_conditions(
            status.get("conditions") or [], current, generation=generation, now=rfc3339(time.time())
        )
        self.kube.patch_status(
            PLURAL_POOLS,
            pool.namespace,
            pool.name,
            {"observedGeneration": generation, "conditions": [*merged, *kept]},
        )


def failure(condition_type: str, reason: str, message: str) -> Condition:
    return Condition(condition_type, FALSE, reason, message)


__all__ = ["Event", "PoolId", "PoolReconciler", "failure", "parse_goals", "parse_spec"]
