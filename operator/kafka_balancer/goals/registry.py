"""Goal implementations by type: one place that maps a spec to the code that enforces it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_balancer.goals.bands import band_goal
from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.rack import RackAwareGoal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal

if TYPE_CHECKING:
    from kafka_balancer.model.working import WorkingModel


def build_goal(spec: GoalSpec, state: WorkingModel, racks_held: bool = False) -> Goal:
    """``racks_held``: RackAware is hard or optimised before ``spec``, so no move breaks it."""
    if spec.type is GoalType.RACK_AWARE:
        return RackAwareGoal(spec, state)
    if spec.type is GoalType.TOPIC_REPLICA_DISTRIBUTION:
        return TopicReplicaDistributionGoal(spec, state, racks_held)
    return band_goal(spec, state, racks_held)


def priority_order(specs: tuple[GoalSpec, ...]) -> list[GoalSpec]:
    """Highest priority first; hard before soft at equal priority; then catalog order."""
    catalog = list(GoalType)
    return sorted(specs, key=lambda s: (-s.priority, not s.hard, catalog.index(s.type), s.label))
