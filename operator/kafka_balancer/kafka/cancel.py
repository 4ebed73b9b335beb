"""Cancel an execution: stop our ongoing reassignments, settle every move, remove our throttles."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kafka_balancer.durations import age_text
from kafka_balancer.errors import ExecutionError
from kafka_balancer.kafka.execution_state import TOPIC_DELETED, ExecutionState, MoveStatus
from kafka_balancer.kafka.log_dir_moves import dir_brokers, misplaced, replica_dirs, stop_copies
from kafka_balancer.kafka.port import AdminPort
from kafka_balancer.kafka.throttle import Commit, sync_throttles

# How long a cancelled move's partition may still show its in-flight replicas in metadata before
# its order is judged anyway (KRaft brokers apply the controller's change within milliseconds).
SETTLE_S = 15.0


def cancel_execution(
    admin: AdminPort,
    state: ExecutionState,
    commit: Commit,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    timeout_s: float = 120.0,
) -> ExecutionState:
    """Each in-flight move ends either done (it finished first) or cancelled (back on its source, its
    replicas left in the dirs they are in: a copy between dirs is stopped, as Kafka's tool does)."""
    in_flight = {m.tp for m in state.by_status(MoveStatus.IN_FLIGHT)}
    listed = admin.reassignments()
    admin.alter_reassignments({tp: None for tp in in_flight if tp in listed})
    stop_copies(admin, state.by_status(MoveStatus.IN_FLIGHT))
    deadline = clock() + timeout_s
    while in_flight & set(admin.reassignments()):
        if clock() > deadline:
            raise ExecutionError(f"reassignments still listed {age_text(timeout_s)} after cancelling them")
        sleep(0.5)
    parts = admin.partitions({m.topic for m in state.moves})
    open_moves = [m for m in state.moves if m.status in (MoveStatus.PENDING, MoveStatus.IN_FLIGHT)]
    with_dirs = [m for m in open_moves if m.dir_targets]
    dirs = replica_dirs(admin, dir_brokers(with_dirs)) if with_dirs else {}
    now = clock()
    for move in open_moves:
        part = parts.get(move.tp)
        if part is None:
            state = state.with_move(
                replace(move, status=MoveStatus.SKIPPED, finished_at=now, reason=TOPIC_DELETED)
            )
            continue
        if part.replicas == move.final and not misplaced(move, dirs):
            state = state.with_move(replace(move, status=MoveStatus.DONE, finished_at=now))
            continue
        reason = "cancelled"
        if move.planned and set(part.replicas) != set(move.original):
            # Steps already done stay done: a complete replica set, neither the original nor the plan.
            reason = f"cancelled between steps, at replicas {list(part.replicas)}"
        state = state.with_move(replace(move, status=MoveStatus.CANCELLED, finished_at=now, reason=reason))
    state = commit(state)
    restore_order(admin, state, clock=clock, sleep=sleep, timeout_s=timeout_s)
    state = sync_throttles(admin, state, commit, final=True)
    return commit(replace(state, finished_at=clock()))


def restore_order(
    admin: AdminPort,
    state: ExecutionState,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
    timeout_s: float = 120.0,
) -> None:
    """Put the replicas of every cancelled or failed move back in their original order.

    Kafka reverts a cancelled reassignment to the original replica set but keeps the order it had
    in flight, so [3, 4] → [1, 4] can come back as [4, 3]: same data, another preferred leader.
    Reassigning to the same set in the original order moves no data.
    """
    stopped = [m for m in state.moves if m.status in (MoveStatus.CANCELLED, MoveStatus.FAILED)]
    if not stopped:
        return
    deadline = clock() + timeout_s
    topics = {m.topic for m in stopped}
    # A broker's metadata lags the controller: for a moment after Kafka stops listing a cancelled
    # reassignment it can still show the in-flight replica set, and a partition judged then would
    # keep the wrong preferred leader. Wait (briefly) until every stopped move shows its original set.
    settle_deadline = min(deadline, clock() + SETTLE_S)
    parts = admin.partitions(topics)
    while clock() < settle_deadline and any(
        (p := parts.get(m.tp)) is not None and set(p.replicas) != set(m.source) for m in stopped
    ):
        sleep(0.5)
        parts = admin.partitions(topics)
    wrong = {
        m.tp: m.source
        for m in stopped
        if (p := parts.get(m.tp)) is not None and p.replicas != m.source and set(p.replicas) == set(m.source)
    }
    if not wrong:
        return
    admin.alter_reassignments(wrong)
    while set(wrong) & set(admin.reassignments()) or any(
        (p := parts.get(tp)) is not None and p.replicas != source for tp, source in wrong.items()
    ):
        if clock() > deadline:
            raise ExecutionError(f"replica order not restored {age_text(timeout_s)} after asking")
        sleep(0.5)
        parts = admin.partitions(topics)
