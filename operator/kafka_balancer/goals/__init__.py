"""Goal families, their registry, and the goal math shared by the planner and the Spark job."""

from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set

__all__ = ["GoalSpec", "GoalType", "default_goal_set"]
