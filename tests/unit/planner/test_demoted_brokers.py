"""``spec.demote`` as the planner sees it: ``demoted: true`` on a snapshot broker.

A demoted broker ends leading nothing, by reordering replica lists (0 bytes), LeaderDistribution
balances the other brokers, and no plan hands a demoted broker a leadership while it is listed.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.formats.snapshot import cluster_to_snapshot, parse_snapshot
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate
from tests.unit import checker
from tests.unit.clusters import assert_refused, broker, goals_yaml, partition, run_plan, snapshot

GOALS = goals_yaml(
    {"type": "RackAware"},
    {"type": "DiskCapacity", "thresholdPercent": 90},
    {"type": "ReplicaDistribution", "rangePercent": 10},
    {"type": "LeaderDistribution", "rangePercent": 10},
    {"type": "DiskDistribution", "rangePercent": 10},
    {"type": "NetworkOutDistribution", "rangePercent": 10},
    {"type": "CpuDistribution", "rangePercent": 10},
)


def six_brokers(demoted: tuple[int, ...] = ()) -> dict[str, Any]:
    """Two brokers in each of three racks; 30 partitions of RF 3, one replica per rack, leaders even."""
    brokers = [broker(i, "abc"[i % 3]) for i in range(6)]
    for b in demoted:
        brokers[b]["demoted"] = True
    parts = [partition("orders", i, [i % 6, (i + 1) % 6, (i + 2) % 6]) for i in range(30)]
    return snapshot(brokers, parts)


def leaders(snap: dict[str, Any]) -> dict[int, int]:
    return {b: int(row["leaders"]) for b, row in checker.broker_loads(snap).items()}


def test_a_demoted_broker_ends_leading_nothing_with_no_byte_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = six_brokers(demoted=(0,))
    assert leaders(snap)[0] == 5
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert run.code == 0 and run.plan is not None
    after = checker.apply_plan(snap, run.plan)
    assert leaders(after)[0] == 0
    assert checker.bytes_moved(snap, run.plan) == 0.0
    before = {(p["topic"], p["partition"]): set(p["replicas"]) for p in snap["partitions"]}
    for p in run.plan["partitions"]:
        assert set(p["replicas"]) == before[(p["topic"], p["partition"])]  # a reordering only
        assert p["replicas"][0] != 0
    # The 30 leaderships are spread over the five other brokers: 6 each, within 10 %.
    assert checker.count_band_violations(after, "leaders", 10) == []
    assert sorted(n for b, n in leaders(after).items() if b != 0) == [6, 6, 6, 6, 6]
    assert "bytes moved" in run.stderr and "0 bytes moved" in run.stderr


def test_a_demoted_broker_is_not_made_leader_again_by_later_goals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Broker 0 leads nothing and holds the heaviest partitions' followers: NetworkOut and Cpu
    # distribution would love to hand it leaderships, LeaderDistribution finds it short of leaders.
    snap = six_brokers(demoted=(0,))
    for p in snap["partitions"]:
        if 0 in p["replicas"]:
            p["replicas"] = [b for b in p["replicas"] if b != 0] + [0]
            p["leader"] = p["replicas"][0]
            p["load"]["networkOut"] *= 20
    assert leaders(snap)[0] == 0
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert run.code == 0 and run.plan is not None
    after = checker.apply_plan(snap, run.plan)
    assert leaders(after)[0] == 0
    assert all(p["replicas"][0] != 0 for p in run.plan["partitions"])


def test_absent_demoted_is_false(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    absent = six_brokers()
    explicit = copy.deepcopy(absent)
    for b in explicit["brokers"]:
        b["demoted"] = False
    plain = run_plan(tmp_path, capsys, absent, GOALS)
    said = run_plan(tmp_path, capsys, explicit, GOALS)
    assert plain.code == said.code == 0
    assert plain.plan == said.plan == {"version": 1, "partitions": []}
    cluster = parse_snapshot(absent)
    assert not any(b.demoted for b in cluster.brokers)
    # Written only when true, so snapshots of clusters without demotion stay as they were.
    assert all("demoted" not in b for b in cluster_to_snapshot(cluster)["brokers"])
    demoted = cluster_to_snapshot(parse_snapshot(six_brokers(demoted=(2,))))["brokers"]
    assert [b.get("demoted", False) for b in demoted] == [False, False, True, False, False, False]


def test_unlisting_lets_leader_distribution_give_leaders_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demoted = run_plan(tmp_path, capsys, six_brokers(demoted=(0,)), GOALS)
    assert demoted.plan is not None
    after = checker.apply_plan(six_brokers(), demoted.plan)  # the demotion executed, then un-listed
    assert leaders(after)[0] == 0
    run = run_plan(tmp_path, capsys, after, GOALS)
    assert run.code == 0 and run.plan is not None
    back = checker.apply_plan(after, run.plan)
    assert leaders(back)[0] >= 4  # 30 leaders over 6 brokers: 5 ± 10 %, floor 4
    assert checker.count_band_violations(back, "leaders", 10) == []


def test_a_demoted_preferred_leader_is_moved_off_replicas_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Broker 0 is the preferred leader but broker 1 leads (0 just restarted): Kafka's automatic
    # leader rebalance would hand the leadership back to 0 unless the plan reorders the list.
    brokers = [broker(0, "a", demoted=True), broker(1, "b"), broker(2, "c")]
    snap = snapshot(brokers, [partition("t", 0, [0, 1, 2], leader=1)])
    run = run_plan(tmp_path, capsys, snap, goals_yaml({"type": "RackAware"}))
    assert run.code == 0 and run.plan is not None
    assert run.plan["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 0, 2]}]


def test_a_partition_on_demoted_brokers_only_keeps_its_leader_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    brokers = [broker(0, "a", demoted=True), broker(1, "b", demoted=True), broker(2, "c")]
    parts = [partition("t", 0, [0, 1]), partition("t", 1, [0, 2])]
    snap = snapshot(brokers, parts)
    run = run_plan(tmp_path, capsys, snap, goals_yaml({"type": "RackAware"}, {"type": "LeaderDistribution"}))
    assert run.code == 0 and run.plan is not None
    # t-1 moves to broker 2 (a reordering); t-0 has no other replica: no data is copied to fix it.
    assert run.plan["partitions"] == [{"topic": "t", "partition": 1, "replicas": [2, 0]}]
    assert checker.bytes_moved(snap, run.plan) == 0.0
    assert "1 partition(s) keep a demoted leader (every replica demoted): t-0" in run.stderr


@pytest.mark.parametrize("value", ["yes", 1, None, [True]])
def test_a_bad_demoted_value_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    snap = six_brokers()
    snap["brokers"][3]["demoted"] = value
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert_refused(run, "brokers[3].demoted")


@pytest.mark.parametrize(("brokers", "partitions", "seed"), [(24, 2000, 5), (48, 4000, 2)])
def test_a_plan_with_demoted_brokers_replans_to_nothing(brokers: int, partitions: int, seed: int) -> None:
    # A demoted broker keeps the follower load of its replicas, which the other brokers' network
    # out and cpu bands leave out of their mean; the plan moves replicas off demoted brokers, so
    # those bands moved under it: replanning the planned cluster changed 1 and 2 leaderships.
    spec = SyntheticSpec.filled(
        brokers,
        partitions,
        racks=6,
        hot_brokers=2,
        empty_brokers=1,
        seed=seed,
    )
    cluster = generate(spec)
    cluster = replace(cluster, brokers=tuple(replace(b, demoted=b.id in (1, 5)) for b in cluster.brokers))
    result = plan(cluster, default_goal_set())
    assert [g.label for g in result.goals if not g.after.satisfied] == []
    planned = apply_reassignments(cluster, result.reassignments)
    assert all(p.leader not in (1, 5) for p in planned.partitions)
    again = plan(planned, default_goal_set())
    assert len(again.reassignments) == 0
