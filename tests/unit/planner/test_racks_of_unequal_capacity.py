"""Racks of unequal capacity: brokers of twice the capacity fill one rack in six, so the other
racks' brokers shed a share of their load to it across racks, and more brokers share each rack
than a fill asks donors of or an exchange asks partners of. Every band is met (with a rack of
twelve brokers all over their disk band, a fill asked its own rack's brokers only, and an
exchange its own rack's: the plan met three of the distribution bands of seven)."""

from __future__ import annotations

import pytest

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate, scaled


@pytest.mark.parametrize(
    ("brokers", "partitions", "hot", "empty"), [(36, 3000, 2, 0), (60, 5000, 2, 0), (60, 6000, 3, 2)]
)
def test_a_rack_of_larger_brokers_takes_its_share_and_every_band_is_met(
    brokers: int, partitions: int, hot: int, empty: int
) -> None:
    # The last cluster fills rack b's brokers to their replica-count top with the largest
    # replicas first; the rest of their disk comes by exchanges with other racks, which must
    # offer replicas of partitions the other rack may take (the largest all had one there
    # already, and the disk band was missed by 13 %).
    spec = SyntheticSpec.filled(
        brokers,
        partitions,
        racks=6,
        replication_factor=3,
        hot_brokers=hot,
        empty_brokers=empty,
        seed=7,
    )
    cluster = generate(spec)
    # Rack b (brokers 1, 7, 13, ...) has twice the capacity of every other.
    cluster = scaled(cluster, 2.0, lambda b: b.id % 6 == 1)
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    assert result.figures.cross_rack_bytes > 0
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0


def test_a_rack_that_cannot_hold_its_share_is_filled_as_far_as_rack_awareness_lets_it() -> None:
    # 4 racks, replication factor 3: RackAware puts at most one replica of a partition in a
    # rack, so rack b holds at most a third of the data, against the 2/5 its doubled capacity
    # asks. Its brokers are aimed at that third (each within half the range of it), the other
    # racks' at the rest: the disk band is missed by 1/6 of rack b's mean and half the range
    # around it, not more.
    spec = SyntheticSpec.filled(
        48,
        4000,
        racks=4,
        replication_factor=3,
        hot_brokers=2,
        seed=7,
    )
    cluster = generate(spec)
    cluster = scaled(cluster, 2.0, lambda b: b.id % 4 == 1)
    result = plan(cluster, default_goal_set())
    disk = next(g for g in result.goals if g.label == "DiskDistribution")
    assert not disk.after.satisfied
    # (2/5 - 1/3) / (2/5) = 16.7 %, and 5 % around the rack's mean: at most 1 - 5/6 x 0.95 =
    # 20.8 % (25 % within the whole range of the rack's mean, 42.5 % when the band was aimed at
    # as if rack b could hold its share).
    assert disk.after.worst_deviation <= 100 * (1 - 5 / 6 * 0.95) + 1e-6
    assert "under RackAware rack b can hold 0 .. " in disk.after.detail
    in_b = [i for i, b in enumerate(cluster.brokers) if b.rack == "b"]
    total = sum(load.loads[0] for load in result.brokers_after)
    share = sum(result.brokers_after[i].loads[0] for i in in_b) / total
    assert 0.30 <= share <= 1 / 3 + 1e-9
    others = ["ReplicaDistribution", "NetworkOutDistribution", "CpuDistribution", "LeaderDistribution"]
    assert all(g.after.satisfied for g in result.goals if g.label in others)
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0


@pytest.mark.parametrize(("seed", "before"), [(1, 1141), (2, 522)])
def test_brokers_of_two_sizes_in_every_rack_balance_within_their_racks(seed: int, before: int) -> None:
    # Half the brokers of every rack have twice the capacity (and the same replica-count band):
    # a rack's large brokers must hold its largest replicas. A broker over its disk band whose
    # rack-mates with disk to spare are at their replica-count top used to shed across racks to
    # a broker with room for both; each rack then took as much back from other racks. While the
    # rack has room it exchanges within it instead (``before``: the GB that crossed racks then,
    # against a bound of 8.1 and 4.9 GB; now 142 and 161).
    spec = SyntheticSpec.filled(
        24,
        2000,
        racks=6,
        replication_factor=3,
        hot_brokers=2,
        empty_brokers=1,
        seed=seed,
    )
    cluster = generate(spec)
    cluster = scaled(cluster, 2.0, lambda b: b.id % 4 < 2)
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    f = result.figures
    assert f.cross_rack_bytes <= 0.35 * before * 1e9
    assert f.bytes_moved <= 1.10 * f.bytes_moved_lower_bound
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0


def test_half_the_racks_at_twice_the_capacity_meet_every_band() -> None:
    # The planner benchmark's mid cluster (200 brokers, 6 racks) with racks b, d and f at twice
    # the capacity: the other racks send two thirds of their share across. A small broker at its
    # replica-count floor and over its bytes-in band can only exchange, and only with a broker
    # of a larger rack; its exchange partners were its own rack's brokers with room, none of
    # which could take what it gave, and the band was missed by 0.1 %.
    spec = SyntheticSpec.filled(200, 40_000, racks=6, hot_brokers=10, empty_brokers=8, seed=7)
    cluster = generate(spec)
    cluster = scaled(cluster, 2.0, lambda b: b.id % 2 == 1)
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0
