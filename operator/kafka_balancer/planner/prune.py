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

from kafka_balancer.goals.base import Goal
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, IntArray
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search


def prune(state: WorkingModel, goals: list[Goal]) -> int:
    """Move back every moved replica whose return keeps all ``goals`` met; returns how many.

    Rounds until one undoes nothing: an undo can make room for another. Each undo leaves one
    moved replica fewer, so the rounds end. Whether a replica may go home depends only on its
    partition and on its two brokers (their bands and topic cells), so after the first round
    only the replicas with a broker an undo touched are looked at again."""
    search = Search(state, list(goals), [])
    undone = 0
    touched = np.ones(state.n_brokers, dtype=bool)
    while touched.any():
        looked_at, touched = touched, np.zeros(state.n_brokers, dtype=bool)
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
