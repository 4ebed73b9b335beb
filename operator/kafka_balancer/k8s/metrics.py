"""The operator's Prometheus metrics, per pool (namespace/name): one object made at startup and handed to
the services through kopf's memo (tests make their own, on a registry of their own).

The chart's dashboard (charts/kafka-balancer/dashboards/) and alert rules (charts/kafka-balancer/alerts/)
query these names: a rename here is a change to both.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from kafka_balancer import __version__
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus

# The label values a pool's counters take, created at 0 when the pool is first synced: a rate or an
# alert on failures then has a series to read before the first failure.
RECONCILE_RESULTS = ("ok", "invalid", "unreachable")
EXECUTION_RESULTS = ("succeeded", "failed", "cancelled")
SCORING_RESULTS = ("succeeded", "failed")


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.registry = registry
        # Always 1: the label says which version runs (joined onto other series, or seen in a rollout).
        self.build_info = Gauge(
            "kafka_balancer_build_info", "The running operator's version", ["version"], registry=registry
        )
        self.build_info.labels(__version__).set(1)
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
        self.new_partitions = Counter(
            "kafka_balancer_new_partitions_total",
            "Partitions created since the pool's previous plan (new topics, added partitions) that a plan "
            "placed at the first pass after they appeared (event NewPartitions)",
            ["pool"],
            registry=registry,
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
        # A gauge of its own, not a label on the one above: those are network bytes between brokers and
        # existing queries (rate, alerts on a pool's series) keep meaning that; these are disk I/O
        # inside one broker, throttled apart (replica.alter.log.dirs.io.max.bytes.per.second).
        self.log_dir_bytes_moved = Gauge(
            "kafka_balancer_execution_log_dir_bytes_moved",
            "Bytes copied by the running execution between the log dirs of one broker",
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
        self.scoring_failing = Gauge(
            "kafka_balancer_scoring_last_run_failed",
            "1 when the pool's latest scoring run failed (the sync goes on with the collector's loads)",
            ["pool"],
            registry=registry,
        )
        self.kafka_reachable = Gauge(
            "kafka_balancer_kafka_reachable",
            "1 when the latest sync read the pool's cluster, 0 when Kafka could not be reached",
            ["pool"],
            registry=registry,
        )
        self.drain_blocked = Gauge(
            "kafka_balancer_drain_blocked",
            "1 when a drain cannot be planned (condition DrainBlocked)",
            ["pool"],
            registry=registry,
        )
        self.brokers_missing = Gauge(
            "kafka_balancer_brokers_missing",
            "Pool brokers missing from the cluster, not (yet) failed (status.brokers state Missing)",
            ["pool"],
            registry=registry,
        )
        self.brokers_failed = Gauge(
            "kafka_balancer_brokers_failed",
            "Pool brokers failed by self-healing whose replicas are being re-homed (state Failed)",
            ["pool"],
            registry=registry,
        )
        self.self_healing_blocked = Gauge(
            "kafka_balancer_self_healing_blocked",
            "1 when more brokers failed at once than spec.selfHealing's guard lets heal",
            ["pool"],
            registry=registry,
        )
        self.offline_log_dirs = Gauge(
            "kafka_balancer_offline_log_dirs",
            "Log dirs (JBOD) a live broker reports offline, a failed disk (condition LogDirFailure)",
            ["pool"],
            registry=registry,
        )
        self.execution_running = Gauge(
            "kafka_balancer_execution_running", "1 while a plan executes", ["pool"], registry=registry
        )
        self.execution_failed = Gauge(
            "kafka_balancer_execution_failed",
            "1 when the pool's latest execution failed (condition Executing, reason ExecutionFailed)",
            ["pool"],
            registry=registry,
        )
        self.moves_in_flight = Gauge(
            "kafka_balancer_execution_moves_in_flight",
            "Moves of the running execution submitted to Kafka and not finished",
            ["pool"],
            registry=registry,
        )
        self.moves_failed = Gauge(
            "kafka_balancer_execution_moves_failed",
            "Moves of the running execution cancelled (no progress for the move timeout, destination gone)",
            ["pool"],
            registry=registry,
        )
        self.stalled_seconds = Gauge(
            "kafka_balancer_execution_stalled_seconds",
            "Longest time an in-flight move of the running execution has copied no byte (0: none in flight)",
            ["pool"],
            registry=registry,
        )
        self.throttled_brokers = Gauge(
            "kafka_balancer_execution_throttled_brokers",
            "Brokers carrying a replication throttle the execution set",
            ["pool"],
            registry=registry,
        )
        self._pool_gauges = (
            self.plan_moves,
            self.plan_bytes,
            self.balanced,
            self.kafka_reachable,
            self.drain_blocked,
            self.brokers_missing,
            self.brokers_failed,
            self.self_healing_blocked,
            self.offline_log_dirs,
            self.execution_running,
            self.execution_failed,
            self.moves_done,
            self.bytes_moved,
            self.log_dir_bytes_moved,
            self.moves_in_flight,
            self.moves_failed,
            self.stalled_seconds,
            self.throttled_brokers,
            self.scoring_failing,
        )
        self._all = (
            self.reconciles,
            self.executions,
            self.new_partitions,
            self.goal_satisfied,
            self.goal_deviation,
            self.plan_seconds,
            self.scoring_seconds,
            *self._pool_gauges,
        )

    def pool_seen(self, pool: str, engine: str | None) -> None:
        """Every per-pool series at 0 unless already set (``labels`` creates, never resets); ``engine``
        (spec.scoring.engine) names the scoring series, None while the spec is unusable."""
        for result in RECONCILE_RESULTS:
            self.reconciles.labels(pool, result)
        for result in EXECUTION_RESULTS:
            self.executions.labels(pool, result)
        self.new_partitions.labels(pool)
        if engine is not None:
            for result in SCORING_RESULTS:
                self.scoring_seconds.labels(pool, engine, result)
        for gauge in self._pool_gauges:
            gauge.labels(pool)

    def forget(self, pool: str) -> None:
        """A deleted pool's series go: a gauge left at its last value would keep an alert firing."""
        for metric in self._all:
            metric.remove_by_labels({"pool": pool})

    def execution_progress(self, pool: str, state: ExecutionState, now: float) -> None:
        """The running execution's moves, bytes, throttles and stall, from its state."""
        in_flight = state.by_status(MoveStatus.IN_FLIGHT)
        self.moves_done.labels(pool).set(len(state.by_status(MoveStatus.DONE)))
        self.bytes_moved.labels(pool).set(state.bytes_done)
        self.log_dir_bytes_moved.labels(pool).set(state.dir_bytes_done)
        self.moves_in_flight.labels(pool).set(len(in_flight))
        self.moves_failed.labels(pool).set(len(state.by_status(MoveStatus.FAILED)))
        self.throttled_brokers.labels(pool).set(len(state.throttled_brokers))
        self.stalled_seconds.labels(pool).set(max((m.idle_seconds(now) for m in in_flight), default=0.0))

    def scoring_run(self, pool: str, engine: str, result: str, seconds: float) -> None:
        """How long one scoring run took (BackgroundScoring's ``observe``)."""
        self.scoring_seconds.labels(pool, engine, result).observe(seconds)
        self.scoring_failing.labels(pool).set(1 if result == "failed" else 0)

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)
