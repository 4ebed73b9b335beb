"""Cancel an execution: stop our ongoing reassignments, settle every move, remove our throttles."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kafka_balancer.errors import ExecutionError
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.throttle import Commit, sync_throttles


def cancel_execution(
    admin: AdminPort,
    state: ExecutionState,
    commit: Commit,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    timeout_s: float = 120.0,
) -> ExecutionState:
    """Each in-flight move ends either done (it finished first) or cancelled (back on its source)."""
    in_flight = {m.tp for m in state.by_status(MoveStatus.IN_FLIGHT)}
    listed = admin.reassignments()
    admin.alter_reassignments({tp: None for tp in in_flight if tp in listed})
    deadline = clock() + timeout_s
    while in_flight & set(admin.reassignments()):
        if clock() > deadline:
            raise ExecutionError(f"reassignments still listed {timeout_s:.0f}s after cancelling them")
        sleep(0.5)
    parts = admin.partitions({m.topic for m in state.moves})
    now = clock()
    for move in state.moves:
        if move.status not in (MoveStatus.PENDING, MoveStatus.IN_FLIGHT):
            continue
        part = parts.get(move.tp)
        if move.status is MoveStatus.IN_FLIGHT and part is not None and part.replicas == move.target:
            state = state.with_move(replace(move, status=MoveStatus.DONE, finished_at=now))
        else:
            state = state.with_move(
                replace(move, status=MoveStatus.CANCELLED, finished_at=now, reason="cancelled")
            )
    state = commit(state)
    state = sync_throttles(admin, state, commit, final=True)
    return commit(replace(state, finished_at=clock()))
