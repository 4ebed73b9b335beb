"""A plan is pruned until a sweep of undos saves less than LEAST_YIELD of its bytes: undoing its
moves again, alone or by exchange, saves less than that share, even where a kind of exchange had
stopped early in the first sweep (its last round saved little, and the undos after it opened
exchanges it would have found)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.candidate_moves import leader_changes, replica_moves
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.optimizer import plan
from kafka_balancer.planner.prune import LEAST_YIELD, prune
from kafka_balancer_dev.synthetic import SyntheticSpec, generate


def grown(seed: int) -> Cluster:
    """40 brokers on 4 racks, replication factor 3, disks 35 % full, grown by a broker per rack."""
    spec = SyntheticSpec.filled(
        40, 3000, fill=0.35, racks=4, replication_factor=3, hot_brokers=2, empty_brokers=1, seed=seed
    )
    cluster = generate(spec)
    top = max(b.id for b in cluster.brokers)
    racks = sorted({b.rack for b in cluster.brokers})
    model = {r: next(b for b in cluster.brokers if b.rack == r) for r in racks}
    added = tuple(replace(model[r], id=top + 1 + i) for i, r in enumerate(racks))
    return replace(cluster, brokers=cluster.brokers + added)


def replayed(cluster: Cluster) -> tuple[WorkingModel, list[Goal], float]:
    """The plan's state as the optimizer left it: the cluster with each planned partition's new
    replicas in the slots of those it drops, and its new leader, with the goals' bands of the
    cluster as it was; and the bytes the plan says it moves."""
    state = WorkingModel(cluster)
    specs = tuple(s for s in default_goal_set() if not s.type.intra_broker)
    goals = [build_goal(s, state, racks_held=True) for s in specs]
    result = plan(cluster, default_goal_set())
    index = {name: p for p, name in enumerate(state.names)}
    for r in result.reassignments.reassignments:
        p = index[(r.topic, r.partition)]
        one = np.array([p], dtype=np.int64)
        old = [int(b) for b in state.replicas[p, : state.rf[p]]]
        ids = [int(state.broker_ids[b]) for b in old]
        added = [b for b in r.replicas if b not in ids]
        for was in (b for b in old if int(state.broker_ids[b]) not in r.replicas):
            dest = int(np.nonzero(state.broker_ids == added.pop())[0][0])
            state.apply(replica_moves(state, was, one), 0, dest)
        leader = int(np.nonzero(state.broker_ids == r.replicas[0])[0][0])
        if state.leader_of(p) != leader:
            state.apply(leader_changes(state, one, np.array([leader], dtype=np.int64)), 0, leader)
    return state, goals, result.figures.bytes_moved


def bytes_moved(state: WorkingModel) -> float:
    return float(state.disk @ state.moved.sum(axis=1))


def test_pruning_the_plan_again_saves_less_than_the_least_yield() -> None:
    state, goals, planned = replayed(grown(11))
    assert all(g.status(state).satisfied for g in goals)
    before = bytes_moved(state)
    assert before == pytest.approx(planned, rel=1e-9)
    assert before > 0

    prune(state, goals)

    assert all(g.status(state).satisfied for g in goals)
    assert before - bytes_moved(state) < LEAST_YIELD * before
