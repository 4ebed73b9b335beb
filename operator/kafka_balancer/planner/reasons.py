"""Why a band the plan missed cannot be met when a goal before it is why, said in its status.

A goal's own status knows its band only; when an earlier goal's band is what holds a broker
where it is, the plan says so beside the band it missed, as a goal's rack aim does for a rack
that cannot hold its share.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kafka_balancer.goals.bands import DistributionGoal
from kafka_balancer.goals.base import EPSILON, Goal, GoalStatus
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel

# The quantities a leadership carries beyond what a follower of the same partition does.
_LED = (int(Resource.NETWORK_OUT), int(Resource.CPU))


def explained(state: WorkingModel, goals: list[Goal], statuses: list[GoalStatus]) -> list[GoalStatus]:
    """``statuses`` (one per goal of ``goals``, in priority order), each missed leader band's with
    the reason an earlier band gives, when one does (``_held_by_a_leadership``)."""
    out = list(statuses)
    for i, (goal, status) in enumerate(zip(goals, statuses, strict=True)):
        if status.satisfied or not isinstance(goal, DistributionGoal) or goal.column != LEADERS:
            continue
        earlier = [g for g in goals[:i] if isinstance(g, DistributionGoal) and g.active and g.column in _LED]
        reason = _held_by_a_leadership(state, goal, earlier)
        if reason:
            out[i] = replace(status, detail=status.detail + reason)
    return out


def _held_by_a_leadership(
    state: WorkingModel, leaders: DistributionGoal, earlier: list[DistributionGoal]
) -> str:
    """Why the broker furthest below the leader band stays there, when it leads a partition
    whose leadership alone carries more of a quantity than an earlier band is wide at each of
    the partition's other replicas (none of them can lead it and stay in that band), and the
    lightest leaderships it lacks would take it above that band's top."""
    b = int(np.argmax(leaders.contract_violation(state)))
    lacking = int(np.ceil(leaders.lo[b] - state.leader_count[b] - EPSILON))
    if lacking <= 0:
        return ""
    parts = state.parts_on(b)
    led = state.replicas[parts, state.leader_slot[parts]] == b
    if not led.any() or (~led).sum() < lacking:
        # Too few replicas to lead: the replica band is why, not this.
        return ""
    for goal in earlier:
        c = goal.column
        extra = state.leader_load[parts, c] - state.follower_load[parts, c]
        heaviest = int(np.argmax(np.where(led, extra, -np.inf)))
        p = int(parts[heaviest])
        others = [int(r) for r in state.replicas[p] if r >= 0 and r != b]
        width = goal.hi - goal.lo
        if not others or extra[heaviest] <= float(width[others].max()):
            continue
        needed = float(np.sort(extra[~led])[:lacking].sum())
        room = float(goal.hi[b] - state.quantity(c)[b])
        if needed <= room:
            continue
        topic, number = state.names[p]
        return (
            f"; it leads {topic}-{number}, whose leadership alone carries "
            f"{goal.describe(float(extra[heaviest]), b)} more than a follower of it, more than "
            f"{goal.spec.label}'s band is wide at its other replicas, so none of them can lead it "
            f"within that band; with it, the {lacking} lightest leaderships this broker could take "
            f"would add {goal.describe(needed, b)} where {goal.spec.label} leaves it "
            f"{goal.describe(max(room, 0.0), b)}"
        )
    return ""
