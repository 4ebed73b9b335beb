"""Bytes across racks are what users pay for: a replica crosses racks only where a rack's own
brokers cannot hold or cannot fill their share, and then the smallest that does the job crosses.
The report says how few bytes any plan meeting the same bands must copy between racks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.unit import checker
from tests.unit.clusters import broker, goals_yaml, partition, run_plan, snapshot

GB = 1.0e9
SPREAD = goals_yaml({"type": "RackAware"}, {"type": "TopicReplicaDistribution", "rangePercent": 50})


@dataclass(frozen=True)
class Planned:
    """What a test reads of a plan that met RackAware: the report's summary, the plan's
    partitions and each broker's replica count after."""

    summary: dict[str, Any]
    partitions: list[dict[str, Any]]
    counts: dict[int, int]


def planned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snap: dict[str, Any], goals: str = SPREAD
) -> Planned:
    run = run_plan(tmp_path, capsys, snap, goals)
    assert run.code == 0 and run.plan is not None and run.report is not None
    after = checker.apply_plan(snap, run.plan)
    assert checker.rack_violations(after) == []
    counts = {b: int(load["replicas"]) for b, load in checker.broker_loads(after).items()}
    return Planned(run.report["summary"], run.plan["partitions"], counts)


def empty_rack_c() -> dict[str, Any]:
    """Racks a (brokers 0-2), b (3-5) and c (6-8, empty); 18 partitions of topic t, each on one
    broker of rack a and one of rack b. Partitions 12-17 are the smallest (1..6 GB), all on
    broker 5; the others weigh 7..18 GB."""
    brokers = [broker(b, "abc"[b // 3]) for b in range(9)]
    sizes = [7 + i if i < 12 else i - 11 for i in range(18)]
    parts = [partition("t", i, [i % 3, 3 + i // 6], disk=sizes[i] * GB) for i in range(18)]
    return snapshot(brokers, parts)


def test_a_rack_short_of_a_topic_is_filled_with_its_smallest_partitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 36 replicas on 9 brokers: band 2..6 each; rack c's three brokers need 6 replicas between
    # them, from racks a and b (6 each, at the top of the band, with 2 to spare each).
    plan = planned(tmp_path, capsys, empty_rack_c())
    assert all(2 <= plan.counts[b] <= 6 for b in range(9)), plan.counts
    summary = plan.summary
    # Six replicas cross, the six smallest partitions' (1 + 2 + ... + 6 GB); broker 5's surplus
    # is the one to take them from, though brokers 0-4 could spare as many.
    assert summary["replicaMoves"] == 6
    assert summary["crossRackBytes"] == pytest.approx(21 * GB)
    assert summary["crossRackBytesLowerBound"] == pytest.approx(21 * GB)
    # Broker by broker in rack c: 2 replicas each, at the least the two smallest (1 + 2 GB); the
    # brokers of racks a and b need lose nothing.
    assert summary["rackLocalBytesLowerBound"] == pytest.approx(3 * 3 * GB)
    moved = {p["partition"] for p in plan.partitions}
    assert moved == set(range(12, 18))


def test_a_rack_over_a_topic_sends_out_its_smallest_replicas_not_the_hot_brokers_cheapest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replication factor 1, racks a (brokers 0-1) and b (2-6); 23 partitions of t. Broker 0 holds
    # partitions 0-11 of 1..12 GB, broker 1 one of 20 GB, each broker of b two of 20 GB: rack a
    # holds three more than its brokers' bands allow, and its three smallest must cross.
    brokers = [broker(b, "aabbbbb"[b]) for b in range(7)]
    on = [0] * 12 + [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    parts = [partition("t", i, [on[i]], disk=(i + 1 if i < 12 else 20) * GB) for i in range(23)]
    plan = planned(tmp_path, capsys, snapshot(brokers, parts))
    summary = plan.summary
    assert summary["crossRackBytesLowerBound"] == pytest.approx((1 + 2 + 3) * GB)
    # Broker 0 sheds its cheapest first, each into broker 1 or across, whichever takes it: that
    # once kept partitions 2 and 3 in rack a and sent 4 (5 GB) across, 8 GB where 6 do.
    assert summary["crossRackBytes"] == pytest.approx((1 + 2 + 3) * GB)
    placed = {p["partition"]: p["replicas"][0] for p in plan.partitions}
    assert {p for p, b in placed.items() if b >= 2} == {0, 1, 2}
    assert plan.counts[0] + plan.counts[1] == 10


def test_a_broker_at_its_replica_floor_takes_a_rack_mates_replica_to_shed_across_racks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replication factor 1, racks a (brokers 0-2) and b (3-5), replica counts 5..7 a broker. Broker
    # 2 holds five of topic t (2 GB each) and nothing else, at its floor; brokers 0 and 1 hold
    # three of t (10 GB) and four of u (1 GB), at their tops; rack b one of t and 16 of u (3 GB).
    # Rack a holds two more of t than its bands allow, and broker 2 may not give one away alone.
    brokers = [broker(b, "aaabbb"[b]) for b in range(6)]
    t_on = [2] * 5 + [0] * 3 + [1] * 3 + [3]
    u_on = [0] * 4 + [1] * 4 + [3] * 5 + [4] * 6 + [5] * 5
    parts = [partition("t", i, [b], disk=(2 if b == 2 else 10) * GB) for i, b in enumerate(t_on)]
    parts += [partition("u", i, [b], disk=(1 if b < 3 else 3) * GB) for i, b in enumerate(u_on)]
    goals = goals_yaml(
        {"type": "RackAware"},
        {"type": "ReplicaDistribution", "rangePercent": 20},
        {"type": "TopicReplicaDistribution", "rangePercent": 50},
    )
    plan = planned(tmp_path, capsys, snapshot(brokers, parts), goals)
    assert all(5 <= plan.counts[b] <= 7 for b in range(6)), plan.counts
    summary = plan.summary
    assert summary["crossRackBytesLowerBound"] == pytest.approx(2 * 2 * GB)
    # Broker 2 takes a replica of u from a rack mate for each of t it sends across: 4 GB across.
    # Exchanged with rack b instead, each 3 GB replica of u came across too: 7 GB.
    assert summary["crossRackBytes"] == pytest.approx(2 * 2 * GB)
    came = {(p["topic"], p["partition"]) for p in plan.partitions if p["replicas"] == [2]}
    assert all(topic == "u" and u_on[i] in (0, 1) for topic, i in came), came


def test_a_rack_whose_spare_replica_its_own_broker_needs_gives_none_across(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Replication factor 1, 44 partitions of t on 11 brokers: band 2..6 each. Rack a: broker 0
    # holds three (3, 11 and 12 GB), broker 1 one (13 GB), so rack a's spare replica is broker
    # 1's due. Rack b (brokers 2-7) holds six each (10 GB), at their tops; rack c: broker 8
    # none, brokers 9 and 10 two each (10 GB). Rack c lacks two, which only rack b can spare.
    brokers = [broker(b, "aabbbbbbccc"[b]) for b in range(11)]
    on = [0, 0, 0, 1] + [b for b in range(2, 8) for _ in range(6)] + [9, 9, 10, 10]
    sizes = [3, 11, 12, 13] + [10] * 40
    parts = [partition("t", i, [b], disk=sizes[i] * GB) for i, b in enumerate(on)]
    plan = planned(tmp_path, capsys, snapshot(brokers, parts))
    assert all(2 <= plan.counts[b] <= 6 for b in range(11)), plan.counts
    summary = plan.summary
    # Two of rack b's into broker 8, and broker 0's 3 GB replica to broker 1 within rack a: 20
    # GB across. Pulled into broker 8 as the cheapest across, that one left rack a short, and
    # broker 1 then took one of rack b's: 23 GB.
    assert summary["crossRackBytes"] == pytest.approx(20 * GB)
    placed = {p["partition"]: p["replicas"][0] for p in plan.partitions}
    assert placed[0] == 1
    assert sorted(b for p, b in placed.items() if p != 0) == [8, 8]
