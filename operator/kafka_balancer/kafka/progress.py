"""A human summary of an execution state: bytes, moves by status, ETA."""

from __future__ import annotations

from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def summary(state: ExecutionState, now: float) -> str:
    done, total = state.bytes_done, state.bytes_total
    counts = {status: len(state.by_status(status)) for status in MoveStatus}
    lines = [
        f"bytes: {done}/{total} ({100.0 * done / total if total else 100.0:.1f}%)",
        "moves: " + ", ".join(f"{counts[s]} {s.value}" for s in MoveStatus),
    ]
    elapsed = (state.finished_at or now) - state.created_at
    if state.finished_at is not None:
        lines.append(f"finished after {_duration(elapsed)}")
    elif done and elapsed > 0:
        lines.append(f"ETA: {_duration((total - done) * elapsed / done)}")
    else:
        lines.append("ETA: unknown (no bytes moved yet)")
    lines += [
        f"  {m.topic}-{m.partition}: {m.status.value}: {m.reason}" for m in state.by_status(MoveStatus.FAILED)
    ]
    return "\n".join(lines)
