"""The makespan bound of a plan at a throttle, figured by hand: what each broker receives, what the
partitions' leaders must send whoever leads them, and what one choice of leaders sends."""

from __future__ import annotations

import pytest

from kafka_balancer.planner.makespan import Copying, makespan_bound, spread_sources


def _copy(
    size: int, current: tuple[int, ...], target: tuple[int, ...], isr: set[int] | None = None
) -> Copying:
    return Copying(size, current, target, frozenset(current if isr is None else isr))


def test_the_busiest_receiver_sets_the_bound_when_sources_can_share() -> None:
    copies = [_copy(100, (1, 2), (1, 3)), _copy(50, (1, 2), (4, 2)), _copy(30, (3,), (3, 4))]
    bound = makespan_bound(copies, rate=10)
    assert bound.received == {3: 100, 4: 80}
    # Sent: 100 by one broker alone; {1, 2} share 150 (75 each); {1, 2, 3} share 180 (60 each).
    assert bound.sent_lower == 100
    assert bound.largest_copy == 100
    assert bound.seconds == 10.0
    assert bound.sent_spread == {1: 100, 2: 50, 3: 30}
    assert bound.spread_seconds == 10.0


def test_partitions_sharing_their_candidate_leaders_bound_what_those_send() -> None:
    # Three partitions of 60 led by 1 or 2 copy one replica each to 3, 4 and 5: 180 bytes leave {1, 2}.
    copies = [_copy(60, (1, 2), (1, 2, b)) for b in (3, 4, 5)]
    bound = makespan_bound(copies, rate=3)
    assert max(bound.received.values()) == 60
    assert bound.sent_lower == 90
    assert bound.seconds == 30.0
    # Whole partitions: one of the two leaders sends two of them; the lower bound is below that.
    assert sorted(bound.sent_spread.values()) == [60, 120]
    assert bound.spread_seconds == 40.0


def test_a_leader_sends_one_copy_per_new_replica() -> None:
    bound = makespan_bound([_copy(40, (1, 2), (3, 4))], rate=4)
    assert bound.received == {3: 40, 4: 40}
    assert bound.sent_lower == 80
    assert bound.largest_copy == 40
    assert bound.seconds == 20.0


def test_only_in_sync_replicas_may_lead_the_copies() -> None:
    # Replica 2 lags: broker 1 must send both partitions; with both in sync they could share.
    lagging = [_copy(50, (1, 2), (1, 2, 3), isr={1}), _copy(50, (1, 2), (1, 2, 4), isr={1})]
    in_sync = [_copy(50, (1, 2), (1, 2, 3)), _copy(50, (1, 2), (1, 2, 4))]
    assert makespan_bound(lagging, rate=10).seconds == 10.0
    assert makespan_bound(in_sync, rate=10).seconds == 5.0
    assert spread_sources(in_sync) == [1, 2]


def test_reorderings_and_empty_partitions_cost_nothing() -> None:
    bound = makespan_bound([_copy(500, (1, 2), (2, 1)), _copy(0, (1,), (2,))], rate=1)
    assert bound.seconds == 0.0
    assert bound.largest_copy == 0


def test_a_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="rate"):
        makespan_bound([], rate=0)
