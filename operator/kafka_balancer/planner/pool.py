"""Candidate pools: the candidates of one shed or fill, built once and kept up to date.

A candidate's delta depends only on its own partition's state, so the candidates of a broker
are built once per shed or fill and only the changed partitions' rows are refreshed (retired,
and added back as they are now). docs/how-a-plan-is-made.md names the terms.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.model.candidate_moves import leadership_away, replica_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.planner.engine import BATCHES

if TYPE_CHECKING:
    from kafka_balancer.goals.bands import BandGoal
    from kafka_balancer.planner.engine import Engine

# Candidates a pool offers a search at most, batch by batch.
CANDIDATE_LIMIT = sum(BATCHES)


def preference(
    benefit: FloatArray,
    cost: FloatArray,
    need: float,
    parts: IntArray,
    side: FloatArray,
    alive: BoolArray,
    limit: int,
) -> IntArray:
    """The best ``limit`` live candidates, ordered by bytes moved per unit of useful benefit,
    then fewer moves, then fewer bytes, then the least disturbance of the other quantities."""
    useful = np.minimum(benefit, max(need, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        per_unit = np.where(alive & (useful > 0), cost / useful, np.inf)
    head = np.arange(len(parts))
    if len(parts) > limit:
        # Every candidate tied with the last one kept is ranked by the other keys too: replicas
        # the plan already moves all cost 0, and a cut among them by position alone would keep
        # any of them (a round of sheds apart asks each broker for its single best).
        last = np.partition(per_unit, limit - 1)[limit - 1]
        head = np.nonzero(per_unit <= last)[0]
    head = head[per_unit[head] < np.inf]
    order = np.lexsort((parts[head], side[head], cost[head], -useful[head], per_unit[head]))
    return head[order[:limit]]


def _ranked_before(keys: tuple[FloatArray | IntArray, ...], order: IntArray, row: int) -> int:
    """How many of the rows ``order`` (sorted by ``np.lexsort(keys)``, the last key first) sort
    at or before ``row``, a row after all of them: those less on the keys, or equal on all."""
    before = np.ones(len(order), dtype=bool)
    for key in keys:
        ranked = key[order]
        before = np.where(ranked == key[row], before, ranked < key[row])
    return int(before.sum())


class Pool:
    """The candidates of one shed or fill: built once, ordered on demand for the remaining need;
    rows of a partition an action changed are retired in place (no copying per action)."""

    def __init__(
        self, cands: Candidates, column: int, norm: FloatArray, leaving: FloatArray | None = None
    ) -> None:
        keep = np.nonzero(cands.delta[:, column] > 0)[0]
        self.cands = cands.take(keep)
        # Bytes across racks a candidate adds if it leaves its rack: a move to another rack is
        # ranked by them with the bytes it copies (a replica the plan moved within its rack
        # costs no more bytes to send on, but every one of them across).
        self.leaving = leaving[keep] if leaving is not None else np.zeros(len(keep))
        self.crossing = self.cands.cost + self.leaving
        self.column, self.norm = column, norm
        self.benefit = self.cands.delta[:, column]
        # Side effect: the candidate's resource deltas relative to the mean broker load.
        self.side = (np.abs(self.cands.delta[:, :4]) / norm).sum(axis=1)
        self.alive = np.ones(len(self.cands), dtype=bool)
        # Partitions retired since the pool was built: their rows are all that may differ
        # from a pool built now.
        self.changed: set[int] = set()
        self._most = float(self.benefit.max()) if len(self.cands) else 0.0
        self._whole: dict[bool, IntArray] = {}
        # Where in each ``_whole`` the first live row may be: every row before it is retired.
        self._first = {False: 0, True: 0}

    def ordered(self, need: float, limit: int, across: bool = False) -> IntArray:
        """Rows of ``cands`` in order of preference (``across``: for a move to another rack);
        the search takes them batch by batch, so the rows after the first acceptable one are
        never copied."""
        c = self.cands
        cost = self.crossing if across else c.cost
        if len(c) and need >= self._most:
            # Every candidate's benefit is wholly useful, so the order does not depend on the
            # need: sorted once, then only the retired rows are dropped.
            if across not in self._whole:
                self._whole[across] = preference(
                    self.benefit, cost, need, c.part, self.side, self.alive, len(c)
                )
            whole, alive = self._whole[across], self.alive
            first = self._first[across]
            while first < len(whole) and not alive[whole[first]]:
                first += 1
            self._first[across] = first
            # Retired rows are few ahead of the live ones (a shed takes its best first): a
            # window of the next rows usually holds ``limit`` live ones.
            rest = whole[first:]
            window = rest[: 4 * limit]
            live = window[alive[window]]
            if len(live) < limit and len(window) < len(rest):
                live = rest[alive[rest]]
            return live[:limit]
        return preference(self.benefit, cost, need, c.part, self.side, self.alive, limit)

    def retire(self, part: int) -> None:
        self.alive &= self.cands.part != part
        self.changed.add(part)

    def extended(self, more: Candidates, leaving: FloatArray) -> Pool:
        """This pool with the rows ``more`` added after its own, as a pool built from all of them
        would be, its sorted orders kept: a shed adds a partition's few rows after most of its
        actions, and sorting a broker's thousands anew each time showed in the profile of the
        largest clusters."""
        added = Pool(more, self.column, self.norm, leaving)
        grown = copy.copy(self)
        grown.cands = Candidates.concat([self.cands, added.cands])
        grown.leaving = np.concatenate([self.leaving, added.leaving])
        grown.crossing = np.concatenate([self.crossing, added.crossing])
        grown.benefit = np.concatenate([self.benefit, added.benefit])
        grown.side = np.concatenate([self.side, added.side])
        grown.alive = np.concatenate([self.alive, added.alive])
        grown.changed = set()
        grown._most = max(self._most, added._most)
        grown._whole, grown._first = {}, dict(self._first)
        if len(added.cands) == 0:
            grown._whole = dict(self._whole)
            return grown
        rows = np.arange(len(self.cands), len(grown.cands))
        for across, whole in self._whole.items():
            cost = grown.crossing if across else grown.cands.cost
            # Each added row goes where a sort of every row would put it: after the rows ranked
            # before it on the sort's keys, and after those tied on all (they come first in the
            # pool, and the sort is stable). Every benefit is wholly useful in this order.
            keys = (grown.cands.part, grown.side, cost, -grown.benefit, cost / grown.benefit)
            new = rows[np.lexsort(tuple(k[rows] for k in keys))]
            at = np.array([_ranked_before(keys, whole, int(row)) for row in new], dtype=np.int64)
            grown._whole[across] = np.insert(whole, at, new)
            grown._first[across] = min(self._first[across], int(at[0]))
        return grown


def place_from(
    search: Engine,
    goal: BandGoal,
    pool: Pool,
    need: float,
    dest: int | None = None,
    lenient: bool = False,
    in_rack: bool = False,
) -> int | None:
    """``search.place`` of the first acceptable candidate of ``pool`` for the remaining ``need``
    (see ``Engine.place`` for ``dest``, ``lenient`` and ``in_rack``); the partition it changed."""
    across = not in_rack and (
        dest is None or bool((search.state.rack[pool.cands.src] != search.state.rack[dest]).any())
    )
    return search.place(goal, pool.cands, dest, lenient, pool.ordered(need, CANDIDATE_LIMIT, across), in_rack)


def new_pool(search: Engine, goal: BandGoal, cands: Candidates) -> Pool:
    """The pool of ``cands`` for ``goal``, but the partition a compound handed over."""
    if search.handed_over is not None:
        cands = cands.take(np.nonzero(cands.part != search.handed_over)[0])
    return Pool(cands, goal.column, search.norm, search.leaving(cands))


def shed_candidates(search: Engine, goal: BandGoal, broker: int, parts: IntArray | None = None) -> Candidates:
    """What ``broker`` may shed of ``parts`` (all it holds, without them): its leaderships
    first, where the goal's quantity goes with them, then its replicas."""
    if not search.moves_data:
        return leadership_away(search.state, broker, parts)
    batches = [replica_moves(search.state, broker, parts)]
    if goal.affects_leadership():
        batches.insert(0, leadership_away(search.state, broker, parts))
    return Candidates.concat(batches)


def after_swap(search: Engine, goal: BandGoal, broker: int, pool: Pool, since: int) -> Pool | None:
    """``broker``'s shed pool after a swap since state version ``since``: the rows of the two
    partitions it exchanged retired, and the moves of the one now on ``broker`` added; None
    (to be built anew) if the journal no longer tells. A candidate depends on its own
    partition only, so this is the pool a rebuild would make, in the same order of
    preference, without the cost of rebuilding a broker's thousands after every swap."""
    changes = search.state.journal.changes_since(since)
    if changes is None or search.handed_over is not None:
        return None
    parts = sorted({p for p, _, _ in changes})
    for p in parts:
        pool.retire(p)
    on = np.array([p for p in parts if p in search.state.partitions_on[broker]], dtype=np.int64)
    if len(on) == 0:
        return pool
    more = shed_candidates(search, goal, broker, on)
    return pool.extended(more, search.leaving(more))


def refreshed(
    search: Engine,
    goal: BandGoal,
    broker: int,
    pools: dict[int, Pool],
    changes: list[tuple[int, int, int]] | None,
) -> dict[int, Pool]:
    """The donor pools of a fill as ``ladder.pull`` builds them anew after ``changes`` (None:
    not known, then they are built anew): only the rows of the partitions changed since a
    pool was built can differ, so the rest are kept and those rebuilt, in partition order
    like a new pool's. At large, building a donor's pool (thousands of replicas) after every
    exchange cost more than the pulls it served."""
    if changes is None:
        return {}
    state = search.state
    out = {}
    for s, pool in pools.items():
        changed = pool.changed | {p for p, _, _ in changes}
        again = [
            p
            for p in sorted(changed)
            if p in state.partitions_on[s] and not (state.replicas[p] == broker).any()
        ]
        # A donor's pool holds each partition once, in partition order: its changed rows are
        # found by bisection.
        parts = pool.cands.part
        wanted = np.fromiter(changed, dtype=np.int64, count=len(changed))
        at = np.minimum(np.searchsorted(parts, wanted), max(len(parts) - 1, 0))
        stale = at[parts[at] == wanted] if len(parts) else at[:0]
        if len(stale) == 0 and not again:
            # No row changed, and a pool's retired rows are only those of changed partitions:
            # the pool is the one built anew, every row live.
            pool.changed = set()
            out[s] = pool
            continue
        keep = np.delete(np.arange(len(parts)), stale)
        cands = Candidates.concat(
            [pool.cands.take(keep), replica_moves(state, s, np.array(again, dtype=np.int64))]
        )
        out[s] = new_pool(search, goal, cands.take(np.argsort(cands.part, kind="stable")))
    return out
