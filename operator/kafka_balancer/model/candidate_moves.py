"""The candidate actions of a working model as it stands: moves of replicas and changes of
leader, built as batches for the goals to score in one go."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.model.candidates import NO_BROKER, Candidates
from kafka_balancer.model.math import IntArray
from kafka_balancer.model.quantities import LEADERS, N_QUANTITIES, REPLICAS

if TYPE_CHECKING:
    from kafka_balancer.model.working import WorkingModel


def slot_of(state: WorkingModel, parts: IntArray, broker: int) -> IntArray:
    """The slot of ``broker``'s replica in each of ``parts`` (each has one there)."""
    held = state.replicas.take(parts, axis=0) == broker
    rows, slots = np.nonzero(held)
    if len(rows) == len(parts):
        # One slot a row: nonzero's columns are the slots, in row order, and cheaper than argmax.
        return slots
    return np.asarray(np.argmax(held, axis=1), dtype=np.int64)


def replica_moves(
    state: WorkingModel, broker: int, parts: IntArray | None = None, *, every: bool = False
) -> Candidates:
    """Moves of ``broker``'s replicas (of ``parts``, default all); with ``every`` those of excluded
    topics too (a replica that must leave its broker leaves whatever its topic).

    A replica this plan already moves costs nothing more to send elsewhere instead: the
    plan is a diff, so the data moves once either way."""
    parts = state.parts_on(broker) if parts is None else np.sort(parts)
    if not state.all_movable and state.active[broker] and not every:
        parts = parts[state.movable[parts]]  # a draining broker gives up every replica
    return slot_moves(state, parts, slot_of(state, parts, broker))


def extreme_replica_moves(
    state: WorkingModel, broker: int, column: int, n: int, largest: bool, into_rack: int | None = None
) -> Candidates:
    """The ``n`` moves of ``replica_moves(state, broker)`` with the largest (or smallest) change of
    ``column``, in that order (ties by partition): chosen before the candidates are built,
    as building every one of a broker's thousands to keep a few cost most of a swap. With
    ``into_rack``, only of partitions below their rack limit there (that may go to it)."""
    parts = state.parts_on(broker)
    if not state.all_movable and state.active[broker]:
        parts = parts[state.movable[parts]]
    if into_rack is not None:
        parts = parts[state.rack_count[parts, into_rack] < state.rack_limit[parts]]
    # The broker's slot of the few kept only, found after the choice.
    is_leader = state.replicas[parts, state.leader_slot[parts]] == broker
    if column < REPLICAS:
        value = np.where(is_leader, state.leader_load[parts, column], state.follower_load[parts, column])
    elif column == REPLICAS:
        value = np.ones(len(parts))
    else:
        value = is_leader.astype(np.float64)
    key = -value if largest else value
    order = np.arange(len(key))
    if len(key) > n > 0:
        # The n least keys, ties in partition order (``parts_on``'s): what a stable sort of
        # all would put first, without sorting a broker's thousands for a swap's few.
        kth = np.partition(key, n - 1)[n - 1]
        below = np.nonzero(key < kth)[0]
        order = np.concatenate([below, np.nonzero(key == kth)[0][: n - len(below)]])
    chosen = parts[order[np.argsort(key[order], kind="stable")][:n]]
    return slot_moves(state, chosen, slot_of(state, chosen, broker))


def slot_moves(state: WorkingModel, parts: IntArray, slots: IntArray) -> Candidates:
    """Moves of replica ``slots[k]`` of ``parts[k]``, each from the broker holding it."""
    # Gathered once each and the leaders' rows overwritten: a shed asks this of a broker's
    # thousands, and two [K, 4] gathers, a where and two 2-D fancy indexings cost several
    # times as much.
    flat = parts * state.replicas.shape[1] + slots
    is_leader = state.leader_slot.take(parts) == slots
    delta = np.empty((len(parts), N_QUANTITIES), dtype=np.float64)
    np.take(state.follower_load, parts, axis=0, out=delta[:, :4])
    delta[:, REPLICAS] = 1.0
    delta[:, LEADERS] = is_leader
    if is_leader.any():
        delta[is_leader, :4] = state.leader_load.take(parts[is_leader], axis=0)
    cost = state.disk.take(parts)
    cost[state.moved.take(flat)] = 0.0
    return Candidates(
        parts,
        slots,
        state.replicas.take(flat),
        np.full(len(parts), NO_BROKER, dtype=np.int64),
        delta,
        cost,
    )


def leader_changes(state: WorkingModel, parts: IntArray, new_leader: IntArray) -> Candidates:
    """Make broker ``new_leader[k]`` (a follower of ``parts[k]``) the leader."""
    if not state.all_movable:
        keep = state.movable[parts]
        parts, new_leader = parts[keep], new_leader[keep]
    slots = np.asarray(np.argmax(state.replicas[parts] == new_leader[:, None], axis=1), dtype=np.int64)
    src = state.replicas[parts, state.leader_slot[parts]]
    delta = np.zeros((len(parts), N_QUANTITIES), dtype=np.float64)
    delta[:, :4] = state.leader_load[parts] - state.follower_load[parts]
    delta[:, LEADERS] = 1.0
    return Candidates(parts, slots, src, new_leader.astype(np.int64), delta, np.zeros(len(parts)))


def leadership_away(state: WorkingModel, broker: int, parts: IntArray | None = None) -> Candidates:
    """Leadership changes that hand a partition led by ``broker`` (of ``parts``, default all)
    to one of its followers."""
    parts = state.parts_on(broker) if parts is None else parts
    parts = np.sort(parts[state.replicas[parts, state.leader_slot[parts]] == broker])
    rows = state.replicas[parts]
    p_rep = np.repeat(parts, rows.shape[1])
    followers = rows.reshape(-1)
    keep = (followers >= 0) & (followers != broker)
    return leader_changes(state, p_rep[keep], followers[keep])


def leadership_to(state: WorkingModel, broker: int) -> Candidates:
    """Every leadership change that makes ``broker`` the leader of a partition it follows."""
    parts = state.parts_on(broker)
    parts = np.sort(parts[state.replicas[parts, state.leader_slot[parts]] != broker])
    return leader_changes(state, parts, np.full(len(parts), broker, dtype=np.int64))
