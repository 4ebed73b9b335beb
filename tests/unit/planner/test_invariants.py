"""Invariants of every plan, on random feasible clusters (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_balancer.formats.plan_file import plan_document
from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.rack import RackAwareGoal
from kafka_balancer.goals.spec import GoalSpec, GoalType, default_goal_set
from kafka_balancer.model.candidate_moves import leadership_away, replica_moves
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.optimizer import plan
from kafka_balancer.planner.vetoes import TOLERANCE
from tests.unit import checker
from tests.unit.clusters import broker, drawn_partitions, snapshot


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    n_racks = draw(st.integers(1, 3))
    per_rack = 4 if n_racks == 1 else 3
    n_brokers = n_racks * per_rack
    draining = draw(st.one_of(st.none(), st.integers(0, n_brokers - 1)))
    warming = draw(st.one_of(st.none(), st.integers(0, n_brokers - 1)))
    brokers = []
    for b in range(n_brokers):
        extra: dict[str, Any] = {}
        if b == warming and b != draining:
            extra["warmUpShare"] = draw(st.sampled_from([0.25, 0.5, 0.75]))
        brokers.append(
            broker(
                b,
                "abc"[b % n_racks],
                state="draining" if b == draining else "active",
                scale=draw(st.sampled_from([1.0, 2.0])),
                **extra,
            )
        )
    rf = draw(st.integers(1, 3))
    n_parts = draw(st.integers(1, 30))
    return snapshot(brokers, drawn_partitions(draw, n_parts, n_brokers, rf, rf))


def plan_of(snap: dict[str, Any]) -> dict[str, Any]:
    return plan_document(plan(parse_snapshot(snap), default_goal_set()).reassignments)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_every_plan_keeps_the_invariants(snap: dict[str, Any]) -> None:
    planned = plan(parse_snapshot(snap), default_goal_set())
    result = plan_document(planned.reassignments)
    # The bound rests on the bands the plan met, so the plan itself is one it bounds.
    figures = planned.figures
    assert figures.bytes_moved_lower_bound <= figures.bytes_moved * (1 + 1e-9) + 1e-6
    before = {(p["topic"], p["partition"]): p for p in snap["partitions"]}
    draining = {b["id"] for b in snap["brokers"] if b["state"] == "draining"}
    known = {b["id"] for b in snap["brokers"]}
    for p in result["partitions"]:
        old = before[(p["topic"], p["partition"])]
        assert len(p["replicas"]) == len(old["replicas"]), "replication factor preserved"
        assert len(set(p["replicas"])) == len(p["replicas"]), "replicas distinct"
        assert set(p["replicas"]) <= known
    after = checker.apply_plan(snap, result)
    for p in after["partitions"]:
        assert not set(p["replicas"]) & draining, "no replica left on a draining broker"
    assert checker.rack_violations(after) == []
    for resource, threshold in (("disk", 80), ("networkIn", 80), ("networkOut", 80), ("cpu", 70)):
        assert checker.capacity_violations(after, resource, threshold) == []
    assert plan_of(snap) == result, "same input, same plan"
    if not draining:
        # With a drain, the same-rack rule outranks the soft goals inside the plan that drains;
        # a later plan no longer knows which replicas were drained and may rebalance across racks.
        assert plan_of(after)["partitions"] == [], "planning the planned state moves nothing"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_rack_aware_veto_allows_where_its_evaluation_gets_no_worse(snap: dict[str, Any]) -> None:
    """RackAware answers the search's veto with booleans (its hot path); the answer must be the
    one its evaluation gives, for every replica move and leader change of every broker,
    including partitions that already break rack awareness."""
    state = WorkingModel(parse_snapshot(snap))
    goal = RackAwareGoal(GoalSpec.default(GoalType.RACK_AWARE), state)
    for b in range(state.n_brokers):
        for cands in (replica_moves(state, b), leadership_away(state, b)):
            fast = goal.kept(state, cands, TOLERANCE)
            assert np.array_equal(fast, Goal.kept(goal, state, cands, TOLERANCE))
