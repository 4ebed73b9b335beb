"""An execution's progress: bytes, moves by status, ETA; as text (CLI) and as status fields (operator)."""

from __future__ import annotations

from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def eta_seconds(state: ExecutionState, now: float) -> float | None:
    """Time left at the byte rate so far; None when finished or before any byte has moved."""
    done, total = state.bytes_done, state.bytes_total
    elapsed = now - state.created_at
    if state.finished_at is not None or not done or elapsed <= 0:
        return None
    return (total - done) * elapsed / done


def summary(state: ExecutionState, now: float) -> str:
    done, total = state.bytes_done, state.bytes_total
    counts = {status: len(state.by_status(status)) for status in MoveStatus}
    lines = [
        f"bytes: {done}/{total} ({100.0 * done / total if total else 100.0:.1f}%)",
        "moves: " + ", ".join(f"{counts[s]} {s.value}" for s in MoveStatus),
    ]
    eta = eta_seconds(state, now)
    if state.finished_at is not None:
        lines.append(f"finished after {_duration(state.finished_at - state.created_at)}")
    elif eta is not None:
        lines.append(f"ETA: {_duration(eta)}")
    else:
        lines.append("ETA: unknown (no bytes moved yet)")
    lines += [
        f"  {m.topic}-{m.partition}: {m.status.value}: {m.reason}" for m in state.by_status(MoveStatus.FAILED)
    ]
    return "\n".join(lines)


def progress_status(state: ExecutionState, now: float) -> dict[str, int | str | None]:
    """``status.execution`` fields of an execution (integers: no floats in status either). A merge
    patch: ``etaSeconds`` None removes the last ETA once there is none."""
    done, total = state.bytes_done, state.bytes_total
    moves_done, moves = len(state.by_status(MoveStatus.DONE)), len(state.moves)
    eta = eta_seconds(state, now)
    message = f"{moves_done}/{moves} moves, {100.0 * done / total if total else 100.0:.0f}% of bytes"
    return {
        "movesDone": moves_done,
        "movesInFlight": len(state.by_status(MoveStatus.IN_FLIGHT)),
        "movesPending": len(state.by_status(MoveStatus.PENDING)),
        "bytesDone": done,
        "bytesTotal": total,
        "etaSeconds": None if eta is None else round(eta),
        "message": message + (f", ETA {_duration(eta)}" if eta is not None else ""),
    }
