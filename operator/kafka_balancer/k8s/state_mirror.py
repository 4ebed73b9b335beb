"""The execution state in ``<pool>-execution``: the copy a successor resumes from, written ahead.

Written conditionally on the version this process last read or wrote (blobs.store_if): a process
that lost the execution to another (which wrote the state since) has its write refused, and stops
(ExecutionFenced), instead of setting moves back to an older status.

Any change a successor could not rebuild from Kafka (a move's status or target, a throttle we set
or removed, leadership, the end) is written BEFORE the Kafka write it announces, because the
executor commits before it acts: a successor never resubmits a move or misses a throttle of ours.
Mere progress (bytes copied) is written at most every ``Timings.mirror_every_s``.

A state of more than ``PART_MOVES`` moves is stored in parts (blobs.store_parts): the moves in
parts of ``PART_MOVES`` each, named by their content, and the rest in the head. A step rewrites the
head and the parts whose moves changed, not the whole state: a plan of hundreds of thousands of moves
would otherwise write its whole state, megabytes, on every step. A smaller state stays one plain
document (``state.json``), which ``kubectl`` shows as it is and earlier versions read.

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

from kafka_balancer.errors import ExecutionFenced, KubernetesUnavailable, UnreadableConfigMap, WriteConflict
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.k8s.settings import Timings
from kafka_balancer.kafka.execution_state import (
    ExecutionState,
    Move,
    moves_document,
    state_document,
    state_from_document,
    state_head_document,
)
from kafka_balancer.reconcile.names import execution_config_map

STATE_KEY = "state.json"
# The head of a state stored in parts; a key of its own, so that no reader of STATE_KEY takes a
# head without its moves for a whole state.
HEAD_KEY = "state-head.json"
# Moves per part: a step rewrites the parts of the moves it changed (a batch in plan order: one or
# two), and a state of this many moves or fewer is written whole.
PART_MOVES = 1000

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
        # The moves of each part last written or read, with the part: a part is packed again only
        # when its moves changed.
        self._parts: list[tuple[tuple[Move, ...], blobs.Part]] = []

    @property
    def config_map(self) -> str:
        return execution_config_map(self.pool.name)

    def load(self) -> tuple[str, ExecutionState] | None:
        """The recorded execution (plan id, state); later writes are conditional on what was read."""
        namespace, name = self.pool.namespace, self.config_map
        in_parts = blobs.load_parts(self.kube, namespace, name, self.pool, HEAD_KEY)
        # The record is a ConfigMap that anyone who may edit the namespace's ConfigMaps can change:
        # what does not parse is refused, naming it, rather than failing the pool with a traceback.
        try:
            if in_parts is not None:
                fields, head, parts, self._version = in_parts
                document = json.loads(head)
                moves = [json.loads(payload) for _, payload in parts]
                document["moves"] = [move for part in moves for move in part]
                state = state_from_document(document)
                if all(len(part) == PART_MOVES for part in moves[:-1]):
                    # Cut as this process cuts: a part whose moves do not change is not written again.
                    self._parts = [
                        (state.moves[i * PART_MOVES : (i + 1) * PART_MOVES], part)
                        for i, (part, _) in enumerate(parts)
                    ]
            else:
                found = blobs.load_versioned(self.kube, namespace, name, self.pool, STATE_KEY)
                if found is None:
                    self._version = blobs.ABSENT
                    return None
                fields, whole, self._version = found
                state = state_from_document(json.loads(whole))
            plan = str(fields["plan.id"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
            raise UnreadableConfigMap(
                f"ConfigMap {namespace}/{name}: not an execution record this operator wrote "
                f"({type(err).__name__}: {err})"
            ) from None
        self._written = _essential(state)
        return plan, state

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
        namespace, name, fields = self.pool.namespace, self.config_map, {"plan.id": plan}
        try:
            if len(state.moves) <= PART_MOVES:
                document = json_text(state_document(state)).encode()
                written = blobs.store_if(
                    self.kube, namespace, name, self.pool, fields, STATE_KEY, document, self._version
                )
            else:
                parts = self._packed(state.moves)
                head = json_text(state_head_document(state)).encode()
                written = blobs.store_parts(
                    self.kube, namespace, name, self.pool, fields, HEAD_KEY, head, parts, self._version
                )
            self._version = written
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

    def _packed(self, moves: tuple[Move, ...]) -> list[blobs.Part]:
        """The parts of ``moves``: those whose moves are as last written as they were, the others
        packed anew (their content names them: a part that did not change keeps its ConfigMap)."""
        packed = []
        for index, start in enumerate(range(0, len(moves), PART_MOVES)):
            chunk = moves[start : start + PART_MOVES]
            known = self._parts[index] if index < len(self._parts) else None
            if known is None or known[0] != chunk:
                known = (chunk, blobs.pack_part(json_text(moves_document(chunk)).encode()))
            packed.append(known)
        self._parts = packed
        return [part for _, part in packed]

    @property
    def _key(self) -> str:
        return self.pool.key
