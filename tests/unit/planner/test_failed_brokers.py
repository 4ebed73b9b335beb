"""``state: failed`` on a snapshot broker: a broker self-healing found dead, planned like a drain.

Every replica of a failed broker is re-homed, to a live broker of its rack first, RackAware kept; a
failed broker leads nothing after the plan (it is in no target replica list) and the plan is the one
a drain of that broker gets. The field is optional and backward compatible; a bad value exits 2.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.formats.snapshot import cluster_to_snapshot, parse_snapshot
from kafka_balancer.model.cluster import BrokerState
from tests.unit import checker
from tests.unit.clusters import assert_refused, broker, goals_yaml, partition, run_plan, snapshot

GOALS = goals_yaml(
    {"type": "RackAware"},
    {"type": "DiskCapacity", "thresholdPercent": 90},
    {"type": "ReplicaDistribution", "rangePercent": 10},
    {"type": "LeaderDistribution", "rangePercent": 10},
    {"type": "DiskDistribution", "rangePercent": 10},
)


def nine_brokers(state_of_0: str = "active") -> dict[str, Any]:
    """Three brokers in each of racks a, b, c; 36 partitions of RF 3, one replica per rack."""
    brokers = [broker(i, "abc"[i % 3]) for i in range(9)]
    brokers[0]["state"] = state_of_0
    parts = [partition("orders", i, [i % 9, (i + 1) % 9, (i + 2) % 9]) for i in range(36)]
    return snapshot(brokers, parts)


def test_a_failed_brokers_replicas_move_to_live_brokers_of_its_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = nine_brokers("failed")
    on_0 = {(p["topic"], p["partition"]) for p in snap["partitions"] if 0 in p["replicas"]}
    assert len(on_0) == 12
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert run.code == 0 and run.plan is not None
    after = checker.apply_plan(snap, run.plan)
    assert all(0 not in p["replicas"] for p in after["partitions"])
    rack_of = {b["id"]: b["rack"] for b in snap["brokers"]}
    moved = {(p["topic"], p["partition"]): p["replicas"] for p in run.plan["partitions"]}
    assert on_0 <= set(moved)
    for key in on_0:
        before = next(p["replicas"] for p in snap["partitions"] if (p["topic"], p["partition"]) == key)
        arrived = set(moved[key]) - set(before)
        # Same rack first: broker 0's replica lands on broker 3 or 6, its rack-mates.
        assert {rack_of[b] for b in arrived} == {"a"}
        assert moved[key][0] != 0
    assert checker.rack_violations(after) == []
    # The failed broker's 12 replicas are copied (from the other replicas), nothing more moves.
    assert checker.bytes_moved(snap, run.plan) == 12 * 1.0e9


def test_failed_is_planned_like_draining(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    failed = run_plan(tmp_path, capsys, nine_brokers("failed"), GOALS)
    draining = run_plan(tmp_path, capsys, nine_brokers("draining"), GOALS)
    assert failed.code == draining.code == 0
    assert failed.plan == draining.plan


def test_a_failed_leader_is_replaced_and_leads_nothing_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Kafka moved the leadership to broker 1 when 0 died; 0 is still replicas[0] (preferred).
    brokers = [broker(0, "a", state="failed"), broker(1, "b"), broker(2, "a"), broker(3, "b")]
    snap = snapshot(brokers, [partition("t", 0, [0, 1], leader=1)])
    run = run_plan(tmp_path, capsys, snap, goals_yaml({"type": "RackAware"}))
    assert run.code == 0 and run.plan is not None
    [moved] = run.plan["partitions"]
    assert 0 not in moved["replicas"] and set(moved["replicas"]) == {1, 2}


def test_failed_round_trips_and_older_snapshots_stay_active() -> None:
    cluster = parse_snapshot(nine_brokers("failed"))
    assert cluster.broker(0).state is BrokerState.FAILED and not cluster.broker(0).active
    assert cluster_to_snapshot(cluster)["brokers"][0]["state"] == "failed"
    older = copy.deepcopy(nine_brokers())
    for b in older["brokers"]:
        del b["state"]
    assert all(b.state is BrokerState.ACTIVE for b in parse_snapshot(older).brokers)


@pytest.mark.parametrize("value", ["dead", "Failed", 1, None])
def test_a_bad_state_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    snap = nine_brokers()
    snap["brokers"][4]["state"] = value
    run = run_plan(tmp_path, capsys, snap, GOALS)
    assert_refused(run, "brokers[4].state")
