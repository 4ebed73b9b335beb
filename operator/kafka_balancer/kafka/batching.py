"""Which pending moves start next: bounded per broker and cluster-wide, smaller partitions first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kafka_balancer.kafka.execution_state import Move, MoveStatus


def next_batch(moves: Sequence[Move], max_per_broker: int, max_total: int) -> list[Move]:
    """Pending moves that fit beside those in flight; a broker counts every move it sends or receives."""
    in_flight = [m for m in moves if m.status is MoveStatus.IN_FLIGHT]
    load: Counter[int] = Counter(b for m in in_flight for b in m.brokers)
    total = len(in_flight)
    batch: list[Move] = []
    pending = sorted(
        (m for m in moves if m.status is MoveStatus.PENDING), key=lambda m: (m.size, m.topic, m.partition)
    )
    for move in pending:
        if total >= max_total:
            break
        if any(load[b] >= max_per_broker for b in move.brokers):
            continue
        batch.append(move)
        total += 1
        load.update(move.brokers)
    return batch
