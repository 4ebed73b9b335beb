"""Undoing moves the met goals do not need, so that the plan copies fewer bytes.

The goals run one after another, each choosing moves by its own violation, so a replica one goal
moved may no longer be needed once the later goals have moved others: the room it made was made
again, or it was the first hop of a chain. When every goal is met, a moved replica that can go
back to its original broker (in its original slot, so the diff no longer shows it) with no goal
getting worse at any broker keeps every goal met and saves its bytes. The largest go back first.
Only when every goal is met: "no worse anywhere" then means "still met", so the pruned state
replans to nothing, as the unpruned one did.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import Goal
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, IntArray
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.vetoes import TOLERANCE, StackedBands

# The home broker's replicas offered in exchange for each undo: the cheapest few.
EXCHANGE_SIDE = 48


def prune(state: WorkingModel, goals: list[Goal]) -> int:
    """Move back every moved replica whose return keeps all ``goals`` met, alone or in exchange
    for a cheaper replica going the other way; returns how many went home.

    Rounds until one changes nothing: an undo can make room for another. Each undo or exchange
    moves fewer bytes than before, so the rounds end. Whether a replica may go home depends only
    on its partition and on its two brokers (their bands and topic cells), so after the first
    round only the replicas with a broker the last round touched are looked at again."""
    search = Search(state, list(goals), [])
    bands = StackedBands([g for g in goals if isinstance(g, BandGoal)], state.n_brokers)
    others = [g for g in goals if not isinstance(g, BandGoal)]
    undone = 0
    touched = np.ones(state.n_brokers, dtype=bool)
    while touched.any():
        looked_at, touched = touched, np.zeros(state.n_brokers, dtype=bool)
        undone += _single_undos(state, search, looked_at, touched)
        undone += _exchange_undos(state, bands, others, looked_at, touched)
    return undone


def _single_undos(state: WorkingModel, search: Search, looked_at: BoolArray, touched: BoolArray) -> int:
    """Move home, largest first, every moved replica with a broker in ``looked_at`` whose return
    no goal vetoes; returns how many, the brokers changed marked in ``touched``."""
    undone = 0
    for p, slot in _undoable(state, search, looked_at).tolist():
        home, now = int(state.original_replicas[p, slot]), int(state.replicas[p, slot])
        if state.holds(np.array([p]))[0, home]:
            continue
        cands = state.replica_moves(now, np.array([p], dtype=np.int64))
        if search.place(None, cands, dest=home) is not None:
            undone += 1
            touched[[home, now]] = True
    return undone


def _undoable(state: WorkingModel, search: Search, brokers: BoolArray) -> IntArray:
    """``[K, 2]`` (partition, slot) of moved replicas with a broker in ``brokers`` that could go
    home now, largest first."""
    parts, slots = np.nonzero(state.moved)
    home = state.original_replicas[parts, slots]
    keep = state.active[home] & (brokers[home] | brokers[state.replicas[parts, slots]])
    parts, slots, home = parts[keep], slots[keep], home[keep]
    now = state.replicas[parts, slots]
    by_now, rows_of = [], []
    for broker in np.unique(now).tolist():
        rows = np.nonzero(now == broker)[0]
        by_now.append(state.replica_moves(broker, parts[rows]))
        # replica_moves sorts its partitions; a partition has one replica per broker.
        rows_of.append(rows[np.argsort(parts[rows], kind="stable")])
    ok = np.zeros(len(parts), dtype=bool)
    if by_now:
        cands, rows = Candidates.concat(by_now), np.concatenate(rows_of)
        # Each replica is asked about its home broker only: grouped by home, the vetoes are
        # checked at one broker instead of every broker.
        homes = home[rows]
        for broker in np.unique(homes).tolist():
            at = np.nonzero(homes == broker)[0]
            ok[rows[at]] = search.allowed(cands.take(at), dest=broker)[:, broker]
    parts, slots = parts[ok], slots[ok]
    order = np.lexsort((slots, parts, -state.disk[parts]))
    return np.stack([parts[order], slots[order]], axis=1)


def _exchange_undos(
    state: WorkingModel, bands: StackedBands, others: list[Goal], looked_at: BoolArray, touched: BoolArray
) -> int:
    """Send moved replicas with a broker in ``looked_at`` home in exchange for a replica of the
    home broker going the other way; returns how many went home, the brokers changed marked in
    ``touched``.

    A replica that cannot go home alone (its home would leave a band) often can when one of its
    home broker's replicas goes to where it is now: best another moved replica going home too,
    else one the plan moves anyway (no more bytes), else one that costs fewer bytes than the undo
    saves. Every goal is checked at both brokers on the pair, so every goal stays met."""
    parts, slots = np.nonzero(state.moved)
    home = state.original_replicas[parts, slots]
    now = state.replicas[parts, slots]
    keep = state.active[home] & (looked_at[home] | looked_at[now])
    parts, slots, home, now = parts[keep], slots[keep], home[keep], now[keep]
    undone = 0
    for h in np.unique(home).tolist():
        undone += _exchanges_home(state, bands, others, parts, slots, home, now, h, touched)
    return undone


def _exchanges_home(
    state: WorkingModel,
    bands: StackedBands,
    others: list[Goal],
    parts: IntArray,
    slots: IntArray,
    home: IntArray,
    now: IntArray,
    h: int,
    touched: BoolArray,
) -> int:
    """The exchanges that send replicas home to ``h``; the brokers they change are marked in
    ``touched``."""
    undone = 0
    take_all: Candidates | None = None
    for a in np.unique(now[home == h]).tolist():
        rows = np.nonzero((home == h) & (now == a))[0]
        rows = rows[state.replicas[parts[rows], slots[rows]] == a]
        while len(rows):
            if take_all is None:
                take_all = state.replica_moves(h)
            give = state.replica_moves(a, parts[rows])
            applied = _exchange_one(state, bands, others, give, take_all, a, h)
            if applied is None:
                break
            undone += applied
            touched[[a, h]] = True
            take_all = None
            rows = rows[state.replicas[parts[rows], slots[rows]] == a]
    return undone


def _exchange_one(
    state: WorkingModel,
    bands: StackedBands,
    others: list[Goal],
    give: Candidates,
    take_all: Candidates,
    a: int,
    h: int,
) -> int | None:
    """Apply the best pair (``give[i]`` from ``a`` home to ``h``, ``take_all[j]`` from ``h`` to
    ``a``) that saves bytes and keeps every goal; how many replicas went home, None if no pair."""
    saving = state.disk[give.part]
    goes_home = state.original_replicas[take_all.part, take_all.slot] == a
    net = take_all.cost - np.where(goes_home, state.disk[take_all.part], 0.0)
    fits = (net < float(saving.max())) & ~(state.replicas[take_all.part] == a).any(axis=1)
    if state.any_pinned or state.any_banned:
        fits &= state.rack_allowed(take_all.part, take_all.slot)[:, a]
    if state.demoted[a]:
        fits &= take_all.delta[:, LEADERS] <= 0
    cheapest = np.nonzero(fits)[0]
    cheapest = cheapest[np.lexsort((take_all.part[cheapest], net[cheapest]))][:EXCHANGE_SIDE]
    if len(cheapest) == 0:
        return None
    take = take_all.take(cheapest)
    gain = saving[:, None] - net[cheapest][None, :]
    ok = gain > 0
    ok &= ~(state.replicas[give.part] == h).any(axis=1)[:, None]
    if state.any_pinned or state.any_banned:
        ok &= state.rack_allowed(give.part, give.slot)[:, h][:, None]
    if state.demoted[h]:
        ok &= (give.delta[:, LEADERS] <= 0)[:, None]
    # Never more bytes across racks: the replica sent from h to a instead (or on from h to a, when
    # the plan moves it already) may cross racks only as much as the moves it replaces did.
    rack, origin = state.rack, state.original_replicas[take.part, take.slot]
    size = state.disk[take.part]
    across_before = saving[:, None] * (rack[h] != rack[a]) + (size * (rack[origin] != rack[h]))[None, :]
    ok &= (size * (rack[origin] != rack[a]))[None, :] <= across_before
    if bands and ok.any():
        ok &= bands.pair_allowed(state, give, take, a, h)
    for goal in others:
        if not ok.any():
            return None
        dx, dy = goal.evaluate_pairs(state, give, take, a, h)
        ok &= (dx <= TOLERANCE) & (dy <= TOLERANCE)
    if not ok.any():
        return None
    i, j = np.nonzero(ok)
    best = np.lexsort((take.part[j], give.part[i], -gain[i, j]))[0]
    back = 1 + int(goes_home[cheapest[j[best]]])
    state.apply(give, int(i[best]), h)
    state.apply(take, int(j[best]), a)
    return back
