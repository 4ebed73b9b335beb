"""Prometheus metrics of the operator, per pool (namespace/name)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RECONCILES = Counter("kafka_balancer_reconciles_total", "Pool reconciles", ["pool", "result"])
PLAN_MOVES = Gauge("kafka_balancer_plan_moves", "Replica moves of the current plan", ["pool"])
PLAN_BYTES = Gauge("kafka_balancer_plan_bytes_to_move", "Bytes the current plan moves", ["pool"])
MOVES_DONE = Gauge("kafka_balancer_execution_moves_done", "Moves done by the running execution", ["pool"])
EXECUTIONS = Counter("kafka_balancer_executions_total", "Plan executions", ["pool", "result"])
BALANCED = Gauge("kafka_balancer_pool_balanced", "1 when every goal holds and nothing moves", ["pool"])
BYTES_MOVED = Gauge("kafka_balancer_execution_bytes_moved", "Bytes copied by the running execution", ["pool"])
GOAL_SATISFIED = Gauge("kafka_balancer_goal_satisfied", "1 when the goal holds now", ["pool", "goal"])
GOAL_DEVIATION = Gauge(
    "kafka_balancer_goal_worst_deviation",
    "Worst deviation now: percent from the band's target (distribution and capacity goals, one per "
    "resource), partitions (RackAware), replicas over the limit (ReplicaCapacity)",
    ["pool", "goal"],
)
PLAN_SECONDS = Histogram(
    "kafka_balancer_plan_seconds",
    "One reconcile's model building and planning",
    ["pool"],
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
)
SCORING_SECONDS = Histogram(
    "kafka_balancer_scoring_seconds",
    "Spark scoring runs, start to outputs read (engine Embedded or SparkOnKubernetes)",
    ["pool", "engine", "result"],
    buckets=(5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800),
)


def serve(port: int) -> None:
    start_http_server(port)
