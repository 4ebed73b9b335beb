"""What one pass over a BrokerPool decides from: the pool, its goals, the stored plan, and what the
pool service observed of the cluster (metadata, loads and where they came from, cordoning).

The pool service (k8s/pools.py) reads all of it before the pass; the pass itself (pool.py) never
talks to Kafka or Kubernetes and gets time as input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.model.cluster import PartitionLoad
from kafka_balancer.model.plan import ReassignmentPlan
from kafka_balancer.reconcile.snapshot import ClusterMetadata


@dataclass(frozen=True, slots=True)
class StoredPlan:
    """The plan in the pool's plan ConfigMap: exactly what an approval executes."""

    id: str
    reassignments: ReassignmentPlan
    bytes_to_move: int
    moves: int
    # The violated hard goals it repairs, when it was planned with the hard goals alone to run without
    # approval (spec.selfHealing.repairHardGoals); None for a plan made with every goal.
    repairs: str | None = None


@dataclass(frozen=True, slots=True)
class LoadSource:
    """Where the loads came from: the Spark scoring job, or (scored False) the collector's passes."""

    scored: bool
    error: str | None = None  # the latest scoring run's failure, if it failed
    engine: str | None = None  # where the scored loads were computed


@dataclass(frozen=True)
class UsageSource:
    """Where broker cpu and network came from at the last collector pass."""

    url: str | None  # spec.prometheus.url; None: no source configured
    brokers: int | None = None  # brokers the last answer named; None: no interval measured yet
    error: str | None = None  # why the last query failed


@dataclass(frozen=True, slots=True)
class PoolInput:
    name: str
    spec: BrokerPoolSpec
    generation: int
    status: Mapping[str, Any]
    approved: str | None
    goals: Sequence[tuple[str, BalancerGoalSpec]]
    metadata: ClusterMetadata
    loads: Mapping[tuple[str, int], PartitionLoad]
    stored: StoredPlan | None
    now: float
    load_source: LoadSource | None = None  # None: scoring is not set up (no condition)
    usage_source: UsageSource | None = None  # None: not reported (no condition)
    # Each topic's partition count at the last pass that made a plan (PoolOutcome.partitions); None:
    # no such pass since the operator started, so no partition counts as new.
    known_partitions: Mapping[str, int] | None = None
    # None: the pass had nothing to cordon or uncordon (no drain, nothing on record).
    cordoning: Cordoning | None = None
    # The cancel annotation: the plan the user asked to cancel (None: no request).
    cancel: str | None = None


@dataclass(frozen=True, slots=True)
class Cordoning:
    """What cordoning the pool's drained brokers came to this pass (KIP-1066; done by k8s/ through
    the kafka layer before the pass decides)."""

    ours: frozenset[int]  # the brokers the operator holds cordoned: status.cordonedBrokers
    supported: bool = True  # False: Kafka older than 4.3, nothing cordoned
    error: str | None = None  # Kafka refused or did not answer; tried again next pass
