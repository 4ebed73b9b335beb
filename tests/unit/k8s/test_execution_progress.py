"""An execution's progress as the operator writes it into the pool's status."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from prometheus_client import CollectorRegistry

from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.plan_run import execution_progress
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
        "dirBytesDone": 0,
        "dirBytesTotal": 0,
        "etaSeconds": 40,
        "eta": "40s",
        "movesSkipped": 0,
        "message": "1/3 moves, 60% of bytes, ETA 40s",
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


def _with_log_dirs() -> ExecutionState:
    # Beside the moves between brokers: one replica copied between its broker's dirs, 250 of 400 so far.
    dir_move = Move("u", 0, (5, 6), (5, 6), size=400, status=MoveStatus.IN_FLIGHT, log_dirs=("/d1", "any"))
    state = _state()
    return replace(state, moves=(*state.moves, replace(dir_move, dir_progress_bytes=250)))


def test_bytes_between_a_brokers_log_dirs_are_shown_apart_from_the_bytes_between_brokers() -> None:
    state = _with_log_dirs()
    assert (state.dir_bytes_done, state.dir_bytes_total) == (250, 400)
    fields = progress_status(state, STARTED + 85)
    assert (fields["bytesDone"], fields["bytesTotal"]) == (600, 1000)
    assert (fields["dirBytesDone"], fields["dirBytesTotal"]) == (250, 400)
    # The ETA is at the rate of both together: 850 of 1,400 in 85 s, 550 left.
    assert fields["etaSeconds"] == 55
    assert fields["message"] == "1/4 moves, 60% of bytes, 62% of log-dir bytes, ETA 55s"


def test_the_log_dir_bytes_have_a_gauge_of_their_own() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    metrics.execution_progress("ns/p", _with_log_dirs(), STARTED + 85)
    read = metrics.registry.get_sample_value
    assert read("kafka_balancer_execution_log_dir_bytes_moved", {"pool": "ns/p"}) == 250
    assert read("kafka_balancer_execution_bytes_moved", {"pool": "ns/p"}) == 600
    metrics.forget("ns/p")
    assert read("kafka_balancer_execution_log_dir_bytes_moved", {"pool": "ns/p"}) is None
