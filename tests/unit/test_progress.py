"""An execution's progress as the operator writes it into the pool's status."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kafka_balancer.k8s.executions import execution_progress
from kafka_balancer.kafka.execution_state import ExecutionState, Move, MoveStatus

STARTED = 1_000.0


def progress_status(state: ExecutionState, now: float) -> dict[str, Any]:
    """``status.execution``'s progress fields and message, as the merge patch writes them."""
    progress, message = execution_progress(state, now)
    return {**progress.to_dict(), "message": message}


def _state() -> ExecutionState:
    # Each move adds one replica: done 500 of 500, in flight 100 of 300, pending 0 of 200.
    moves = (
        Move("t", 0, (1, 2), (3, 2), size=500, status=MoveStatus.DONE),
        Move("t", 1, (1, 2), (1, 4), size=300, status=MoveStatus.IN_FLIGHT, progress_bytes=100),
        Move("t", 2, (2, 3), (2, 4), size=200),
    )
    return ExecutionState(moves=moves, created_at=STARTED, updated_at=STARTED)


def test_a_running_execution_reports_bytes_moves_and_the_time_left_at_its_rate() -> None:
    fields = progress_status(_state(), STARTED + 60)
    # 600 of 1,000 bytes in 60 s: the other 400 take 40 s more at that rate.
    assert fields == {
        "movesDone": 1,
        "movesInFlight": 1,
        "movesPending": 1,
        "bytesDone": 600,
        "bytesTotal": 1000,
        "etaSeconds": 40,
        "eta": "0h00m40s",
        "message": "1/3 moves, 60% of bytes, ETA 0h00m40s",
    }


def test_no_eta_before_a_byte_moved_nor_once_finished() -> None:
    nothing_yet = replace(
        _state(), moves=tuple(replace(m, status=MoveStatus.PENDING, progress_bytes=0) for m in _state().moves)
    )
    assert progress_status(nothing_yet, STARTED + 60)["etaSeconds"] is None
    finished = replace(_state(), finished_at=STARTED + 90)
    fields = progress_status(finished, STARTED + 90)
    assert fields["etaSeconds"] is None  # a merge patch: removes the running execution's ETA
    assert fields["eta"] is None
    assert "ETA" not in str(fields["message"])
