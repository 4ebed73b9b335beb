"""What each rack holds in every plan that meets RackAware, from a working model's original
assignment: where the distribution goals aim, and whether the lower bound may count moves rack
by rack."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.model.math import FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS, REPLICAS

if TYPE_CHECKING:
    from kafka_balancer.model.working import WorkingModel


def racks_fixed(state: WorkingModel) -> bool:
    """Whether, while no rack holds more than its limit of a partition's replicas, no replica
    can change rack: every movable partition of the original assignment holds exactly its
    limit in every rack with an active broker (so in each rack it loses as many replicas as it
    gains), and no partition RackAware does not judge has to move (an excluded topic's leaving
    a draining broker or an offline log dir may change its rack)."""
    parts = np.nonzero(state.movable)[0]
    if not len(parts) or state.n_racks < 2 or _unjudged_leave(state):
        return False
    n_r = len(state.rack_names)
    live = np.zeros(n_r, dtype=bool)
    live[state.rack[state.active]] = True
    # Racks of the original assignment (the moves are from it); n_r for an empty slot.
    rows = state.original_replicas[parts]
    racks = np.where(rows >= 0, state.rack[np.where(rows >= 0, rows, 0)], n_r)
    counts = (racks[:, :, None] == np.arange(n_r)).sum(axis=1)
    return bool((counts[:, live] == state.rack_limit[parts][:, None]).all() and not counts[:, ~live].any())


def rack_ranges(state: WorkingModel, column: int) -> tuple[FloatArray, FloatArray] | None:
    """``[racks]`` twice: the least and the most of ``column`` each rack holds in any plan
    that meets RackAware, whatever the assignment now: a movable partition of replication
    factor rf and rack limit L has at most min(L, rf) replicas in a live rack and at least
    rf − L × (live racks − 1), an excluded one its replicas where they are. The same figure
    twice where every movable partition fills each live rack to its limit (``_racks_filled``).
    Only for the replica count and a resource a leader carries no more of than a follower
    (disk, bytes in), which no change of leader shifts between racks; None otherwise, and
    when an excluded partition has to move (then it may go to any rack)."""
    if column == LEADERS or state.n_racks < 2 or _unjudged_leave(state):
        return None
    per_replica = state.follower_load[:, column] if column < REPLICAS else np.ones(len(state.rf))
    if column < REPLICAS and not np.array_equal(state.leader_load[:, column], per_replica):
        return None
    group = np.zeros(len(state.rf), dtype=np.int64)
    limit = state.rack_limit
    least = np.maximum(state.rf - limit * (state.n_racks - 1), 0)
    return (
        _rack_sums(state, per_replica, group, 1, least)[0],
        _rack_sums(state, per_replica, group, 1, np.minimum(limit, state.rf))[0],
    )


def topic_rack_totals(state: WorkingModel) -> FloatArray | None:
    """``[T, racks]``: each topic's replicas in each rack in every plan that meets RackAware,
    where that is the same for all of them (``_racks_filled``); None otherwise."""
    if not _racks_filled(state):
        return None
    return _rack_sums(state, np.ones(len(state.rf)), state.topic, state.n_topics, state.rack_limit)


def _racks_filled(state: WorkingModel) -> bool:
    """Whether every movable partition's replication factor fills each rack with an active
    broker to its limit (met, RackAware leaves it exactly its limit in each) and no partition
    RackAware does not judge has to move: then no plan that meets RackAware moves anything
    between racks."""
    movable = state.movable
    filled = (state.rf[movable] == state.rack_limit[movable] * state.n_racks).all()
    return state.n_racks >= 2 and bool(filled) and not _unjudged_leave(state)


def _rack_sums(
    state: WorkingModel, per_replica: FloatArray, group: IntArray, n_groups: int, count: IntArray
) -> FloatArray:
    """``[groups, racks]``: per group of partitions, the sum of ``per_replica`` over its
    replicas in each rack with ``count`` replicas of each movable partition in every live
    rack, and an excluded one's where they are."""
    sums = np.zeros((n_groups, len(state.rack_names)))
    movable = state.movable
    filled = np.bincount(group[movable], weights=count[movable] * per_replica[movable], minlength=n_groups)
    live = np.unique(state.rack[state.active])
    sums[:, live] = filled[:, None]
    rows = state.original_replicas[~movable]
    held = rows >= 0
    each = np.broadcast_to(per_replica[~movable][:, None], rows.shape)[held]
    groups = np.broadcast_to(group[~movable][:, None], rows.shape)[held]
    np.add.at(sums, (groups, state.rack[rows[held]]), each)
    return sums


def _unjudged_leave(state: WorkingModel) -> bool:
    """Whether a partition RackAware does not judge (an excluded topic's) has to move: off a
    draining broker or an offline log dir, into any rack."""
    held = state.original_replicas >= 0
    leaving = np.asarray(((~state.active)[np.where(held, state.original_replicas, 0)] & held).any(axis=1))
    leaving[[p for p, _, _ in state.offline_replicas]] = True
    return bool((leaving & ~state.movable).any())
