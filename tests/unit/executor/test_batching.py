"""Batches: reorderings first and unbounded, then data moves bounded per broker (sender or receiver)
and cluster-wide, in the plan's order or smaller partitions first."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.kafka.batching import next_batch
from kafka_balancer.kafka.execution_state import Move, MoveOrder, MoveStatus


def _move(partition: int, source: tuple[int, ...], target: tuple[int, ...], size: int) -> Move:
    return Move("t", partition, source, target, size=size)


def test_moves_start_in_the_plans_order_unless_smallest_first_is_asked() -> None:
    moves = [_move(7, (1,), (2,), 300), _move(3, (3,), (4,), 100), _move(5, (5,), (6,), 200)]
    assert [m.partition for m in next_batch(moves, max_per_broker=5, max_total=2)] == [7, 3]
    smallest = next_batch(moves, max_per_broker=5, max_total=2, order=MoveOrder.SMALLEST_FIRST)
    assert [m.partition for m in smallest] == [3, 5]


def test_smallest_first_keeps_the_plans_order_between_equal_sizes() -> None:
    moves = [_move(9, (1,), (2,), 100), _move(2, (3,), (4,), 100), _move(4, (5,), (6,), 50)]
    batch = next_batch(moves, max_per_broker=5, max_total=3, order=MoveOrder.SMALLEST_FIRST)
    assert [m.partition for m in batch] == [4, 9, 2]


def test_a_broker_counts_moves_it_sends_and_receives() -> None:
    moves = [_move(0, (1,), (2,), 1), _move(1, (2,), (3,), 2), _move(2, (4,), (5,), 3)]
    batch = next_batch(moves, max_per_broker=1, max_total=10)
    assert [m.partition for m in batch] == [0, 2]  # partition 1 would make broker 2 send while it receives


def test_moves_in_flight_use_up_the_bounds() -> None:
    in_flight = replace(_move(0, (1,), (2,), 1), status=MoveStatus.IN_FLIGHT)
    pending = [_move(1, (1,), (3,), 1), _move(2, (4,), (5,), 1), _move(3, (6,), (7,), 1)]
    batch = next_batch([in_flight, *pending], max_per_broker=1, max_total=2)
    assert [m.partition for m in batch] == [2]


def test_only_pending_moves_are_batched() -> None:
    moves = [
        replace(_move(p, (1,), (2,), 1), status=s)
        for p, s in enumerate(MoveStatus)
        if s is not MoveStatus.IN_FLIGHT
    ]
    assert [m.status for m in next_batch(moves, max_per_broker=9, max_total=9)] == [MoveStatus.PENDING]


def test_reorderings_start_first_even_when_data_moves_use_up_the_bounds() -> None:
    in_flight = replace(_move(0, (1,), (2,), 900), status=MoveStatus.IN_FLIGHT)
    reordered = [_move(8, (1, 2), (2, 1), 700), _move(9, (3, 4), (4, 3), 800)]
    moves = [in_flight, _move(1, (3,), (4,), 1), *reordered]
    for order in MoveOrder:
        batch = next_batch(moves, max_per_broker=1, max_total=1, order=order)
        assert [m.partition for m in batch] == [8, 9]


def test_reorderings_in_flight_do_not_use_up_the_bounds() -> None:
    reordering = replace(_move(0, (1, 2), (2, 1), 1), status=MoveStatus.IN_FLIGHT)
    data = [_move(1, (1,), (3,), 1), _move(2, (4,), (5,), 1)]
    batch = next_batch([reordering, *data], max_per_broker=1, max_total=1)
    assert [m.partition for m in batch] == [1]
