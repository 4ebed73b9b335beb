"""A lower bound on the time any schedule needs to carry out a plan at a replication throttle.

Kafka throttles each broker's replication twice, at the same rate T: what it receives as a
follower (``follower.replication.throttled.rate``) and what it sends as a leader
(``leader.replication.throttled.rate``). A moving partition p of size s_p gains the replicas
A_p = target_p − current_p, and each of them copies s_p bytes from the partition's leader. So,
whatever the order, the batches or the bounds on moves in flight:

1. Inbound. Broker b receives in_b = Σ over p with b ∈ A_p of s_p, at most T per second:
   the plan takes at least max_b in_b / T.
2. Outbound. p's leader sends w_p = |A_p| · s_p. The leader is a choice: a leadership change
   among in-sync replicas copies nothing, so before copying p may be led by any replica of its
   current ISR S_p. Whatever the choice, the w_p of every p with S_p ⊆ B is sent by the brokers
   of B, at most |B| · T per second, and each w_p by one broker alone. The bound takes
   ``sent_lower`` = max(max_p w_p, max over B of Σ_{S_p ⊆ B} w_p / |B|), B ranging over every S_p
   and the union of them all. It is valid for every choice of leaders, and may be below the best
   one (the best is a makespan on restricted machines, NP-hard in general).
3. The bound is max(max_b in_b, sent_lower) / T. The largest single copy, max_p s_p, is in both
   terms (its destination receives it, its source sends it) and is reported on its own: when it
   sets the bound, no schedule can do better than that one copy.

``sent_spread`` is what one choice of leaders achieves: the partitions by w_p, largest first, each
led by the replica of its candidates that sends least so far (longest processing time first). It is
at least ``sent_lower``; the gap says how far the lower bound may be below the best choice.
Followers' fetches at the throttle, not the producers' traffic, are what the bound counts: writes to
an in-sync follower are not throttled and do not count against T.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Copying:
    """One moving partition: its size, its replicas now and in the plan, and the replicas that may
    lead it while it copies (its current in-sync replicas, or fewer where the leader is fixed)."""

    size: int
    current: tuple[int, ...]
    target: tuple[int, ...]
    sources: frozenset[int]

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def sent(self) -> int:
        """Bytes its leader sends: one copy per new replica."""
        return self.size * len(self.adding)


@dataclass(frozen=True)
class MakespanBound:
    """The bound's terms in bytes (per broker where they are per broker) and the throttle rate."""

    rate: float
    received: Mapping[int, int]
    sent_lower: int
    sent_spread: Mapping[int, int]
    largest_copy: int

    @property
    def seconds(self) -> float:
        """No schedule of the plan finishes sooner than this at the throttle."""
        return max(max(self.received.values(), default=0), self.sent_lower) / self.rate

    @property
    def spread_seconds(self) -> float:
        """The bound with the sources as ``spread_sources`` chooses them (achievable by leaders)."""
        most_received = max(self.received.values(), default=0)
        return max(most_received, max(self.sent_spread.values(), default=0)) / self.rate


def makespan_bound(copies: Sequence[Copying], rate: float) -> MakespanBound:
    """The bound of the module's docstring for ``copies`` at ``rate`` bytes per second per direction."""
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")
    moving = [c for c in copies if c.adding and c.size > 0]
    received: Counter[int] = Counter()
    for c in moving:
        received.update(dict.fromkeys(c.adding, c.size))
    return MakespanBound(
        rate=rate,
        received=dict(received),
        sent_lower=_sent_lower(moving),
        sent_spread=_sent(moving, spread_sources(moving)),
        largest_copy=max((c.size for c in moving), default=0),
    )


def spread_sources(copies: Sequence[Copying]) -> list[int]:
    """A leader for each of ``copies`` (aligned), from its ``sources``: largest ``sent`` first, each
    to the candidate that sends least so far, ties to the lowest broker id."""
    load: Counter[int] = Counter()
    chosen = [0] * len(copies)
    for i in sorted(range(len(copies)), key=lambda i: -copies[i].sent):
        c = copies[i]
        if not c.sources:
            raise ValueError(f"a moving partition with no candidate source: {c}")
        chosen[i] = min(sorted(c.sources), key=lambda b: load[b])
        load[chosen[i]] += c.sent
    return chosen


def _sent(copies: Sequence[Copying], leaders: Sequence[int]) -> dict[int, int]:
    sent: Counter[int] = Counter()
    for c, leader in zip(copies, leaders, strict=True):
        sent[leader] += c.sent
    return dict(sent)


def _sent_lower(copies: Sequence[Copying]) -> int:
    candidates = {c.sources for c in copies}
    candidates.add(frozenset().union(*candidates))
    best = max((c.sent for c in copies), default=0)
    for group in candidates:
        if group:
            inside = sum(c.sent for c in copies if c.sources <= group)
            best = max(best, -(-inside // len(group)))
    return best
