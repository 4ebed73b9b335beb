"""The scoring job's driver-side arithmetic: cpu shares and broker loads, on small models whose
expected values are worked out by hand or written out anew here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.scoring import scores
from kafka_balancer.scoring.job import snapshot_document
from kafka_balancer.scoring.model_loads import LOAD_COLUMNS, ReplicaLists, attribute_cpu, broker_loads

PARTITIONS = [
    # topic, partition, replicas, leader, disk, network_in, network_out, cpu, follower_cpu
    ("a", 0, [1, 2, 3], 1, 1000.0, 10.0, 20.0, 0.5, 0.1),
    ("a", 1, [2, 3], 3, 500.0, 4.0, 0.0, 0.2, 0.05),
    ("b", 0, [3], 3, 50.0, 1.0, 3.0, 0.1, 0.0),
]


def topology(ids: list[int], disk: float = 1e6) -> Cluster:
    brokers = [
        {"id": b, "rack": "r", "capacity": {"disk": disk, "networkIn": 1e3, "networkOut": 1e3, "cpu": 8}}
        for b in ids
    ]
    return parse_snapshot({"version": 1, "brokers": brokers, "partitions": []}, "topology")


def lists(rows: list[list[int]]) -> ReplicaLists:
    flat = np.array([b for r in rows for b in r], np.float64)
    return ReplicaLists(flat, np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64))


def loads_of(partitions: list[tuple[Any, ...]], ids: list[int], disk: float = 1e6) -> pd.DataFrame:
    model = pd.DataFrame(partitions, columns=["topic", "partition", "replicas", "leader", *LOAD_COLUMNS])
    return broker_loads(topology(ids, disk), model, lists(model["replicas"].tolist()))


def test_cpu_is_shared_by_bytes_in_among_the_partitions_a_broker_leads() -> None:
    # Broker 1 used 3.5 cores, broker 3 one; broker 2 has no cpu samples.
    leader = np.array([1, 1, 2, 3, 3])
    bytes_in = np.array([100.0, 300.0, 50.0, 0.0, 0.0])
    cpu, follower = attribute_cpu(leader, bytes_in, np.array([3, 1, 9]), np.array([1.0, 3.5, 2.0]), 0.5)
    assert cpu.tolist() == [0.875, 2.625, 0.0, 0.5, 0.5]  # broker 3's partitions have no bytes in: evenly
    assert follower.tolist() == [0.4375, 1.3125, 0.0, 0.25, 0.25]


def test_no_cpu_samples_give_no_cpu() -> None:
    cpu, follower = attribute_cpu(np.array([1, 2]), np.array([1.0, 0.0]), np.zeros(0, np.int64), np.zeros(0))
    assert cpu.tolist() == [0.0, 0.0] and follower.tolist() == [0.0, 0.0]


def test_a_cpu_sample_that_is_no_number_is_kept_for_the_check_to_refuse() -> None:
    bad = np.array([np.nan, np.inf])
    cpu, _ = attribute_cpu(np.array([1, 2]), np.array([1.0, 1.0]), np.array([1, 2]), bad)
    assert np.isnan(cpu[0]) and np.isinf(cpu[1])


def expected_loads() -> dict[int, list[float]]:
    """The load model of docs/design.md, written out anew: [disk, in, out, cpu, replicas, leaders]."""
    loads = {b: [0.0] * 6 for b in (1, 2, 3, 4)}
    for _, _, replicas, leader, disk, n_in, n_out, cpu, fcpu in PARTITIONS:
        for b in replicas:
            loads[b][0] += disk
            loads[b][1] += n_in
            loads[b][4] += 1
            if b == leader:
                loads[b][2] += n_out + n_in * (len(replicas) - 1)
                loads[b][3] += cpu
                loads[b][5] += 1
            else:
                loads[b][3] += fcpu
    return loads


def test_broker_loads_follow_the_load_model() -> None:
    got = loads_of(PARTITIONS, [4, 3, 2, 1])
    cols = [*scores.LOAD_COLUMNS, "replicas", "leaders"]
    actual = {int(r["broker"]): [float(r[c]) for c in cols] for _, r in got.iterrows()}
    expected = expected_loads()
    assert actual.keys() == expected.keys()
    for b, values in expected.items():
        assert actual[b] == pytest.approx(values), b


def test_broker_loads_are_the_planners_to_the_last_bit() -> None:
    """The job sums the loads in the snapshot's partition order with the planner's own functions,
    so its scores are those of the planner's working model of the snapshot, bit for bit."""
    rng = np.random.default_rng(5)
    ids = [7, 3, 11, 5, 2, 9]
    n = 3000
    rows = [rng.choice(ids, int(rng.integers(1, 4)), replace=False).tolist() for _ in range(n)]
    model = pd.DataFrame(
        {
            "topic": [f"t{i % 37}" for i in range(n)],
            "partition": np.arange(n, dtype=np.int32),
            "leader": [r[int(rng.integers(len(r)))] for r in rows],
            **{c: rng.lognormal(10, 3, n) for c in LOAD_COLUMNS},
        }
    )
    cluster = topology(ids)
    replicas = lists(rows)
    got = broker_loads(cluster, model, replicas)
    parsed = parse_snapshot(snapshot_document(cluster, model, replicas), "snapshot")
    planned = WorkingModel(parsed).broker_loads()
    want = {b.id: load for b, load in zip(parsed.brokers, planned, strict=True)}
    for _, row in got.iterrows():
        load = want[int(row["broker"])]
        assert tuple(row[c] for c in scores.LOAD_COLUMNS) == load.loads
        assert (row["replicas"], row["leaders"]) == (load.replicas, load.leaders)


def test_scores_and_candidates_for_an_overloaded_broker() -> None:
    # Two equal brokers; broker 1 holds 300 of 400 disk bytes. DiskDistribution ±10 %: mean
    # utilisation 400 / 2000 = 0.2, band 180 .. 220 per broker; broker 1 is 80 above (÷ 200).
    partitions = [
        ("t", 0, [1], 1, 200.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 1, [1], 1, 100.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 2, [2], 2, 100.0, 0.0, 0.0, 0.0, 0.0),
    ]
    loads_pd = loads_of(partitions, [1, 2], disk=1000.0)
    goal = GoalSpec.default(GoalType.DISK_DISTRIBUTION, threshold_percent=0)
    scored = {r["broker"]: r for r in scores.score_brokers(loads_pd, [goal]).to_dict("records")}
    assert (scored[1]["lo"], scored[1]["hi"]) == (pytest.approx(180.0), pytest.approx(220.0))
    assert scored[1]["violation"] == pytest.approx(80.0 / 200.0)
    assert scored[2]["violation"] == pytest.approx(80.0 / 200.0)  # 100 is 80 below 180
    assert scored[1]["deviation"] == pytest.approx(0.5)
    model = pd.DataFrame(partitions, columns=["topic", "partition", "replicas", "leader", *LOAD_COLUMNS])
    found = scores.candidates(model, loads_pd, [goal], top=5, violating=[1]).to_dict("records")
    # Moving t-1 (100 bytes) lands both brokers at 200: 0.4 + 0.4 gone. Moving t-0 (200)
    # overshoots: broker 1 at 100 (80 below) and broker 2 at 300 (80 above): no gain, not listed.
    assert [(r["action"], r["partition"], r["target_broker"]) for r in found] == [("move", 1, 2)]
    assert found[0]["improvement"] == pytest.approx(0.8)
    assert found[0]["bytes"] == 100.0


def test_candidates_are_each_goals_best_top_by_improvement_then_bytes_then_order() -> None:
    # Broker 1 holds 70 of 72 disk bytes and 4 of 6 replicas; bands of ±0 around 24 bytes and
    # 2 replicas. A move of d bytes to broker 2 (the lightest, first by id) gains d at broker 1
    # and d at broker 2 up to its band (23): 30 bytes gain 46, 20 gain 40, 10 gain 20. Every
    # move gains the replica band the same: the fewest bytes first, then the model's order.
    partitions = [
        ("t", 0, [1], 1, 10.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 1, [1], 1, 10.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 2, [1], 1, 30.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 3, [1], 1, 20.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 4, [2], 2, 1.0, 0.0, 0.0, 0.0, 0.0),
        ("t", 5, [3], 3, 1.0, 0.0, 0.0, 0.0, 0.0),
    ]
    loads_pd = loads_of(partitions, [1, 2, 3], disk=1000.0)
    goals = [
        GoalSpec.default(GoalType.REPLICA_DISTRIBUTION, threshold_percent=0),
        GoalSpec.default(GoalType.DISK_DISTRIBUTION, threshold_percent=0),
    ]
    model = pd.DataFrame(partitions, columns=["topic", "partition", "replicas", "leader", *LOAD_COLUMNS])
    found = scores.candidates(model, loads_pd, goals, top=3, violating=[1])
    labels = {goal.type: goal.label for goal in goals}
    # Goals in label order, each its own best three.
    assert found["goal"].tolist() == sorted(found["goal"].tolist())
    by_goal = found.groupby("goal", sort=False)["partition"].apply(list).to_dict()
    assert by_goal == {
        labels[GoalType.DISK_DISTRIBUTION]: [2, 3, 0],
        labels[GoalType.REPLICA_DISTRIBUTION]: [0, 1, 3],
    }
    disk = found[found["goal"] == labels[GoalType.DISK_DISTRIBUTION]]
    assert disk["improvement"].tolist() == pytest.approx([46 / 24, 40 / 24, 20 / 24])
    assert set(found["target_broker"]) == {2}
