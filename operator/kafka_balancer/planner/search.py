"""Choosing and applying moves: candidates in order of preference, vetoes, destination ranking.

Rules every applied action obeys:
* a vetoing goal (every hard goal, and every goal optimised before the current one) gets
  worse on no broker;
* the current goal strictly improves on one end and gets no worse on the other (an exchange of
  two replicas or a leadership trade is one action; a trade, which leaves the leader counts
  as they were, is kept only together with the leadership it makes room for; a heavy
  leadership handed over to a follower it takes above the band is kept only together with the
  follower's shed and the broker's fill, when they leave the goal nearer its band in all (and,
  for a leader count, no vetoing band further away at any broker));
* a plan is a diff: a replica moved twice while planning moves once when executed;
* a demoted broker is never given a leadership.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import EPSILON, Goal
from kafka_balancer.model.candidates import NO_BROKER, Candidates
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.vetoes import TOLERANCE, StackedBands

# Candidates are evaluated in growing batches: the preferred few first, most of the time enough.
BATCHES = (4, 64, 1100)
CANDIDATE_LIMIT = sum(BATCHES)
MAX_SOURCES = 8
SWAP_PARTNERS = 4
SWAP_SIDE = 48
# Candidates each broker offers per round of sheds apart: its first choice is usually taken.
APART_HEAD = 1
# A broker's heaviest leaderships handed over, one at a time, when nothing else sheds it.
HAND_OVER_TRIES = 2
# A broker short of leaderships at its network-out top tries this many of its heaviest: the
# heaviest often has no follower that can shed what it adds, a lighter one does.
ROOM_TRIES = 8
# Exchanges of a light leader replica for a heavy one a broker with too many leaderships makes
# before it can hand one over.
HEAVIER_TRIES = 12
# Followers asked to trade a heavy leadership for a light one (the lightest brokers first).
TRADE_PARTNERS = 8
# What a leader carries and a follower does not: the room a trade of leaderships makes.
LEADERSHIP_RESOURCES = (int(Resource.NETWORK_OUT), int(Resource.CPU))
# What a follower carries as much as its leader.
CARRIED = np.array([int(Resource.DISK), int(Resource.NETWORK_IN)], dtype=np.int64)


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
        actions, and sorting a broker's thousands anew each time was 5 % of xlarge's profile."""
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


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Rows ``i`` of one batch of candidates by rows ``j`` of another, and which pairs pass."""

    i: IntArray
    j: IntArray
    ok: BoolArray


@dataclass
class Search:
    state: WorkingModel
    vetoes: list[Goal] = field(default_factory=list)
    later: list[Goal] = field(default_factory=list)
    actions: int = 0
    # False: leader changes only, no replica is copied (leader counts evened once every goal
    # is met, ``optimizer._even_leaders``).
    moves_data: bool = True
    # The partition whose leadership a compound handed over, while it completes.
    _handed_over: int | None = None
    # A compound is being applied (``compound``): one is never nested in another.
    _compounding: bool = False

    def __post_init__(self) -> None:
        n = self.state.n_brokers
        self._band_vetoes = StackedBands([g for g in self.vetoes if isinstance(g, BandGoal)], n)
        self._other_vetoes = [g for g in self.vetoes if not isinstance(g, BandGoal)]
        self._band_later = StackedBands([g for g in self.later if isinstance(g, BandGoal)], n, target=True)
        self._other_later = [g for g in self.later if not isinstance(g, BandGoal)]
        # Loads only move between brokers, so the mean broker load is fixed for the whole plan.
        self._norm = np.maximum(self.state.load.mean(axis=0), 1e-300)
        # The (goal, x, y) replica exchanges found impossible at state version
        # ``_known_at``: a fill or shed tries its broker's partners within its rack, then
        # the same ones among all, with nothing applied between (18,663 of 63,828 exchanges
        # asked at 200 brokers with 1,000 partitions were asked again so).
        self._no_exchange: set[tuple[int, int, int]] = set()
        self._known_at = -1
        # A broker's heaviest (lightest) replicas offered in exchanges at state version
        # ``_known_at``, by (broker, column, heaviest, rack they may go to): the broker a
        # swap fixes gives the same side to each of its partners in turn (69,604 builds at 200
        # brokers with 1,000 partitions, about half of them repeats).
        self._extremes: dict[tuple[int, int, bool, int | None], Candidates] = {}
        # Each broker's leaderships to hand over at that version, asked by the trades, the relays
        # and the exchanges of the same broker and its partners (51,468 builds there, 22,000
        # repeats).
        self._aways: dict[int, Candidates] = {}
        # The brokers whose room for leaderships (``_room_for_leaderships``) this search found
        # none of: not asked again by it. Each ask is up to 16 compounds with a follower's whole
        # shed; at 200 brokers with 1,000 partitions (a leader band no plan can meet) 1,098 asks
        # of 401 brokers × passes kept none and cost 12 of the plan's 30 CPU s; across the 128
        # other shapes and edges, 2 of 21 asks kept one.
        self._no_room: set[int] = set()

    # ---- choosing ---------------------------------------------------------------------

    def _allowed(self, cands: Candidates, dest: int | None) -> BoolArray:
        if dest is not None:
            allowed = np.zeros((len(cands), self.state.n_brokers), dtype=bool)
            allowed[:, dest] = self._allowed_at(cands, dest)
            return allowed
        state = self.state
        k = len(cands)
        free = cands.dst == NO_BROKER
        if free.all():
            allowed = ~state.holds(cands.part)
            if state.any_pinned or state.any_banned:
                allowed &= state.rack_allowed(cands.part, cands.slot)
        else:
            target = np.zeros((k, state.n_brokers), dtype=bool)
            fixed = np.nonzero(~free)[0]
            target[fixed, cands.dst[fixed]] = True
            allowed = np.where(
                free[:, None], ~state.holds(cands.part) & state.rack_allowed(cands.part, cands.slot), target
            )
        allowed &= state.active[None, :]
        if state.demoted.any():
            # A demoted broker takes no leadership, by a leader change or a leader's replica moving.
            allowed &= ~(state.demoted[None, :] & (cands.delta[:, LEADERS] > 0)[:, None])
        allowed[np.arange(k), cands.src] = False
        if self._band_vetoes and allowed.any():
            # Only the brokers some candidate may still go to are worth examining: one for a
            # leader change, most of them for a free move (then all are examined, as finding the
            # open ones costs more than it saves).
            open_to = None
            if not free.all():
                open_to = np.asarray(allowed.any(axis=0), dtype=bool)
            allowed &= self._band_vetoes.allowed(state, cands, open_to)
        for goal in self._other_vetoes:
            if not allowed.any():
                break
            allowed &= goal.kept(state, cands, TOLERANCE)
        return allowed

    def _allowed_at(self, cands: Candidates, dest: int) -> BoolArray:
        """``[K]``: ``_allowed``'s column ``dest``, the only one a search with one destination
        reads, without the others (half the choosing's time went to a fill's ``[K, B]``)."""
        state = self.state
        if not state.active[dest]:
            return np.zeros(len(cands), dtype=bool)
        free = cands.dst == NO_BROKER
        held = (state.replicas[cands.part] == dest).any(axis=1)
        allowed = np.where(
            free, ~held & state.rack_allowed_at(cands.part, cands.slot, dest), cands.dst == dest
        )
        if state.demoted[dest]:
            # A demoted broker takes no leadership, by a leader change or a leader's replica moving.
            allowed &= cands.delta[:, LEADERS] <= 0
        allowed &= cands.src != dest
        if self._band_vetoes and allowed.any():
            allowed &= self._band_vetoes.allowed_at(state, cands, dest)
        for goal in self._other_vetoes:
            if not allowed.any():
                break
            allowed &= goal.kept_at(state, cands, dest, TOLERANCE)
        return np.asarray(allowed, dtype=bool)

    def allowed(self, cands: Candidates, dest: int | None = None) -> BoolArray:
        """``[K, B]``: where each candidate may go (only ``dest``, when given) with no veto
        getting worse (and no rule broken)."""
        return self._allowed(cands, dest)

    def _later_cost(self, cands: Candidates) -> FloatArray:
        total = np.zeros((len(cands), self.state.n_brokers))
        # A candidate that changes none of their quantities (a follower's move, when only
        # LeaderDistribution is still to come) changes no band goal: 0 to the bit, uncomputed.
        if self._band_later and cands.delta[:, self._band_later.columns].any():
            total += self._band_later.total_change(self.state, cands)
        for goal in self._other_later:
            src, dst = goal.evaluate(self.state, cands, target=True)
            total += src[:, None] + dst
        return total

    def _choose(
        self,
        goal: Goal | None,
        cands: Candidates,
        dest: int | None,
        same_rack_first: bool,
        lenient: bool = False,
        order: IntArray | None = None,
        in_rack: bool = False,
    ) -> tuple[int, int] | None:
        state = self.state
        start = 0
        for size in BATCHES:
            if order is None:
                batch = cands.rows(start, start + size)
            else:
                batch = cands.take(order[start : start + size])
            start += size
            if len(batch) == 0:
                break
            allowed = self._allowed(batch, dest)
            if in_rack:
                # A leadership change copies nothing: only a replica's move is kept in its rack.
                same_rack = state.rack[None, :] == state.rack[batch.src][:, None]
                allowed &= same_rack | (batch.dst != NO_BROKER)[:, None]
            live = np.nonzero(allowed.any(axis=1))[0]
            if len(live) == 0:
                continue
            gain: FloatArray | None = None
            if goal is None:
                k = int(live[0])
                ys = np.nonzero(allowed[k])[0]
            else:
                # Only the rows some broker may still take are weighed (each row on its own):
                # after a first batch that failed, often few of a large one.
                whole = len(live) == len(batch)
                weighed = batch if whole else batch.take(live)
                ok = allowed if whole else allowed[live]
                src, dst = goal.evaluate(state, weighed, target=True)
                # The other end of the move gets no worse: in its target band, or (lenient) in the
                # goal's own band, which it may then leave its target band within.
                src_kept, dst_kept = goal.evaluate(state, weighed) if lenient else (src, dst)
                ok &= ((src < -EPSILON)[:, None] & (dst_kept <= TOLERANCE)) | (
                    (dst < -EPSILON) & (src_kept <= TOLERANCE)[:, None]
                )
                rows = np.nonzero(ok.any(axis=1))[0]
                if len(rows) == 0:
                    continue
                i = int(rows[0])
                ys = np.nonzero(ok[i])[0]
                gain = src[i] + dst[i, ys]
                k = int(live[i])
            if len(ys) == 1:
                # One destination (a fill, a leader change, an undo): nothing to rank.
                y = int(ys[0])
            else:
                one = batch.rows(k, k + 1)
                other_rack = (state.rack[ys] != state.rack[batch.src[k]]).astype(np.float64)
                later = self._later_cost(one)[0, ys]
                keys: tuple[IntArray | FloatArray | BoolArray, ...]
                if same_rack_first:
                    # A drain: its own rack first, spread over that rack by capacity (the rest of
                    # a receiving broker's load can still move elsewhere, drained replicas cannot).
                    spread = state.drained_share(one)[0, ys]
                    keys = (ys, later, spread, other_rack)
                else:
                    # The source's own rack first (cross-rack traffic is what users pay for): a
                    # move the rack can absorb stays there, even when a broker elsewhere gains
                    # more from it and that broker must then be filled from its own rack. Then a
                    # rack that must be fed from others (``_racks_fed``), then the goal's gain,
                    # then the goals to come.
                    fed = self._racks_fed(goal)
                    unfed = np.zeros(len(ys), dtype=bool) if fed is None else ~fed[state.rack[ys]]
                    keys = (ys, later, np.zeros(len(ys)) if gain is None else gain, unfed, other_rack)
                y = int(ys[np.lexsort(keys)[0]])
            k += start - size
            return (k if order is None else int(order[k])), y
        return None

    def place(
        self,
        goal: Goal | None,
        cands: Candidates,
        dest: int | None = None,
        lenient: bool = False,
        order: IntArray | None = None,
        in_rack: bool = False,
    ) -> int | None:
        """Apply the first acceptable candidate (in the given order, or of the rows ``order``
        names in that order) at its best destination; returns the partition it changed, or None
        when no candidate is acceptable. ``lenient``: the end of a move that the goal does not
        fix need only stay within the goal's band. ``in_rack``: only to a broker of the
        candidate's own rack."""
        if len(cands) == 0 or (order is not None and len(order) == 0):
            return None
        choice = self._choose(
            goal, cands, dest, same_rack_first=goal is None, lenient=lenient, order=order, in_rack=in_rack
        )
        if choice is None:
            return None
        k, y = choice
        self.state.apply(cands, k, y)
        self.actions += 1
        return int(cands.part[k])

    def place_apart(
        self, goal: Goal, cands: Candidates, in_rack: BoolArray | None = None
    ) -> tuple[int, BoolArray]:
        """Apply, in the given order, each candidate free move that is acceptable, at its best
        destination (for the ``in_rack`` ones, the best in its own rack), skipping those whose
        partition or source a move of this call touched or whose every best destination one did;
        returns how many it applied, and which candidates no broker would have taken at the start
        (refused).

        One evaluation serves them all: a move's vetoes, gain and ranking read only its own
        partition and its two brokers, which no earlier move of the call changed, so each is
        judged on the state it is applied to, as ``place`` would judge it among the brokers the
        call has not touched (one it touched may have become a better destination meanwhile)."""
        applied, refused = self._apart(goal, cands, in_order=False, in_rack=in_rack)
        return len(applied), refused

    def _apart(
        self, goal: Goal, cands: Candidates, in_order: bool, in_rack: BoolArray | None = None
    ) -> tuple[list[int], BoolArray]:
        """``place_apart``, returning the rows applied; ``in_order``: a source whose first
        acceptable candidate waits (every best destination touched) moves nothing more in this
        call, so that each source's moves keep its order of preference."""
        state = self.state
        refused = np.ones(len(cands), dtype=bool)
        done: list[int] = []
        if len(cands) == 0:
            return done, refused
        allowed = self._allowed(cands, None)
        if in_rack is not None and in_rack.any():
            allowed &= ~in_rack[:, None] | (state.rack[None, :] == state.rack[cands.src][:, None])
        src, dst = goal.evaluate(state, cands, target=True)
        ok = allowed & (
            ((src < -EPSILON)[:, None] & (dst <= TOLERANCE))
            | ((dst < -EPSILON) & (src <= TOLERANCE)[:, None])
        )
        rows = np.nonzero(ok.any(axis=1))[0]
        refused[rows] = False
        if len(rows) == 0:
            return done, refused
        later = self._later_cost(cands.take(rows))
        gain = src[rows, None] + dst[rows]
        other_rack = state.rack[None, :] != state.rack[cands.src[rows]][:, None]
        fed = self._racks_fed(goal)

        def best(fed: BoolArray | None) -> BoolArray:
            # Each row's best destinations as ``place`` ranks them, for all rows at once: the
            # acceptable brokers least on each key in turn, which tie on every key but the number.
            ties = ok[rows]
            unfed = np.zeros(state.n_brokers, dtype=bool) if fed is None else ~fed[state.rack]
            for key in (other_rack, unfed[None, :], gain, later):
                ties &= key == np.where(ties, key, np.inf).min(axis=1, keepdims=True)
            return ties

        ties = best(fed)
        untouched = np.ones(state.n_brokers, dtype=bool)
        changed: set[int] = set()
        srcs, parts = cands.src[rows].tolist(), cands.part[rows].tolist()
        for i, k in enumerate(rows.tolist()):
            x, p = srcs[i], parts[i]
            if not untouched[x] or p in changed:
                continue
            # ``place`` takes the lowest-numbered of the ties; here the lowest one no move of
            # the call touched. When every tie was touched, the move is left for a later call
            # rather than sent to a worse destination.
            open_ties = ties[i] & untouched
            y = int(open_ties.argmax())
            if not open_ties[y]:
                if in_order:
                    untouched[x] = False
                continue
            state.apply(cands, k, y)
            untouched[x] = untouched[y] = False
            changed.add(p)
            done.append(k)
            if fed is not None:
                # Gain and later costs change at the two brokers touched only, a rack's account
                # with every move across.
                now = self._racks_fed(goal)
                if now is not None and not np.array_equal(now, fed):
                    fed = now
                    ties = best(fed)
        self.actions += len(done)
        return done, refused

    def hand_over(self, cands: Candidates) -> int | None:
        """Apply the acceptable leader change (each candidate names its new leader) that costs the
        goals still to come the least, then goes to the broker leading the fewest partitions for
        its share (so that leaderships handed over one by one spread evenly while every goal is
        still within its band); returns the partition it changed, or None when none is."""
        if len(cands) == 0:
            return None
        state = self.state
        rows = np.arange(len(cands))
        allowed = self._allowed(cands, None)[rows, cands.dst]
        if not allowed.any():
            return None
        cost = self._later_cost(cands)[rows, cands.dst]
        ok = np.nonzero(allowed)[0]
        dst = cands.dst[ok]
        per_share = state.leader_count[dst] / np.maximum(state.share[dst], 1e-300)
        k = int(ok[np.lexsort((ok, per_share, cost[ok]))[0]])
        state.apply(cands, k, int(cands.dst[k]))
        self.actions += 1
        return int(cands.part[k])

    # ---- band goals: shed an over broker, fill an under broker -------------------------
    #
    # A candidate's delta depends only on its own partition's state, so the candidates of a
    # broker are built once per shed/fill and only the changed partition's rows are refreshed.

    def _place_from(
        self,
        goal: BandGoal,
        pool: Pool,
        need: float,
        dest: int | None = None,
        lenient: bool = False,
        in_rack: bool = False,
    ) -> int | None:
        across = not in_rack and (
            dest is None or bool((self.state.rack[pool.cands.src] != self.state.rack[dest]).any())
        )
        return self.place(
            goal, pool.cands, dest, lenient, pool.ordered(need, CANDIDATE_LIMIT, across), in_rack
        )

    def _pool(self, goal: BandGoal, cands: Candidates) -> Pool:
        if self._handed_over is not None:
            cands = cands.take(np.nonzero(cands.part != self._handed_over)[0])
        return Pool(cands, goal.column, self._norm, self._leaving(cands))

    def _leaving(self, cands: Candidates) -> FloatArray:
        """Per candidate move, the bytes across racks it adds if it leaves its rack: its size when
        its partition holds no more replicas in that rack than it did before the plan."""
        state = self.state
        rack = state.rack[cands.src]
        rows = state.original_replicas[cands.part]
        before = ((rows >= 0) & (state.rack[np.where(rows >= 0, rows, 0)] == rack[:, None])).sum(axis=1)
        replica = cands.dst == NO_BROKER
        return np.where(replica & (state.rack_count[cands.part, rack] <= before), state.disk[cands.part], 0.0)

    def _shed_candidates(self, goal: BandGoal, broker: int, parts: IntArray | None = None) -> Candidates:
        if not self.moves_data:
            return self.state.leadership_away(broker, parts)
        batches = [self.state.replica_moves(broker, parts)]
        if goal.affects_leadership():
            batches.insert(0, self.state.leadership_away(broker, parts))
        return Candidates.concat(batches)

    def _rack_slack(self, goal: BandGoal, over: bool) -> FloatArray:
        """``[racks]``: how much more of the goal's quantity each rack's active brokers could
        take within their bands (``over``), or give; negative, how much the rack must send to
        (take from) other racks.

        The bands, not the narrower target bands: a rack whose total fits its brokers' bands
        sends nothing across in the plan the bound counts, and one judged by the target bands
        sent whole replicas across for the last tenth of each band (racks of brokers warming
        up at 30 %: 1,031 GB across racks where 435 GB are forced, then 715 GB)."""
        state = self.state
        lo, hi = goal.band_edges(False)
        q = state.quantity(goal.column)
        slack = np.where(state.active, hi - q if over else q - lo, 0.0)
        return np.asarray(
            np.bincount(state.rack, weights=slack, minlength=len(state.rack_names)), dtype=np.float64
        )

    def _racks_fed(self, goal: Goal | None) -> BoolArray | None:
        """``[racks]``: for a disk goal (None for any other), the racks whose active brokers hold
        less than their bands' floors add up to. What they lack must come from other racks, so a
        replica that leaves its rack anyway goes to one of them first: sent to a rack with room of
        its own, it left the short rack to be fed by yet another replica across (50 brokers, two
        draining: the draining rack sent 706 GB out where 382 GB had to leave it, and the short
        rack took 601 GB where it lacked 388 GB).

        Disk only: as first written (a round reading the racks' accounts once), for every band
        goal that moves replicas (network in and replica counts too) the 80 shapes of
        ``bench_planner_shapes.py`` crossed 243 GB less, for disk alone 280 GB."""
        if not isinstance(goal, BandGoal) or goal.column != Resource.DISK:
            return None
        return np.asarray(self._rack_slack(goal, over=False) < 0, dtype=bool)

    def shed_apart(self, goal: BandGoal, brokers: list[int]) -> bool:
        """Move replicas off the over brokers ``brokers`` in rounds, each judged once: every
        broker still above its target band offers the head of its candidates (in its shed's
        order of preference), and each moves its first acceptable one at its best destination,
        unless a move of the round touched that destination or its partition (then it waits for
        the next round). A broker whose head no broker would take leaves the rounds: its shed,
        with deeper batches, exchanges and the lenient last resort, does the rest. Whether
        anything moved. A broker whose rack has room keeps its moves in the rack (the rest of
        them then go through its shed, which exchanges within the rack before crossing).

        A capacity or count goal's shed moves thousands of replicas off a few brokers; one at a
        time, each cost a whole evaluation of vetoes, gain and the goals to come."""
        state = self.state
        pools = {b: self._pool(goal, state.replica_moves(b)) for b in brokers}
        progress = False
        while pools:
            heads = []
            roomy = self._rack_slack(goal, over=True) > 0
            for b in list(pools):
                if not (goal.excess(state, b) > 0 and goal.needs_fix_at(state, b) > EPSILON):
                    del pools[b]
                    continue
                pool = pools[b]
                head = pool.ordered(goal.excess(state, b), APART_HEAD, not roomy[state.rack[b]])
                if len(head) == 0:
                    del pools[b]
                    continue
                heads.append(pool.cands.take(head))
            if not heads:
                break
            cands = Candidates.concat(heads)
            applied, refused = self._apart(goal, cands, in_order=True, in_rack=roomy[state.rack[cands.src]])
            if not applied:
                # The round's first acceptable move is always applied: none was acceptable.
                break
            for k in applied:
                pools[int(cands.src[k])].retire(int(cands.part[k]))
            progress = True
            # A broker none of whose head any broker would take leaves the rounds.
            for b in np.unique(cands.src[refused]).tolist():
                if refused[cands.src == b].all():
                    del pools[b]
        return progress

    def shed(self, goal: BandGoal, broker: int) -> bool:
        state = self.state
        progress = False
        pool: Pool | None = None
        while goal.excess(state, broker) > 0 and goal.needs_fix_at(state, broker) > EPSILON:
            if pool is None:
                pool = self._pool(goal, self._shed_candidates(goal, broker))
            excess = goal.excess(state, broker)
            # Within the broker's rack first, by a move and then by an exchange, while the rack
            # has room: a replica sent to another rack would be replaced by one coming back.
            in_rack = bool(self._rack_slack(goal, over=True)[state.rack[broker]] > 0)
            changed = self._place_from(goal, pool, excess, in_rack=in_rack)
            since = state.version
            if changed is None and in_rack:
                if self._swap_with_partners(goal, broker, over=True, in_rack=True):
                    pool, progress = self._after_swap(goal, broker, pool, since), True
                    continue
                changed = self._place_from(goal, pool, excess)
            if changed is None:
                if self._swap_with_partners(goal, broker, over=True):
                    pool, progress = self._after_swap(goal, broker, pool, since), True
                    continue
                if (goal.column == LEADERS and self._trade_leaderships(goal, broker, excess, over=True)) or (
                    goal.affects_leadership() and self._relay_leaderships(goal, broker)
                ):
                    pool, progress = None, True
                    continue
                # Last resort (a tight band, replicas that may not move): a destination may end
                # above its target band, within the goal's band.
                changed = self._place_from(goal, pool, excess, lenient=True)
                if changed is None:
                    if self._hand_over_heaviest(goal, broker) or self._heavier_leaderships(
                        goal, broker, excess
                    ):
                        pool, progress = None, True
                        continue
                    return progress
            pool.retire(changed)
            if changed in state.partitions_on[broker]:
                more = self._shed_candidates(goal, broker, np.array([changed]))
                pool = pool.extended(more, self._leaving(more))
            progress = True
        return progress

    def _after_swap(self, goal: BandGoal, broker: int, pool: Pool, since: int) -> Pool | None:
        """``broker``'s shed pool after a swap since state version ``since``: the rows of the two
        partitions it exchanged retired, and the moves of the one now on ``broker`` added; None
        (to be built anew) if the journal no longer tells. A candidate depends on its own
        partition only, so this is the pool a rebuild would make, in the same order of
        preference; a rebuild of a broker's thousands after every swap was a tenth of xlarge."""
        changes = self.state.changes_since(since)
        if changes is None or self._handed_over is not None:
            return None
        parts = sorted({p for p, _, _ in changes})
        for p in parts:
            pool.retire(p)
        on = np.array([p for p in parts if p in self.state.partitions_on[broker]], dtype=np.int64)
        if len(on) == 0:
            return pool
        more = self._shed_candidates(goal, broker, on)
        return pool.extended(more, self._leaving(more))

    def fill(self, goal: BandGoal, broker: int) -> bool:
        state = self.state
        progress = False
        pools: dict[int, Pool] = {}
        lead: Pool | None = None
        while goal.deficit(state, broker) > 0 and goal.needs_fix_at(state, broker) > EPSILON:
            need = goal.deficit(state, broker)
            changed = None
            if goal.affects_leadership():
                if lead is None:
                    lead = self._pool(goal, state.leadership_to(broker))
                changed = self._place_from(goal, lead, need, dest=broker)
                version = state.version
                if changed is None and self._relay_leaderships(goal, broker):
                    # Two leaderships moved and no data: before any replica is copied in.
                    pools = self._refreshed(goal, broker, pools, state.changes_since(version))
                    lead, progress = None, True
                    continue
            if changed is None:
                # From the broker's own rack first, by a pull and then by an exchange, while the
                # rack can spare it (as for a shed).
                in_rack = bool(self._rack_slack(goal, over=False)[state.rack[broker]] > 0)
                changed = self._pull(goal, broker, need, pools, in_rack=in_rack)
                if changed is None and in_rack:
                    version = state.version
                    if self._swap_with_partners(goal, broker, over=False, in_rack=True):
                        pools = self._refreshed(goal, broker, pools, state.changes_since(version))
                        lead, progress = None, True
                        continue
                    changed = self._pull(goal, broker, need, pools)
            if changed is None:
                version = state.version
                if self._swap_with_partners(goal, broker, over=False) or (
                    goal.column == LEADERS and self._trade_leaderships(goal, broker, need, over=False)
                ):
                    pools = self._refreshed(goal, broker, pools, state.changes_since(version))
                    lead, progress = None, True
                    continue
                # Last resort (a tight band, replicas that may not move): a source may end below
                # its target band, within the goal's band.
                if lead is not None:
                    changed = self._place_from(goal, lead, need, dest=broker, lenient=True)
                if changed is None:
                    changed = self._pull(goal, broker, need, pools, lenient=True)
                if changed is None:
                    if self._room_for_leaderships(goal, broker):
                        pools, lead, progress = {}, None, True
                        continue
                    return progress
            for pool in pools.values():
                pool.retire(changed)
            if lead is not None:
                lead.retire(changed)
            progress = True
        return progress

    def _refreshed(
        self, goal: BandGoal, broker: int, pools: dict[int, Pool], changes: list[tuple[int, int, int]] | None
    ) -> dict[int, Pool]:
        """The donor pools of a fill as ``_pull`` would build them anew after ``changes`` (None:
        not known, then they are built anew): only the rows of the partitions changed since a
        pool was built can differ, so the rest are kept and those rebuilt, in partition order
        like a new pool's. At large, building a donor's pool (thousands of replicas) after every
        exchange cost more than the pulls it served."""
        if changes is None:
            return {}
        state = self.state
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
                [pool.cands.take(keep), state.replica_moves(s, np.array(again, dtype=np.int64))]
            )
            out[s] = self._pool(goal, cands.take(np.argsort(cands.part, kind="stable")))
        return out

    def _trade_leaderships(self, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
        """Hand over (``over``) or take one more leadership after trading leaderships with a
        follower.

        A broker short of leaderships is often at the top of the bands of what leadership
        carries (network out, cpu): it took the heaviest leaderships first while those goals
        filled it. It hands a heavy leadership to a follower and takes a light one that
        follower leads, then takes one more in the room made. A broker with too many is often
        at the bottom of those bands (an empty broker filled to them with light leaderships):
        it takes a heavy leadership and hands over a light one, then hands over one more. Both
        keep their leader counts through the trade and every veto is checked on the pair;
        without the step that follows the trade is undone, so every applied step still
        improves the leader count."""
        state = self.state
        if state.demoted[broker]:
            return False
        columns = np.array(LEADERSHIP_RESOURCES, dtype=np.int64)
        norm = self._norm[columns]
        away = self._away(broker)
        heaviness = (state.load[:, columns] / norm).sum(axis=1)
        partners = [int(y) for y in np.unique(away.dst) if not state.demoted[y]]
        # The partner takes the heavy leadership: the lightest first; or gives it: the heaviest.
        partners.sort(key=lambda y: (-heaviness[y] if over else heaviness[y], y))
        for y in partners[:TRADE_PARTNERS]:
            give = away.take(np.nonzero(away.dst == y)[0])
            back = self._away(y)
            take = back.take(np.nonzero(back.dst == broker)[0])
            if len(take) == 0:
                continue
            # How much the trade takes off the broker's leadership resources (over: adds).
            relief = ((give.delta[:, None, columns] - take.delta[None, :, columns]) / norm).sum(axis=2)
            if over:
                relief = -relief
            ok = relief > EPSILON
            for veto in self.vetoes:
                if not ok.any():
                    break
                dx, dy = veto.evaluate_pairs(state, give, take, broker, y)
                ok &= (dx <= TOLERANCE) & (dy <= TOLERANCE)
            if not ok.any():
                continue
            i, j = np.unravel_index(int(np.argmax(np.where(ok, relief, -np.inf))), ok.shape)
            given, taken = int(give.part[i]), int(take.part[j])
            state.apply(give, int(i), y)
            state.apply(take, int(j), broker)
            if self._one_more(goal, broker, need, over):
                self.actions += 2
                return True
            for part, leader in ((taken, y), (given, broker)):
                undo = state.leader_changes(
                    np.array([part], dtype=np.int64), np.array([leader], dtype=np.int64)
                )
                state.apply(undo, 0, leader)
        return self._relay_trade(goal, broker, need, over)

    def _hand_over_heaviest(self, goal: BandGoal, broker: int) -> bool:
        """Hand one of ``broker``'s heaviest leaderships to its follower even though that takes
        the follower above the goal's band, then shed the follower and fill ``broker`` back up;
        kept only when the goal's brokers end nearer its band in all, else undone.

        A broker filled from empty may take a single leadership heavier than the band of what
        leadership carries is wide (the leader replica of a busy partition, moved in for its
        bytes): no broker can take it alone, and the broker can then take no other leadership.
        Its follower, a full broker, can make room by handing lighter leaderships to others."""
        if self._compounding or goal.column == LEADERS or not goal.affects_leadership():
            return False
        away = self._away(broker)
        heaviest = np.argsort(-away.delta[:, goal.column], kind="stable")[:HAND_OVER_TRIES]
        allowed = self._allowed(away.take(heaviest), None)
        for row, k in enumerate(heaviest.tolist()):
            if allowed[row, away.dst[k]] and self.compound(
                partial(self._hand_over_and_refill, goal, away, k)
            ):
                return True
        return False

    def _hand_over_and_refill(self, goal: BandGoal, away: Candidates, k: int) -> bool:
        """``_hand_over_heaviest``'s compound: whether to keep it."""
        state = self.state
        broker, follower = int(away.src[k]), int(away.dst[k])
        before = float(goal.needs_fix(state).sum())
        self._hand_over_one(away, k)
        self.shed(goal, follower)
        if goal.deficit(state, broker) > 0:
            self.fill(goal, broker)
        return float(goal.needs_fix(state).sum()) < before - EPSILON

    def _hand_over_one(self, away: Candidates, k: int) -> None:
        """Hand over leadership ``k`` of ``away``; neither the follower's shed nor the broker's
        fill that follow in a compound may hand it straight back."""
        self.state.apply(away, k, int(away.dst[k]))
        self.actions += 1
        self._handed_over = int(away.part[k])

    def _room_for_leaderships(self, goal: BandGoal, broker: int) -> bool:
        """A broker short of leaderships at the top of a vetoing band of what leadership carries
        hands its heaviest leadership in it to the follower, which sheds lighter ones to others
        within that band, and takes light ones in the room made; kept only when the leader counts
        end nearer their band in all and no vetoing band is further away at any broker, else
        undone. Trading one heavy leadership for one light one with a single follower stops
        when no follower leads a light partition the broker follows."""
        state = self.state
        if self._compounding or goal.column != LEADERS or state.demoted[broker] or broker in self._no_room:
            return False
        bands = [g for g in self.vetoes if isinstance(g, BandGoal)]
        full = [g for g in bands if g.column in LEADERSHIP_RESOURCES and g.excess(state, broker) > -EPSILON]
        for veto in full:
            away = self._away(broker)
            heaviest = np.argsort(-away.delta[:, veto.column], kind="stable")[:ROOM_TRIES]
            for k in heaviest.tolist():
                follower = int(away.dst[k])
                if state.demoted[follower]:
                    # A demoted broker takes no leadership, and its open bands would not tell.
                    continue
                if self.compound(partial(self._make_room, goal, veto, bands, away, k)):
                    return True
        self._no_room.add(broker)
        return False

    def _make_room(
        self, goal: BandGoal, veto: BandGoal, bands: list[BandGoal], away: Candidates, k: int
    ) -> bool:
        """``_room_for_leaderships``' compound: whether to keep it."""
        state = self.state
        leaders_before = float(goal.needs_fix(state).sum())
        vetoes_before = [g.needs_fix(state) for g in bands]
        follower = int(away.dst[k])
        self._hand_over_one(away, k)
        self.shed(veto, follower)
        if veto.needs_fix(state)[follower] > vetoes_before[bands.index(veto)][follower] + EPSILON:
            # The follower could not shed what it took. The compound is then undone unless the
            # broker's fill takes enough of the follower's load back, which it did not once in
            # 695 such tries (200 brokers, 1,000 partitions), each costing a fill's search.
            return False
        self.fill(goal, int(away.src[k]))
        kept = all(
            (g.needs_fix(state) <= before + EPSILON).all()
            for g, before in zip(bands, vetoes_before, strict=True)
        )
        return kept and float(goal.needs_fix(state).sum()) < leaders_before - EPSILON

    def _heavier_leaderships(self, goal: BandGoal, broker: int, need: float) -> bool:
        """A broker with too many leaderships at the bottom of a vetoing band of what leadership
        carries exchanges light leader replicas for heavy ones (of about their size) with the
        brokers leading the heaviest partitions, up to ``HEAVIER_TRIES`` of them, until it can
        hand over one more leadership in the room made; undone when it cannot. Each exchange
        keeps both leader counts and every veto.

        An empty broker filled to its replica count with light replicas, then to its network-out
        band with their leaderships, follows too few partitions to trade leaderships with."""
        state = self.state
        if self._compounding or goal.column != LEADERS or state.demoted[broker] or not self.moves_data:
            return False
        low = [
            g
            for g in self.vetoes
            if isinstance(g, BandGoal)
            and g.column in LEADERSHIP_RESOURCES
            and g.deficit(state, broker) > -EPSILON
        ]
        if not low:
            return False
        columns = np.array([g.column for g in low], dtype=np.int64)
        return self.compound(partial(self._exchanges_for_heavier, goal, broker, need, columns))

    def _exchanges_for_heavier(self, goal: BandGoal, broker: int, need: float, columns: IntArray) -> bool:
        """``_heavier_leaderships``' compound: whether to keep it."""
        for _ in range(HEAVIER_TRIES):
            if not self._exchange_for_heavier(broker, columns):
                return False
            if self._one_more(goal, broker, need, over=True):
                return True
        return False

    def compound(self, actions: Callable[[], bool]) -> bool:
        """Apply ``actions`` (which say whether what they did is to be kept) as one: kept whole or
        undone whole, the count of applied actions with them."""
        count = self.actions
        self.state.begin()
        self._compounding = True
        try:
            keep = actions()
        finally:
            self._compounding, self._handed_over = False, None
        if keep:
            self.state.commit()
            return True
        self.state.undo()
        self.actions = count
        return False

    def _exchange_for_heavier(self, broker: int, columns: IntArray) -> bool:
        """Exchange one of ``broker``'s lightest leader replicas for the leader replica of a
        partition heavier in ``columns`` (what leadership carries that ``broker`` lacks), with
        the first broker of those leading the heaviest partitions that has a pair every veto
        allows: the pair relieving most."""
        state = self.state
        norm = self._norm[columns]

        def led(b: int) -> tuple[Candidates, FloatArray]:
            moves = state.replica_moves(b)
            moves = moves.take(np.nonzero(moves.delta[:, LEADERS] > 0)[0])
            return moves, (moves.delta[:, columns] / norm).sum(axis=1)

        mine, weight = led(broker)
        give = mine.take(np.argsort(weight, kind="stable")[:SWAP_SIDE])
        heaviness = (state.load[:, columns] / norm).sum(axis=1)
        heaviness[broker] = -np.inf
        partners = [
            int(y) for y in np.argsort(-heaviness, kind="stable") if state.active[y] and not state.demoted[y]
        ]
        for y in partners[:TRADE_PARTNERS]:
            theirs, weight = led(y)
            # The heaviest for what every replica carries (disk, network in): a leadership much
            # heavier than the light one given, of a partition about as large and as busy, keeps
            # both brokers within those bands.
            carried = (theirs.delta[:, CARRIED] / self._norm[CARRIED]).sum(axis=1)
            take = theirs.take(np.argsort(-weight / np.maximum(carried, EPSILON), kind="stable")[:SWAP_SIDE])
            if len(give) == 0 or len(take) == 0:
                continue
            relief = ((take.delta[None, :, columns] - give.delta[:, None, columns]) / norm).sum(axis=2)
            ok = self._pairs_allowed(give, take, broker, y, relief > EPSILON)
            if not ok.any():
                continue
            i, j = np.unravel_index(int(np.argmax(np.where(ok, relief, -np.inf))), ok.shape)
            state.apply(give, int(i), y)
            state.apply(take, int(j), broker)
            self.actions += 2
            return True
        return False

    def _one_more(self, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
        """Hand over (``over``) or take one leadership; whether one moved."""
        if over:
            step = self._place_from(goal, self._pool(goal, self._shed_candidates(goal, broker)), need)
        else:
            pool = self._pool(goal, self.state.leadership_to(broker))
            step = self._place_from(goal, pool, need, dest=broker)
        return step is not None

    def _relay_leaderships(self, goal: BandGoal, broker: int) -> bool:
        """Take a leadership from one broker and hand one to another at once, so that ``broker``
        gets nearer the goal's band while what else leadership carries stays within its vetoes.

        A broker short of cpu at the top of its network-out band (in a rack with more brokers
        than its share of replicas fills: few followers, so its cpu must come from leaderships)
        can take no leadership alone, and the partners of an exchange share only a handful of
        partitions with it. The relay's ends are any leader of a partition ``broker`` follows
        and any follower of one it leads: it takes a leadership heavy in the goal's resource and
        light in the others, and hands over one the other way round."""
        relay = self._relays(goal, broker) if goal.column != LEADERS else None
        if relay is None:
            return False
        into, out, pairs = relay
        change = into.delta[pairs.i, goal.column][:, None] - out.delta[pairs.j, goal.column][None, :]
        q = float(self.state.quantity(goal.column)[broker])
        lo, hi = (edge[broker] for edge in goal.band_edges(True))
        before = max(q - hi, 0.0) + max(lo - q, 0.0)
        gain = before - (np.maximum(q + change - hi, 0.0) + np.maximum(lo - q - change, 0.0))
        ok = pairs.ok & (gain > EPSILON * float(goal.scale[broker]))
        if not ok.any():
            return False
        i, j = np.unravel_index(int(np.argmax(np.where(ok, gain, -np.inf))), ok.shape)
        self._apply_relay(into, out, int(pairs.i[i]), int(pairs.j[j]), broker)
        return True

    def _relay_trade(self, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
        """``_trade_leaderships`` through a relay: the heavy leadership goes to a follower and the
        light one comes from a leader, any two brokers, then ``broker`` takes (or hands over) one
        more; undone when it cannot."""
        relay = self._relays(goal, broker)
        if relay is None:
            return False
        into, out, pairs = relay
        columns = np.array(LEADERSHIP_RESOURCES, dtype=np.int64)
        norm = self._norm[columns]
        weight_in = (into.delta[pairs.i][:, columns] / norm).sum(axis=1)
        weight_out = (out.delta[pairs.j][:, columns] / norm).sum(axis=1)
        relief = weight_out[None, :] - weight_in[:, None]
        if over:
            relief = -relief
        ok = pairs.ok & (relief > EPSILON)
        if not ok.any():
            return False
        i, j = np.unravel_index(int(np.argmax(np.where(ok, relief, -np.inf))), ok.shape)
        taken, given = int(into.part[pairs.i[i]]), int(out.part[pairs.j[j]])
        leader = int(into.src[pairs.i[i]])
        self._apply_relay(into, out, int(pairs.i[i]), int(pairs.j[j]), broker)
        if self._one_more(goal, broker, need, over):
            return True
        state = self.state
        for part, back in ((taken, leader), (given, broker)):
            undo = state.leader_changes(np.array([part], dtype=np.int64), np.array([back], dtype=np.int64))
            state.apply(undo, 0, back)
        self.actions -= 2
        return False

    def _relays(self, goal: BandGoal, broker: int) -> tuple[Candidates, Candidates, _Pairs] | None:
        """The leader changes into ``broker`` (``into``) and out of it (``out``) whose other
        ends take them with every veto and the goal no worse there, and which pairs of them
        (one of each, with two different other ends) leave every veto no worse at ``broker``,
        all judged on the state before both; None when there is no such pair."""
        state = self.state
        if state.demoted[broker] or not self._band_vetoes:
            return None
        into, out = state.leadership_to(broker), self._away(broker)
        out = out.take(np.nonzero(~state.demoted[out.dst])[0])
        if len(into) == 0 or len(out) == 0:
            return None
        least, most = self._band_vetoes.rooms(state)
        columns = self._band_vetoes.columns
        d_in, d_out = into.delta[:, columns].T, out.delta[:, columns].T
        # Each other end on its own: the leader giving up (−d) and the follower taking (+d).
        leader, follower = into.src, out.dst
        in_ok = ((-d_in >= least[:, leader]) & (-d_in <= most[:, leader])).all(axis=0)
        out_ok = ((d_out >= least[:, follower]) & (d_out <= most[:, follower])).all(axis=0)
        for veto in self._other_vetoes:
            in_ok &= veto.kept(state, into, TOLERANCE)[np.arange(len(into)), broker]
            out_ok &= veto.kept(state, out, TOLERANCE)[np.arange(len(out)), follower]
        at_leader, _ = goal.evaluate(state, into, target=True)
        _, at_follower = goal.evaluate(state, out, target=True)
        in_ok &= at_leader <= TOLERANCE
        out_ok &= at_follower[np.arange(len(out)), follower] <= TOLERANCE
        i_rows, j_rows = np.nonzero(in_ok)[0], np.nonzero(out_ok)[0]
        if len(i_rows) == 0 or len(j_rows) == 0:
            return None
        # At ``broker``: +d_in − d_out within its rooms for every veto.
        d = d_in[:, i_rows, None] - d_out[:, None, j_rows]
        ok = ((d >= least[:, broker, None, None]) & (d <= most[:, broker, None, None])).all(axis=0)
        ok &= leader[i_rows][:, None] != follower[j_rows][None, :]
        return into, out, _Pairs(i_rows, j_rows, ok)

    def _apply_relay(self, into: Candidates, out: Candidates, i: int, j: int, broker: int) -> None:
        self.state.apply(into, i, broker)
        self.state.apply(out, j, int(out.dst[j]))
        self.actions += 2

    def _pull(
        self,
        goal: BandGoal,
        broker: int,
        need: float,
        pools: dict[int, Pool],
        lenient: bool = False,
        in_rack: bool = False,
    ) -> int | None:
        """Move one replica onto ``broker``, from its own rack when a broker there can give
        (``in_rack``: only from its own rack)."""
        if not self.moves_data:
            return None
        state = self.state
        surplus = goal.surplus(state)
        surplus[broker] = -np.inf
        if in_rack:
            surplus[state.rack != state.rack[broker]] = -np.inf
        other_rack = state.rack != state.rack[broker]
        order = np.lexsort((np.arange(state.n_brokers), -surplus, other_rack))
        # Only brokers with something to give: a rack of more than MAX_SOURCES brokers with
        # nothing to give must not hide the other racks' donors.
        sources = [int(s) for s in order[surplus[order] > EPSILON]]
        for s in sources[:MAX_SOURCES]:
            if s not in pools:
                parts = state.parts_on(s)
                parts = parts[(state.replicas[parts] != broker).all(axis=1)]
                pools[s] = self._pool(goal, state.replica_moves(s, parts))
            changed = self._place_from(goal, pools[s], need, dest=broker, lenient=lenient)
            if changed is not None:
                return changed
        return None

    # ---- swaps: when a one-way move cannot fit --------------------------------------

    def _swap_with_partners(self, goal: BandGoal, broker: int, over: bool, in_rack: bool = False) -> bool:
        """``in_rack``: replicas exchanged with brokers of ``broker``'s rack only, and no
        leadership (a leadership exchange copies nothing, it is tried in any case after)."""
        state = self.state
        relative = state.quantity(goal.column) / goal.scale
        furthest = relative if over else -relative
        if goal.affects_leadership() and not in_rack:
            # A leadership moves no data and leaves every replica in its rack, so the partners
            # are those furthest the other way, whatever their rack: a rack whose brokers all
            # sit at one end of the band (more brokers than its share of replicas fills) has no
            # partner for it inside.
            for x, y in self._partners(broker, over, np.lexsort((np.arange(state.n_brokers), furthest))):
                if self._exchange_leaderships(goal, x, y):
                    return True
        if not self.moves_data:
            return False
        # Partners with room first (a rack whose brokers are all over the band has none for
        # another), then same-rack ones first: with one replica per rack, only they can swap
        # rack-aware.
        lo, hi = goal.band_edges(True)
        q = state.quantity(goal.column)
        no_room = (q >= hi) if over else (q <= lo)
        other_rack = state.rack != state.rack[broker]
        ranked = np.lexsort((furthest, other_rack, no_room))
        if in_rack:
            ranked = ranked[~other_rack[ranked]]
        pairs = self._partners(broker, over, ranked)
        if not in_rack:
            # Then the other racks' first partners: the brokers of a rack with room may all be
            # unable to take what this broker gives (at its replica-count floor, a small broker
            # of a rack that must send load to larger ones can only exchange with them).
            across = self._partners(broker, over, ranked[other_rack[ranked]])
            pairs += [pair for pair in across if pair not in pairs]
        return any(self._exchange_replicas(goal, x, y) for x, y in pairs)

    def _partners(self, broker: int, over: bool, ranked: IntArray) -> list[tuple[int, int]]:
        """The first ``SWAP_PARTNERS`` active brokers of ``ranked`` but ``broker``, each as (the
        broker giving the heavier side, the one giving the lighter)."""
        active = self.state.active
        partners = [int(b) for b in ranked if b != broker and active[b]][:SWAP_PARTNERS]
        return [(broker, p) if over else (p, broker) for p in partners]

    def _exchange_leaderships(self, goal: BandGoal, x: int, y: int) -> bool:
        """Exchange a leadership ``x`` holds for a lighter one ``y`` holds, each to the other."""
        column = goal.column
        away, back = self._away(x), self._away(y)
        give = away.take(np.nonzero(away.dst == y)[0])
        take = back.take(np.nonzero(back.dst == x)[0])
        give = give.take(np.argsort(-give.delta[:, column], kind="stable")[:SWAP_SIDE])
        take = take.take(np.argsort(take.delta[:, column], kind="stable")[:SWAP_SIDE])
        return self.exchange(goal, give, take, x, y)

    def _exchange_replicas(self, goal: BandGoal, x: int, y: int) -> bool:
        """Exchange a replica of ``x`` for a lighter one of ``y``: between racks, only of
        partitions the other rack may take (the heaviest of a broker often all have a replica
        there already, once that rack's brokers were filled with them)."""
        state, column = self.state, goal.column
        self._fresh()
        key = (id(goal), x, y)
        if key in self._no_exchange:
            return False
        across = state.rack[x] != state.rack[y]
        give = self._extreme(x, column, True, int(state.rack[y]) if across else None)
        take = self._extreme(y, column, False, int(state.rack[x]) if across else None)
        if self.exchange(goal, give, take, x, y):
            return True
        self._no_exchange.add(key)
        return False

    def _fresh(self) -> None:
        """Forget what was found or built at an earlier state version."""
        if self._known_at != self.state.version:
            self._no_exchange, self._extremes, self._aways = set(), {}, {}
            self._known_at = self.state.version

    def _away(self, broker: int) -> Candidates:
        """``leadership_away(broker)``, built once per state version."""
        self._fresh()
        found = self._aways.get(broker)
        if found is None:
            found = self.state.leadership_away(broker)
            self._aways[broker] = found
        return found

    def _extreme(self, broker: int, column: int, largest: bool, into_rack: int | None) -> Candidates:
        """``extreme_replica_moves`` of ``SWAP_SIDE``, built once per state version."""
        self._fresh()
        key = (broker, column, largest, into_rack)
        found = self._extremes.get(key)
        if found is None:
            found = self.state.extreme_replica_moves(broker, column, SWAP_SIDE, largest, into_rack)
            self._extremes[key] = found
        return found

    def exchange(
        self, goal: Goal, give: Candidates, take: Candidates, x: int, y: int, across: bool = False
    ) -> bool:
        """Apply the acceptable pair (``give[i]`` from x to y, ``take[j]`` from y to x together)
        that improves ``goal`` the most per byte moved (``across``: per byte moved and byte
        copied across racks, as a move to another rack is ranked); whether there was one."""
        state = self.state
        if len(give) == 0 or len(take) == 0:
            return False
        # The goal's own verdict first: it is one array sum, the rules and vetoes a dozen, and
        # it rules out every pair of two exchanges in five asked of a broker hard to fix.
        dx, dy = goal.evaluate_pairs(state, give, take, x, y, target=True)
        ok = ((dx < -EPSILON) & (dy <= TOLERANCE)) | ((dy < -EPSILON) & (dx <= TOLERANCE))
        if not ok.any():
            return False
        ok = self._pairs_allowed(give, take, x, y, ok)
        if not ok.any():
            return False
        gain = -(dx + dy)
        give_cost, take_cost = give.cost, take.cost
        if across:
            give_cost, take_cost = give_cost + self._leaving(give), take_cost + self._leaving(take)
        cost = give_cost[:, None] + take_cost[None, :]
        i, j = np.nonzero(ok)
        best = np.lexsort((i, j, -gain[i, j], cost[i, j] / gain[i, j]))[0]
        state.apply(give, int(i[best]), y)
        state.apply(take, int(j[best]), x)
        self.actions += 2
        return True

    def pairs_allowed(self, give: Candidates, take: Candidates, x: int, y: int) -> BoolArray:
        """``[I, J]``: whether ``give[i]`` going from x to y and ``take[j]`` from y to x together
        break no rule and worsen no veto at x or at y."""
        return self._pairs_allowed(give, take, x, y, np.ones((len(give), len(take)), dtype=bool))

    def _pairs_allowed(self, give: Candidates, take: Candidates, x: int, y: int, ok: BoolArray) -> BoolArray:
        """``[I, J]``: of the pairs ``ok`` names, those where ``give[i]`` going from x to y and
        ``take[j]`` from y to x together break no rule and worsen no veto at x or at y."""
        state = self.state
        if (give.dst == NO_BROKER).all():
            give_ok = ~state.holds(give.part)[:, y] & state.rack_allowed(give.part, give.slot)[:, y]
            take_ok = ~state.holds(take.part)[:, x] & state.rack_allowed(take.part, take.slot)[:, x]
            ok = ok & give_ok[:, None] & take_ok[None, :]
        if state.demoted[y]:
            ok &= (give.delta[:, LEADERS] <= 0)[:, None]
        if state.demoted[x]:
            ok &= (take.delta[:, LEADERS] <= 0)[None, :]
        if self._band_vetoes and ok.any():
            ok &= self._band_vetoes.pair_allowed(state, give, take, x, y)
        for veto in self._other_vetoes:
            if not ok.any():
                break
            dx, dy = veto.evaluate_pairs(state, give, take, x, y)
            ok &= (dx <= TOLERANCE) & (dy <= TOLERANCE)
        return ok
