"""The execution state in ``<pool>-execution``: the copy a successor resumes from, written ahead.

Written conditionally on the version this process last read or wrote (blobs.store_if): a process
that lost the execution to another (which wrote the state since) has its write refused, and stops
(ExecutionFenced), instead of setting moves back to an older status.

Any change a successor could not rebuild from Kafka (a move's status or target, a throttle we set
or removed, leadership, the end) is written BEFORE the Kafka write it announces, because the
executor commits before it acts: a successor never resubmits a move or misses a throttle of ours.
Mere progress (bytes copied) is written at most every ``Timings.mirror_every_s``.

A Kubernetes API that does not answer is ridden out: progress waits for the next commit; a change
that must be written ahead is retried with a bounded backoff for as long as ``check`` (the lease)
allows (backoff ``Timings.state_retry_first_s`` doubling to ``state_retry_max_s``), while the
moves already in Kafka go on copying. ``on_recovered`` tells how long it lasted.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from kafka_balancer.errors import ExecutionFenced, KubernetesUnavailable, WriteConflict
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.kafka.execution_state import ExecutionState, state_document, state_from_document
from kafka_balancer.reconcile.pool import execution_config_map

STATE_KEY = "state.json"

logger = logging.getLogger(__name__)
DEFAULT_TIMINGS = Timings()


def _essential(state: ExecutionState) -> Any:
    """What a successor cannot rebuild from Kafka: it must be mirrored before Kafka is changed."""
    return (
        tuple((m.tp, m.status, m.target) for m in state.moves),
        tuple(sorted(state.throttled_brokers.items())),
        tuple(sorted(state.throttled_topics.items())),
        tuple(sorted(state.broker_rates.items())),
        state.leadership_done,
        state.finished_at,
    )


class StateMirror:
    def __init__(
        self,
        kube: KubePort,
        pool: PoolId,
        *,
        timings: Timings = DEFAULT_TIMINGS,
        check: Callable[[], None] = lambda: None,
        on_recovered: Callable[[float], None] = lambda _: None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.kube = kube
        self.pool = pool
        self.timings = timings
        self.check = check
        self.on_recovered = on_recovered
        self.clock = clock
        self.sleep = sleep
        self._version = blobs.ABSENT
        self._written: Any = None
        self._written_at = float("-inf")
        self._outage_since: float | None = None

    @property
    def config_map(self) -> str:
        return execution_config_map(self.pool.name)

    def load(self) -> tuple[str, ExecutionState] | None:
        """The recorded execution (plan id, state); later writes are conditional on what was read."""
        found = blobs.load_versioned(self.kube, self.pool.namespace, self.config_map, self.pool, STATE_KEY)
        if found is None:
            self._version = blobs.ABSENT
            return None
        fields, document, self._version = found
        state = state_from_document(json.loads(document))
        self._written = _essential(state)
        return fields["plan.id"], state

    def write(self, plan: str, state: ExecutionState, *, force: bool = False) -> bool:
        """Mirror ``state``: at once if it holds an essential change (or ``force``), else at most
        every ``mirror_every_s``. Returns whether it was written now."""
        essential = force or _essential(state) != self._written
        if not essential and self.clock() - self._written_at < self.timings.mirror_every_s:
            return False
        delay = self.timings.state_retry_first_s
        while True:
            try:
                self._store(plan, state)
                return True
            except KubernetesUnavailable as err:
                if self._outage_since is None:
                    self._outage_since = self.clock()
                    logger.warning("pool %s: execution state not mirrored: %s", self._key, err)
                if not essential:
                    return False  # progress only: the next commit tries again
            # Only while we still own the execution (raises ExecutionFenced once the lease is gone).
            self.check()
            self.sleep(delay)
            delay = min(self.timings.state_retry_max_s, delay * 2)

    def _store(self, plan: str, state: ExecutionState) -> None:
        document = json_text(state_document(state)).encode()
        try:
            self._version = blobs.store_if(
                self.kube,
                self.pool.namespace,
                self.config_map,
                self.pool,
                {"plan.id": plan},
                STATE_KEY,
                document,
                self._version,
            )
        except WriteConflict as err:
            raise ExecutionFenced(
                f"pool {self._key}: the execution state was written by another process since this one "
                f"read it ({err}); stopping"
            ) from err
        self._written = _essential(state)
        self._written_at = self.clock()
        if self._outage_since is not None:
            lasted = self.clock() - self._outage_since
            self._outage_since = None
            logger.info("pool %s: execution state mirrored again after %.1fs", self._key, lasted)
            self.on_recovered(lasted)

    @property
    def _key(self) -> str:
        return self.pool.key
