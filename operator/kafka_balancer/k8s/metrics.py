"""The operator's Prometheus metrics, per pool (namespace/name): one object made at startup and handed to
the services through kopf's memo (tests make their own, on a registry of their own)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        self.reconciles = Counter(
            "kafka_balancer_reconciles_total", "Pool syncs", ["pool", "result"], registry=registry
        )
        self.plan_moves = Gauge(
            "kafka_balancer_plan_moves", "Replica moves of the current plan", ["pool"], registry=registry
        )
        self.plan_bytes = Gauge(
            "kafka_balancer_plan_bytes_to_move", "Bytes the current plan moves", ["pool"], registry=registry
        )
        self.moves_done = Gauge(
            "kafka_balancer_execution_moves_done",
            "Moves done by the running execution",
            ["pool"],
            registry=registry,
        )
        self.executions = Counter(
            "kafka_balancer_executions_total", "Plan executions", ["pool", "result"], registry=registry
        )
        self.balanced = Gauge(
            "kafka_balancer_pool_balanced",
            "1 when every goal holds and nothing moves",
            ["pool"],
            registry=registry,
        )
        self.bytes_moved = Gauge(
            "kafka_balancer_execution_bytes_moved",
            "Bytes copied by the running execution",
            ["pool"],
            registry=registry,
        )
        self.goal_satisfied = Gauge(
            "kafka_balancer_goal_satisfied", "1 when the goal holds now", ["pool", "goal"], registry=registry
        )
        self.goal_deviation = Gauge(
            "kafka_balancer_goal_worst_deviation",
            "Worst deviation now: percent from the band's target (distribution and capacity goals, one "
            "per resource), partitions (RackAware), replicas over the limit (ReplicaCapacity)",
            ["pool", "goal"],
            registry=registry,
        )
        self.plan_seconds = Histogram(
            "kafka_balancer_plan_seconds",
            "One sync's model building and planning",
            ["pool"],
            buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600),
            registry=registry,
        )
        self.scoring_seconds = Histogram(
            "kafka_balancer_scoring_seconds",
            "Spark scoring runs, start to outputs read (engine Embedded or SparkOnKubernetes)",
            ["pool", "engine", "result"],
            buckets=(5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800),
            registry=registry,
        )

    def scoring_run(self, pool: str, engine: str, result: str, seconds: float) -> None:
        """How long one scoring run took (BackgroundScoring's ``observe``)."""
        self.scoring_seconds.labels(pool, engine, result).observe(seconds)

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)
