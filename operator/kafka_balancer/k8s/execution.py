"""Running a stored plan with the kafka layer's executor; its state is mirrored into a ConfigMap.

The state file (under the operator's state directory) is the executor's own; the ConfigMap copy lets a
new operator pod (another node, empty disk) resume exactly where the old one stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kafka_balancer.api import Execution as ExecutionSpec
from kafka_balancer.k8s import metrics
from kafka_balancer.k8s.kube import Kube, json_text
from kafka_balancer.kafka.admin import KafkaAdmin
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus, load_state, state_document
from kafka_balancer.kafka.executor import ExecuteOptions, Executor, check_same_plan, new_state
from kafka_balancer.kafka.plan_input import PlannedPartition
from kafka_balancer.reconcile.pool import StoredPlan, execution_config_map
from kafka_balancer.reconcile.quantity import parse_quantity

logger = logging.getLogger(__name__)
# Mirror at most this often while moves run (every commit would be a ConfigMap write per second).
MIRROR_EVERY_S = 5.0

Progress = Callable[[int, int], None]


class _MirroredExecutor(Executor):
    def __init__(self, *args: Any, mirror: Callable[[ExecutionState, bool], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._mirror = mirror

    def commit(self, state: ExecutionState) -> ExecutionState:
        state = super().commit(state)
        self._mirror(state, False)
        return state


def options_of(spec: ExecutionSpec) -> ExecuteOptions:
    return ExecuteOptions(
        throttle=int(parse_quantity(spec.throttle_bytes_per_second)),
        max_moves_per_broker=spec.max_moves_per_broker,
        max_moves=spec.max_moves,
        poll_interval_s=2.0,
    )


def run_plan(
    kube: Kube,
    state_dir: Path,
    pool: Mapping[str, Any],
    stored: StoredPlan,
    bootstrap: str,
    props: Mapping[str, str],
    spec: ExecutionSpec,
    progress: Progress,
    cancel_requested: Callable[[], bool],
) -> ExecutionState:
    """Execute ``stored`` to the end (resuming a previous run of the same plan); raises on failure."""
    namespace, name = pool["namespace"], pool["name"]
    state_path = state_dir / f"{namespace}.{name}.{stored.id}.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    config_map = execution_config_map(name)
    plan = [
        PlannedPartition(p["topic"], int(p["partition"]), tuple(p["replicas"]))
        for p in stored.document["partitions"]
    ]
    last_mirror = [0.0]

    def mirror(state: ExecutionState, final: bool) -> None:
        now = time.monotonic()
        if not final and now - last_mirror[0] < MIRROR_EVERY_S:
            return
        last_mirror[0] = now
        kube.write_config_map(
            namespace,
            config_map,
            pool,
            {"plan.id": stored.id, "state.json": json_text(state_document(state))},
        )
        metrics.BYTES_MOVED.labels(f"{namespace}/{name}").set(state.bytes_done)
        done = len(state.by_status(MoveStatus.DONE))
        progress(done, len(state.moves))

    options = options_of(spec)
    admin = KafkaAdmin(bootstrap, props)
    try:
        if not state_path.exists():
            mirrored = kube.read_config_map(namespace, config_map)
            if mirrored and mirrored.get("plan.id") == stored.id and "state.json" in mirrored:
                state_path.write_text(mirrored["state.json"])
        if state_path.exists():
            state = load_state(state_path)
            check_same_plan(state, plan, state_path)
            logger.info("resuming plan %s of pool %s/%s", stored.id, namespace, name)
        else:
            state = new_state(admin, plan, options, time.time())
        executor = _MirroredExecutor(
            admin, state_path, options, log=logger.info, mirror=mirror, cancel_requested=cancel_requested
        )
        final = executor.run(state)
        mirror(final, True)
        return final
    finally:
        admin.close()
