"""Moves placed apart, many from one evaluation, must each be one ``place`` would make when applied.

``Search.place_apart`` judges a batch of candidates once and then applies several of them, skipping
any whose partition, source or best destinations an earlier move of the batch touched. Each move it
applies must pass every veto, improve the goal and go to a destination ranked as high as the one
``place`` would choose, all on the state at the moment it is applied.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings

from kafka_balancer.goals.base import EPSILON
from kafka_balancer.goals.registry import build_goal, priority_order
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.vetoes import TOLERANCE
from tests.unit.test_plan_incremental import moved_clusters, moved_state


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moved_clusters())
def test_each_move_placed_apart_is_acceptable_and_ranked_best_when_applied(
    case: tuple[dict[str, Any], list[tuple[int, int, int]]],
) -> None:
    state = moved_state(case)
    goals = [build_goal(spec, state) for spec in priority_order(default_goal_set())]
    i = next(n for n, g in enumerate(goals) if isinstance(g, TopicReplicaDistributionGoal))
    goal = goals[i]
    vetoes = [g for g in goals[:i] if not g.hard] + [g for g in goals if g.hard and g is not goal]
    search = Search(state, vetoes, [g for g in goals[i + 1 :] if not g.hard])
    parts, slots = np.nonzero(state.replicas >= 0)
    cands = state.slot_moves(parts, slots)

    applied: list[int] = []  # the rows of ``cands`` applied
    apply = state.apply

    def checked(c: Candidates, k: int, y: int) -> None:
        row = c.take(np.array([k]))
        assert search.allowed(row)[0, y]
        src, dst = goal.evaluate(state, row, target=True)
        assert (src[0] < -EPSILON and dst[0, y] <= TOLERANCE) or (
            dst[0, y] < -EPSILON and src[0] <= TOLERANCE
        )
        choice = search._choose(goal, row, None, same_rack_first=False)
        assert choice is not None
        best = choice[1]
        other_rack = state.rack != state.rack[row.src[0]]
        gain, later = src[0] + dst[0], search._later_cost(row)[0]
        assert (other_rack[y], gain[y], later[y]) == (other_rack[best], gain[best], later[best])
        applied.append(k)
        apply(c, k, y)

    setattr(state, "apply", checked)  # noqa: B010 (an instance's method, replaced for this test)
    count, refused = search.place_apart(goal, cands)

    assert count == len(applied)
    assert len(set(cands.part[applied].tolist())) == count
    assert not refused[applied].any()
