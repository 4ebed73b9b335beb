"""An execution's progress: bytes, moves by status, ETA, as text or as a document (the CLI's
``status``, ``-o json|yaml``); the operator's status fields (k8s/plan_run.py) use the same ETA and
duration text."""

from __future__ import annotations

from typing import Any

from kafka_balancer.durations import age_text
from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus


def eta_seconds(state: ExecutionState, now: float) -> float | None:
    """Time left at the byte rate so far (bytes between brokers and between a broker's dirs together);
    None when finished or before any byte has moved."""
    done, total = state.bytes_done + state.dir_bytes_done, state.bytes_total + state.dir_bytes_total
    elapsed = now - state.created_at
    if state.finished_at is not None or not done or elapsed <= 0:
        return None
    return (total - done) * elapsed / done


def cap_text(state: ExecutionState) -> str:
    """What a cluster-wide default rate did to the execution's throttle: "" when nothing."""
    rates = set(state.broker_rates.values())
    if state.throttle_rate is None or not rates or max(rates) >= state.throttle_rate:
        return ""
    return (
        f"throttle capped at {max(rates)} B/s (asked {state.throttle_rate}) by the cluster-wide default "
        "replication rate (kafka-configs --entity-default)"
    )


def summary(state: ExecutionState, now: float) -> str:
    done, total = state.bytes_done, state.bytes_total
    counts = {status: len(state.by_status(status)) for status in MoveStatus}
    lines = [
        f"bytes: {done}/{total} ({100.0 * done / total if total else 100.0:.1f}%)",
        "moves: " + ", ".join(f"{counts[s]} {s.value}" for s in MoveStatus),
    ]
    if state.dir_bytes_total:
        # Copies between a broker's own log dirs: disk I/O, no network, counted apart.
        dir_done, dir_total = state.dir_bytes_done, state.dir_bytes_total
        lines.insert(1, f"log-dir bytes: {dir_done}/{dir_total} ({100.0 * dir_done / dir_total:.1f}%)")
    if cap_text(state):
        lines.append(cap_text(state))
    eta = eta_seconds(state, now)
    if state.finished_at is not None:
        lines.append(f"finished after {age_text(state.finished_at - state.created_at)}")
    elif eta is not None:
        lines.append(f"ETA: {age_text(eta)}")
    else:
        lines.append("ETA: unknown (no bytes moved yet)")
    lines += [
        f"  {m.topic}-{m.partition}: {m.status.value}: {m.reason}"
        for status in (MoveStatus.FAILED, MoveStatus.SKIPPED)
        for m in state.by_status(status)
    ]
    return "\n".join(lines)


def progress_document(state: ExecutionState, now: float) -> dict[str, Any]:
    """The facts of :func:`summary` for scripts: numbers rather than text (seconds, bytes)."""
    eta = eta_seconds(state, now)
    document: dict[str, Any] = {
        "bytes": {"done": state.bytes_done, "total": state.bytes_total},
        "logDirBytes": {"done": state.dir_bytes_done, "total": state.dir_bytes_total},
        "moves": {status.value: len(state.by_status(status)) for status in MoveStatus},
        "finished": state.finished_at is not None,
        "elapsedSeconds": round((state.finished_at or now) - state.created_at, 1),
        "etaSeconds": None if eta is None else round(eta, 1),
        "throttleCapped": cap_text(state) or None,
        "problems": [
            {"topic": m.topic, "partition": m.partition, "status": m.status.value, "reason": m.reason}
            for status in (MoveStatus.FAILED, MoveStatus.SKIPPED)
            for m in state.by_status(status)
        ],
    }
    return document
