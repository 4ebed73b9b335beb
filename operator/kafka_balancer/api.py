"""Pydantic models of the custom resources' specs: the boundary between manifests and the core.

Shared by the CLI (goals files are ``BalancerGoal`` manifests) and the operator.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_balancer.goals.spec import GoalSpec, GoalType

GROUP = "kafkabalancer.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"


class PoolRef(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1)


class BalancerGoalSpec(BaseModel):
    """``BalancerGoal.spec``. Integers only: Kubernetes API conventions forbid floats in specs."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    type: Literal[
        "RackAware",
        "ReplicaCapacity",
        "DiskCapacity",
        "NetworkInCapacity",
        "NetworkOutCapacity",
        "CpuCapacity",
        "ReplicaDistribution",
        "LeaderDistribution",
        "TopicReplicaDistribution",
        "DiskDistribution",
        "NetworkInDistribution",
        "NetworkOutDistribution",
        "CpuDistribution",
    ]
    hard: bool | None = None
    priority: int | None = Field(default=None, ge=-1_000_000, le=1_000_000)
    threshold_percent: int | None = Field(default=None, alias="thresholdPercent", ge=0, le=100)
    range_percent: int | None = Field(default=None, alias="rangePercent", ge=0, le=100)
    max_replicas_per_broker: int | None = Field(default=None, alias="maxReplicasPerBroker", ge=1)
    pool_ref: PoolRef | None = Field(default=None, alias="poolRef")

    def to_goal(self, name: str = "") -> GoalSpec:
        return GoalSpec.default(
            GoalType(self.type),
            hard=self.hard,
            priority=self.priority,
            threshold_percent=self.threshold_percent,
            range_percent=self.range_percent,
            max_replicas_per_broker=self.max_replicas_per_broker,
            name=name or None,
        )


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = ""
    namespace: str | None = None


class BalancerGoal(BaseModel):
    model_config = ConfigDict(extra="allow")
    api_version: Literal["kafkabalancer.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["BalancerGoal"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: BalancerGoalSpec
