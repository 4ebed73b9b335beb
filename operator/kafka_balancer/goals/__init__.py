"""Goal families, their registry, and the bands the planner and the Spark job share; built on model/ only."""

from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set

__all__ = ["GoalSpec", "GoalType", "default_goal_set"]
