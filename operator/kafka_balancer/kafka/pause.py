"""Halting an execution at a batch boundary: nothing more is submitted, our throttles follow the moves.

A pause (or a mode that no longer executes) stops submissions at the next batch, but the moves
already in Kafka go on copying. Their throttles stay while they copy, and every throttle of ours
that no move in flight needs is removed as soon as it is not needed: a paused pool keeps no rate
on an idle broker or topic. Resuming sets them again for the moves it submits.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_balancer.kafka.execution_state import ExecutionState, MoveStatus
from kafka_balancer.kafka.executor import Executor
from kafka_balancer.kafka.throttle import sync_throttles


def settle_in_flight(executor: Executor, state: ExecutionState, until: Callable[[], bool]) -> ExecutionState:
    """Follow the moves in flight to their end (or ``until()``), releasing throttles as they finish."""
    while True:
        state = executor.commit(executor.stop_stuck(executor.observe(state)))
        state = sync_throttles(executor.admin, state, executor.commit)
        if not state.by_status(MoveStatus.IN_FLIGHT) or until():
            return state
        executor.sleep(executor.options.poll_interval_s)
