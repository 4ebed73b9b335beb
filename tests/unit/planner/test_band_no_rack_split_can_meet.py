"""A distribution band a rack cannot meet: replication factor 3 on 3 racks puts one replica of every
partition in each rack, so a rack of two brokers beside racks of one holds a third of the replicas on
half the brokers a fair share would give it. The planner gets as close as that allows (the rack's own
mean) and says why the band is missed, instead of stopping where no single move narrows the miss."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate
from tests.unit import checker
from tests.unit.clusters import broker, goals_yaml, partition, run_plan, snapshot

GB = 1.0e9


def lopsided_rack(sizes: list[float]) -> dict[str, Any]:
    """Racks a (brokers 0 and 1), b (2) and c (3); partition i on [0 or 1, 2, 3]: broker 0 holds
    the first 36 partitions' replica in rack a, broker 1 the other 24."""
    brokers = [broker(0, "a"), broker(1, "a"), broker(2, "b"), broker(3, "c")]
    parts = [partition("t", i, [0 if i < 36 else 1, 2, 3], disk=size) for i, size in enumerate(sizes)]
    return snapshot(brokers, parts)


def _goal(report: dict[str, Any], goal_type: str) -> dict[str, Any]:
    goals: list[dict[str, Any]] = [g for g in report["goals"] if g["type"] == goal_type]
    assert len(goals) == 1
    return goals[0]


def test_a_replica_band_no_rack_split_can_meet_is_missed_by_the_least_the_racks_allow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = lopsided_rack([GB] * 60)
    goals = goals_yaml({"type": "RackAware"}, {"type": "ReplicaDistribution", "rangePercent": 10})
    run = run_plan(tmp_path, capsys, snap, goals)
    assert run.code == 0 and run.plan is not None and run.report is not None
    after = checker.apply_plan(snap, run.plan)
    counts = {b: int(load["replicas"]) for b, load in checker.broker_loads(after).items()}
    # 180 replicas on 4 brokers: band 40..50 each. Rack a keeps its 60, which 30 + 30 split best.
    assert counts == {0: 30, 1: 30, 2: 60, 3: 60}
    assert checker.rack_violations(after) == []
    summary = run.report["summary"]
    assert summary["replicaMoves"] == 6 and summary["crossRackBytes"] == 0.0
    # Six replicas of 1 GB is the least any plan reaching 30 + 30 moves, and the bound says so.
    assert summary["bytesMoved"] == summary["bytesMovedLowerBound"] == 6 * GB
    outcome = _goal(run.report, "ReplicaDistribution")["after"]
    assert not outcome["satisfied"]
    assert outcome["worstDeviation"] == pytest.approx(100 * 15 / 45, abs=1e-3)  # 30 or 60 against 45
    assert "rack a holds 60 replicas, which RackAware keeps in it" in outcome["detail"]
    again = run_plan(tmp_path, capsys, after, goals)
    assert again.plan == {"version": 1, "partitions": []}


def test_a_disk_band_no_rack_split_can_meet_is_aimed_at_the_racks_own_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 1, 2 and 3 GB in turn: broker 0 starts with 72 GB, broker 1 with 48 of rack a's 120.
    snap = lopsided_rack([(1 + i % 3) * GB for i in range(60)])
    goals = goals_yaml({"type": "RackAware"}, {"type": "DiskDistribution", "rangePercent": 10})
    run = run_plan(tmp_path, capsys, snap, goals)
    assert run.code == 0 and run.plan is not None and run.report is not None
    after = checker.apply_plan(snap, run.plan)
    disk = {b: load["disk"] for b, load in checker.broker_loads(after).items()}
    # The cluster's band (90 GB ± 10 %) is out of rack a's reach; its own mean is 60 GB.
    assert 54 * GB <= disk[0] <= 66 * GB and 54 * GB <= disk[1] <= 66 * GB, disk
    assert disk[0] + disk[1] == 120 * GB and checker.rack_violations(after) == []
    assert not _goal(run.report, "DiskDistribution")["after"]["satisfied"]
    again = run_plan(tmp_path, capsys, after, goals)
    assert again.plan == {"version": 1, "partitions": []}


def test_without_rack_awareness_the_band_is_met_across_racks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = lopsided_rack([GB] * 60)
    run = run_plan(tmp_path, capsys, snap, goals_yaml({"type": "ReplicaDistribution", "rangePercent": 10}))
    assert run.code == 0 and run.plan is not None and run.report is not None
    counts = checker.broker_loads(checker.apply_plan(snap, run.plan))
    assert all(40 <= load["replicas"] <= 50 for load in counts.values()), counts
    assert _goal(run.report, "ReplicaDistribution")["after"]["satisfied"]


def test_a_topic_no_rack_split_can_spread_evenly_is_split_evenly_within_its_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Rack a's replica of every partition of x on broker 0, of y on broker 1: 30 + 30 replicas.
    brokers = [broker(0, "a"), broker(1, "a"), broker(2, "b"), broker(3, "c")]
    parts = [partition("x", i, [0, 2, 3]) for i in range(30)] + [
        partition("y", i, [1, 2, 3]) for i in range(30)
    ]
    snap = snapshot(brokers, parts)
    goals = goals_yaml(
        {"type": "RackAware"},
        {"type": "ReplicaDistribution", "rangePercent": 10},
        {"type": "TopicReplicaDistribution", "rangePercent": 10},
    )
    run = run_plan(tmp_path, capsys, snap, goals)
    assert run.code == 0 and run.plan is not None and run.report is not None
    after = checker.apply_plan(snap, run.plan)
    cells = {(p["topic"], b): 0 for p in after["partitions"] for b in (0, 1)}
    for p in after["partitions"]:
        for b in set(p["replicas"]) & {0, 1}:
            cells[(p["topic"], b)] += 1
    # Each topic's 90 replicas: band 20..25 a broker, out of reach of rack a's 30 on two brokers.
    assert cells == {("x", 0): 15, ("x", 1): 15, ("y", 0): 15, ("y", 1): 15}
    assert checker.rack_violations(after) == []
    outcome = _goal(run.report, "TopicReplicaDistribution")["after"]
    assert outcome["worstDeviation"] == pytest.approx(100 * 7.5 / 22.5, abs=1e-3)  # 15 or 30 against 22.5
    assert "rack a holds 30 of its replicas, which RackAware keeps in it" in outcome["detail"]
    again = run_plan(tmp_path, capsys, after, goals)
    assert again.plan == {"version": 1, "partitions": []}


@pytest.mark.parametrize("seed", [7, 1, 2])
@pytest.mark.parametrize("grown_by", [3, 4])
def test_a_plan_that_cannot_meet_every_band_copies_at_most_a_tenth_over_the_bound(
    seed: int, grown_by: int
) -> None:
    # The planner benchmark's small cluster (12 brokers, 3 racks, replication factor 3) with new
    # empty brokers in one rack: that rack's share of replicas, disk and bytes in no plan can
    # change, so most distribution goals miss their bands. Moves the goals ended up not needing
    # still go home: within 1.10 × the bound (without that, 1.106 and 1.117 at seed 2), and the
    # plan replans to nothing.
    spec = SyntheticSpec.filled(
        12,
        900,
        racks=3,
        hot_brokers=1,
        empty_brokers=1,
        seed=seed,
    )
    cluster = generate(spec)
    first, top = cluster.brokers[0], max(b.id for b in cluster.brokers)
    grown = replace(
        cluster, brokers=cluster.brokers + tuple(replace(first, id=top + 1 + i) for i in range(grown_by))
    )
    result = plan(grown, default_goal_set())
    assert not all(g.after.satisfied for g in result.goals)
    figures = result.figures
    assert figures.bytes_moved <= 1.10 * figures.bytes_moved_lower_bound
    again = plan(apply_reassignments(grown, result.reassignments), default_goal_set())
    assert len(again.reassignments) == 0


def test_a_rack_exactly_at_its_brokers_band_floor_is_not_short_and_the_plan_replans_to_nothing() -> None:
    # 27 brokers on 4 racks at replication factor 4: each rack holds a quarter of the bytes. Every
    # third broker has twice the capacity, so rack a has 10 of the 36 capacity units and its
    # brokers' disk floors (90 % of their share) add up to its quarter exactly. The planned
    # cluster's float sums put that floor a thousandth of a byte above the quarter, where the
    # first plan's had it below: the replan aimed rack a at its own mean and moved 7 replicas.
    spec = SyntheticSpec.filled(
        27, 200, fill=0.1, racks=4, replication_factor=4, topics=3, hot_brokers=1, seed=833742
    )
    cluster = generate(spec)
    doubled = tuple(
        replace(b, capacity=(2 * b.capacity[0], 2 * b.capacity[1], 2 * b.capacity[2], 2 * b.capacity[3]))
        if b.id % 3 == 0
        else b
        for b in cluster.brokers
    )
    cluster = replace(cluster, brokers=doubled)
    result = plan(cluster, default_goal_set())
    assert len(result.reassignments) > 0
    again = plan(apply_reassignments(cluster, result.reassignments), default_goal_set())
    assert list(again.reassignments) == []
