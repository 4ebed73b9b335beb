"""Which pending moves start next: leadership-only reorderings first (they copy nothing), then data
moves bounded per broker and cluster-wide, in the plan's order or smaller partitions first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kafka_balancer.kafka.execution_state import Move, MoveOrder, MoveStatus


def next_batch(
    moves: Sequence[Move], max_per_broker: int, max_total: int, order: MoveOrder = MoveOrder.PLAN
) -> list[Move]:
    """Pending moves that fit beside those in flight; a broker counts every move it sends or receives.

    A reordering of the same replicas copies nothing (Kafka completes it at once), so every pending
    one starts in the first batch, ahead of the data moves and outside both bounds: a leader the
    plan fixes does not wait for hours of copies."""
    in_flight = [m for m in moves if m.status is MoveStatus.IN_FLIGHT and m.brokers]
    load: Counter[int] = Counter(b for m in in_flight for b in m.brokers)
    total = len(in_flight)
    pending = [m for m in moves if m.status is MoveStatus.PENDING]
    batch = [m for m in pending if not m.brokers]
    copying = [m for m in pending if m.brokers]
    if order is MoveOrder.SMALLEST_FIRST:
        copying.sort(key=lambda m: m.size)  # stable: equal sizes keep the plan's order
    for move in copying:
        if total >= max_total:
            break
        if any(load[b] >= max_per_broker for b in move.brokers):
            continue
        batch.append(move)
        total += 1
        load.update(move.brokers)
    return batch
