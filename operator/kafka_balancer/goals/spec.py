"""Goal types, their defaults and the frozen goal specification the planner consumes."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafka_balancer.model.resources import Resource


class GoalFamily(enum.Enum):
    RACK = "rack"
    CAPACITY = "capacity"
    DISTRIBUTION = "distribution"


class GoalType(enum.Enum):
    RACK_AWARE = "RackAware"
    REPLICA_CAPACITY = "ReplicaCapacity"
    DISK_CAPACITY = "DiskCapacity"
    NETWORK_IN_CAPACITY = "NetworkInCapacity"
    NETWORK_OUT_CAPACITY = "NetworkOutCapacity"
    CPU_CAPACITY = "CpuCapacity"
    REPLICA_DISTRIBUTION = "ReplicaDistribution"
    LEADER_DISTRIBUTION = "LeaderDistribution"
    TOPIC_REPLICA_DISTRIBUTION = "TopicReplicaDistribution"
    DISK_DISTRIBUTION = "DiskDistribution"
    NETWORK_IN_DISTRIBUTION = "NetworkInDistribution"
    NETWORK_OUT_DISTRIBUTION = "NetworkOutDistribution"
    CPU_DISTRIBUTION = "CpuDistribution"
    # Between the log dirs of each broker (JBOD); only with a snapshot that has logDirs.
    INTRA_BROKER_DISK_CAPACITY = "IntraBrokerDiskCapacity"
    INTRA_BROKER_DISK_DISTRIBUTION = "IntraBrokerDiskDistribution"

    @property
    def family(self) -> GoalFamily:
        if self is GoalType.RACK_AWARE:
            return GoalFamily.RACK
        return GoalFamily.CAPACITY if self.value.endswith("Capacity") else GoalFamily.DISTRIBUTION

    @property
    def intra_broker(self) -> bool:
        """Balances replicas between one broker's log dirs, not between brokers."""
        return self.value.startswith("IntraBroker")

    @property
    def resource(self) -> Resource | None:
        """The balanced resource of a resource goal; None for rack and count goals."""
        return _RESOURCE.get(self)


_RESOURCE = {
    GoalType.DISK_CAPACITY: Resource.DISK,
    GoalType.NETWORK_IN_CAPACITY: Resource.NETWORK_IN,
    GoalType.NETWORK_OUT_CAPACITY: Resource.NETWORK_OUT,
    GoalType.CPU_CAPACITY: Resource.CPU,
    GoalType.DISK_DISTRIBUTION: Resource.DISK,
    GoalType.NETWORK_IN_DISTRIBUTION: Resource.NETWORK_IN,
    GoalType.NETWORK_OUT_DISTRIBUTION: Resource.NETWORK_OUT,
    GoalType.CPU_DISTRIBUTION: Resource.CPU,
}


@dataclass(frozen=True, slots=True)
class GoalDefaults:
    priority: int
    threshold_percent: int = 0
    range_percent: int = 10


# Default priorities: hard goals first, then resources before topic spread and leader counts
# (Cruise Control's proven order). Capacity thresholds
# follow Cruise Control's long-standing defaults (disk/network 80 %, CPU 70 %), so users
# moving from it keep their headroom.
DEFAULTS: dict[GoalType, GoalDefaults] = {
    GoalType.RACK_AWARE: GoalDefaults(priority=130),
    GoalType.REPLICA_CAPACITY: GoalDefaults(priority=120),
    GoalType.DISK_CAPACITY: GoalDefaults(priority=110, threshold_percent=80),
    GoalType.NETWORK_IN_CAPACITY: GoalDefaults(priority=100, threshold_percent=80),
    GoalType.NETWORK_OUT_CAPACITY: GoalDefaults(priority=90, threshold_percent=80),
    GoalType.CPU_CAPACITY: GoalDefaults(priority=80, threshold_percent=70),
    GoalType.REPLICA_DISTRIBUTION: GoalDefaults(priority=70),
    GoalType.DISK_DISTRIBUTION: GoalDefaults(priority=65),
    GoalType.NETWORK_IN_DISTRIBUTION: GoalDefaults(priority=60),
    GoalType.NETWORK_OUT_DISTRIBUTION: GoalDefaults(priority=55),
    GoalType.CPU_DISTRIBUTION: GoalDefaults(priority=50),
    GoalType.TOPIC_REPLICA_DISTRIBUTION: GoalDefaults(priority=45),
    GoalType.LEADER_DISTRIBUTION: GoalDefaults(priority=40),
    # Ordered only against each other: the intra-broker pass runs after the brokers are settled.
    GoalType.INTRA_BROKER_DISK_CAPACITY: GoalDefaults(priority=110, threshold_percent=80),
    GoalType.INTRA_BROKER_DISK_DISTRIBUTION: GoalDefaults(priority=65),
}

# Cruise Control's default replica capacity; a broker past it slows every controller operation.
DEFAULT_MAX_REPLICAS_PER_BROKER = 10_000


@dataclass(frozen=True, slots=True)
class GoalSpec:
    """One goal as the planner sees it: a ``BalancerGoal`` spec with defaults filled in."""

    type: GoalType
    hard: bool
    priority: int
    threshold_percent: int
    range_percent: int
    max_replicas_per_broker: int = DEFAULT_MAX_REPLICAS_PER_BROKER
    name: str = ""

    @property
    def label(self) -> str:
        if not self.name or self.name == self.type.value:
            return self.type.value
        return f"{self.type.value} ({self.name})"

    @classmethod
    def default(cls, goal_type: GoalType, **overrides: object) -> GoalSpec:
        d = DEFAULTS[goal_type]
        values: dict[str, object] = {
            "type": goal_type,
            "hard": goal_type.family is not GoalFamily.DISTRIBUTION,
            "priority": d.priority,
            "threshold_percent": d.threshold_percent,
            "range_percent": d.range_percent,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]


def default_goal_set() -> tuple[GoalSpec, ...]:
    """The goals a pool (or a goals file) without any goal gets: the inter-broker catalog, defaults.

    The intra-broker goals are asked for by name, as Strimzi's ``rebalanceDisk`` and Cruise
    Control's intra-broker goals are: moving replicas between a broker's disks costs disk I/O on a
    cluster that may not want it."""
    return tuple(GoalSpec.default(t) for t in GoalType if not t.intra_broker)
