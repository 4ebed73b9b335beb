"""The search's engine: choosing an acceptable move among candidates and applying it.

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

The rest of the search builds on this engine: ``pool`` (candidate pools), ``swaps``
(exchanges), ``trades`` (leadership trades, hand-overs and relays) and ``ladder`` (the shed
and fill ladders); ``search.Search`` puts them together. docs/how-a-plan-is-made.md names
the terms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import EPSILON, Goal
from kafka_balancer.model.candidate_moves import extreme_replica_moves, leadership_away
from kafka_balancer.model.candidates import NO_BROKER, Candidates
from kafka_balancer.model.destinations import drained_share, holds, rack_allowed, rack_allowed_at
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.vetoes import TOLERANCE, StackedBands

# Candidates are evaluated in growing batches: the preferred few first, most of the time enough.
BATCHES = (4, 64, 1100)
# Replicas a broker offers to one side of an exchange (its heaviest, or its lightest).
SWAP_SIDE = 48


@dataclass
class Engine:
    state: WorkingModel
    vetoes: list[Goal] = field(default_factory=list)
    later: list[Goal] = field(default_factory=list)
    actions: int = 0
    # False: leader changes only, no replica is copied (leader counts evened once every goal
    # is met, ``optimizer._even_leaders``).
    moves_data: bool = True
    # The partition whose leadership a compound handed over, while it completes.
    handed_over: int | None = field(default=None, init=False)
    # A compound is being applied (``compound``): one is never nested in another.
    compounding: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        n = self.state.n_brokers
        self.band_vetoes = StackedBands([g for g in self.vetoes if isinstance(g, BandGoal)], n)
        self.other_vetoes = [g for g in self.vetoes if not isinstance(g, BandGoal)]
        self._band_later = StackedBands([g for g in self.later if isinstance(g, BandGoal)], n, target=True)
        self._other_later = [g for g in self.later if not isinstance(g, BandGoal)]
        # Loads only move between brokers, so the mean broker load is fixed for the whole plan.
        self.norm = np.maximum(self.state.load.mean(axis=0), 1e-300)
        # The (goal, x, y) replica exchanges found impossible at state version
        # ``_known_at``: a fill or shed tries its broker's partners within its rack, then
        # the same ones among all, with nothing applied between, so many are asked twice
        # (tests/unit/search/test_exchange_memo.py).
        self._no_exchange: set[tuple[int, int, int]] = set()
        self._known_at = -1
        # A broker's heaviest (lightest) replicas offered in exchanges at state version
        # ``_known_at``, by (broker, column, heaviest, rack they may go to): the broker a
        # swap fixes gives the same side to each of its partners in turn.
        self._extremes: dict[tuple[int, int, bool, int | None], Candidates] = {}
        # Each broker's leaderships to hand over at that version, asked by the trades, the relays
        # and the exchanges of the same broker and its partners.
        self._aways: dict[int, Candidates] = {}
        # The brokers whose room for leaderships (``trades.room_for_leaderships``) this search found
        # none of: not asked again by it. Each ask is up to ``ROOM_TRIES`` compounds per full
        # band, each with a follower's whole shed; where a leader band cannot be met, asking the
        # same brokers again pass after pass kept nothing and took much of the plan's time, and
        # elsewhere an ask rarely keeps one.
        self.no_room: set[int] = set()

    def allowed(self, cands: Candidates, dest: int | None = None, in_rack: bool = False) -> BoolArray:
        """``[K, B]``: where each candidate may go (only ``dest``, when given) with no veto
        getting worse (and no rule broken); ``in_rack``: a replica's move only within its
        rack."""
        if dest is not None:
            allowed = np.zeros((len(cands), self.state.n_brokers), dtype=bool)
            allowed[:, dest] = self._allowed_at(cands, dest)
            return allowed
        state = self.state
        k = len(cands)
        free = cands.dst == NO_BROKER
        if free.all():
            allowed = ~holds(state, cands.part)
            if state.any_pinned or state.any_banned:
                allowed &= rack_allowed(state, cands.part, cands.slot)
        else:
            target = np.zeros((k, state.n_brokers), dtype=bool)
            fixed = np.nonzero(~free)[0]
            target[fixed, cands.dst[fixed]] = True
            allowed = np.where(
                free[:, None], ~holds(state, cands.part) & rack_allowed(state, cands.part, cands.slot), target
            )
        allowed &= state.active[None, :]
        if state.demoted.any():
            # A demoted broker takes no leadership, by a leader change or a leader's replica moving.
            allowed &= ~(state.demoted[None, :] & (cands.delta[:, LEADERS] > 0)[:, None])
        allowed[np.arange(k), cands.src] = False
        if in_rack:
            # A leadership change copies nothing: only a replica's move is kept in its rack.
            allowed &= (state.rack[None, :] == state.rack[cands.src][:, None]) | ~free[:, None]
        if self.band_vetoes and allowed.any():
            # Only the brokers some candidate may still go to are worth examining: one for a
            # leader change, a rack for a move within it, most of them for a free move (then
            # all are examined, as finding the open ones costs more than it saves).
            open_to = None
            if in_rack or not free.all():
                open_to = np.asarray(allowed.any(axis=0), dtype=bool)
            allowed &= self.band_vetoes.allowed(state, cands, open_to)
        for goal in self.other_vetoes:
            if not allowed.any():
                break
            allowed &= goal.kept(state, cands, TOLERANCE)
        return allowed

    def _allowed_at(self, cands: Candidates, dest: int) -> BoolArray:
        """``[K]``: ``allowed``'s column ``dest``, the only one a search with one destination
        reads, without the others (a fill's ``[K, B]`` took much of the choosing's time)."""
        state = self.state
        if not state.active[dest]:
            return np.zeros(len(cands), dtype=bool)
        free = cands.dst == NO_BROKER
        held = (state.replicas[cands.part] == dest).any(axis=1)
        allowed = np.where(
            free, ~held & rack_allowed_at(state, cands.part, cands.slot, dest), cands.dst == dest
        )
        if state.demoted[dest]:
            # A demoted broker takes no leadership, by a leader change or a leader's replica moving.
            allowed &= cands.delta[:, LEADERS] <= 0
        allowed &= cands.src != dest
        if self.band_vetoes and allowed.any():
            allowed &= self.band_vetoes.allowed_at(state, cands, dest)
        for goal in self.other_vetoes:
            if not allowed.any():
                break
            allowed &= goal.kept_at(state, cands, dest, TOLERANCE)
        return np.asarray(allowed, dtype=bool)

    def later_cost(self, cands: Candidates) -> FloatArray:
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
            allowed = self.allowed(batch, dest, in_rack and dest is None)
            if in_rack and dest is not None:
                allowed[:, dest] &= (state.rack[dest] == state.rack[batch.src]) | (batch.dst != NO_BROKER)
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
                later = self.later_cost(one)[0, ys]
                keys: tuple[IntArray | FloatArray | BoolArray, ...]
                if same_rack_first:
                    # A drain: its own rack first, spread over that rack by capacity (the rest of
                    # a receiving broker's load can still move elsewhere, drained replicas cannot).
                    spread = drained_share(state, one)[0, ys]
                    keys = (ys, later, spread, other_rack)
                else:
                    # The source's own rack first (cross-rack traffic is what users pay for): a
                    # move the rack can absorb stays there, even when a broker elsewhere gains
                    # more from it and that broker must then be filled from its own rack. Then a
                    # rack that must be fed from others (``racks_fed``), then the goal's gain,
                    # then the goals to come.
                    fed = self.racks_fed(goal)
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
        applied, refused = self.apart(goal, cands, in_order=False, in_rack=in_rack)
        return len(applied), refused

    def apart(
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
        allowed = self.allowed(cands, None)
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
        later = self.later_cost(cands.take(rows))
        gain = src[rows, None] + dst[rows]
        other_rack = state.rack[None, :] != state.rack[cands.src[rows]][:, None]
        fed = self.racks_fed(goal)

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
                now = self.racks_fed(goal)
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
        allowed = self.allowed(cands, None)[rows, cands.dst]
        if not allowed.any():
            return None
        cost = self.later_cost(cands)[rows, cands.dst]
        ok = np.nonzero(allowed)[0]
        dst = cands.dst[ok]
        per_share = state.leader_count[dst] / np.maximum(state.share[dst], 1e-300)
        k = int(ok[np.lexsort((ok, per_share, cost[ok]))[0]])
        state.apply(cands, k, int(cands.dst[k]))
        self.actions += 1
        return int(cands.part[k])

    def compound(self, actions: Callable[[], bool]) -> bool:
        """Apply ``actions`` (which say whether what they did is to be kept) as one: kept whole or
        undone whole, the count of applied actions with them."""
        count = self.actions
        self.state.journal.begin()
        self.compounding = True
        try:
            keep = actions()
        finally:
            self.compounding, self.handed_over = False, None
        if keep:
            self.state.journal.commit()
            return True
        self.state.undo()
        self.actions = count
        return False

    def rack_slack(self, goal: BandGoal, over: bool) -> FloatArray:
        """``[racks]``: how much more of the goal's quantity each rack's active brokers could
        take within their bands (``over``), or give; negative, how much the rack must send to
        (take from) other racks.

        The bands, not the narrower target bands: a rack whose total fits its brokers' bands
        sends nothing across in the plan the bound counts, and one judged by the target bands
        sent whole replicas across for the last tenth of each band, far more than the bytes
        forced across (tests/unit/planner/test_rack_with_room_keeps_its_moves.py)."""
        state = self.state
        lo, hi = goal.band_edges(False)
        q = state.quantity(goal.column)
        slack = np.where(state.active, hi - q if over else q - lo, 0.0)
        return np.asarray(
            np.bincount(state.rack, weights=slack, minlength=len(state.rack_names)), dtype=np.float64
        )

    def racks_fed(self, goal: Goal | None) -> BoolArray | None:
        """``[racks]``: for a disk goal (None for any other), the racks whose active brokers hold
        less than their bands' floors add up to. What they lack must come from other racks, so a
        replica that leaves its rack anyway goes to one of them first: sent to a rack with room of
        its own, it left the short rack to be fed by yet another replica across: a draining rack
        sent out more than had to leave it, and the short rack took more than it lacked
        (tests/unit/planner/test_shed_goes_to_the_rack_that_must_be_fed.py).

        Disk only: for every band goal that moves replicas (network in and replica counts too),
        the shapes of ``bench_planner_shapes.py`` saved fewer bytes across racks than for disk
        alone."""
        if not isinstance(goal, BandGoal) or goal.column != Resource.DISK:
            return None
        return np.asarray(self.rack_slack(goal, over=False) < 0, dtype=bool)

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
        ok = self.pairs_allowed(give, take, x, y, ok)
        if not ok.any():
            return False
        gain = -(dx + dy)
        give_cost, take_cost = give.cost, take.cost
        if across:
            give_cost, take_cost = give_cost + self.leaving(give), take_cost + self.leaving(take)
        cost = give_cost[:, None] + take_cost[None, :]
        i, j = np.nonzero(ok)
        best = np.lexsort((i, j, -gain[i, j], cost[i, j] / gain[i, j]))[0]
        state.apply(give, int(i[best]), y)
        state.apply(take, int(j[best]), x)
        self.actions += 2
        return True

    def pairs_allowed(
        self, give: Candidates, take: Candidates, x: int, y: int, ok: BoolArray | None = None
    ) -> BoolArray:
        """``[I, J]``: of the pairs ``ok`` names (all, without it), those where ``give[i]`` going
        from x to y and ``take[j]`` from y to x together break no rule and worsen no veto at x or
        at y."""
        state = self.state
        if ok is None:
            ok = np.ones((len(give), len(take)), dtype=bool)
        if (give.dst == NO_BROKER).all():
            # Each side's one column, not ``holds`` and ``rack_allowed``'s [K, B]: a partner's
            # replicas of every topic it can spare are thousands on a large cluster.
            give_ok = ~(state.replicas[give.part] == y).any(axis=1)
            give_ok &= rack_allowed_at(state, give.part, give.slot, y)
            take_ok = ~(state.replicas[take.part] == x).any(axis=1)
            take_ok &= rack_allowed_at(state, take.part, take.slot, x)
            ok = ok & give_ok[:, None] & take_ok[None, :]
        if state.demoted[y]:
            ok &= (give.delta[:, LEADERS] <= 0)[:, None]
        if state.demoted[x]:
            ok &= (take.delta[:, LEADERS] <= 0)[None, :]
        if self.band_vetoes and ok.any():
            ok &= self.band_vetoes.pair_allowed(state, give, take, x, y)
        for veto in self.other_vetoes:
            if not ok.any():
                break
            dx, dy = veto.evaluate_pairs(state, give, take, x, y)
            ok &= (dx <= TOLERANCE) & (dy <= TOLERANCE)
        return ok

    def _fresh(self) -> None:
        """Forget what was found or built at an earlier state version."""
        if self._known_at != self.state.journal.version:
            self._no_exchange, self._extremes, self._aways = set(), {}, {}
            self._known_at = self.state.journal.version

    def away(self, broker: int) -> Candidates:
        """``leadership_away(state, broker)``, built once per state version."""
        self._fresh()
        found = self._aways.get(broker)
        if found is None:
            found = leadership_away(self.state, broker)
            self._aways[broker] = found
        return found

    def extreme(self, broker: int, column: int, largest: bool, into_rack: int | None) -> Candidates:
        """``extreme_replica_moves`` of ``SWAP_SIDE``, built once per state version."""
        self._fresh()
        key = (broker, column, largest, into_rack)
        found = self._extremes.get(key)
        if found is None:
            found = extreme_replica_moves(self.state, broker, column, SWAP_SIDE, largest, into_rack)
            self._extremes[key] = found
        return found

    def known_impossible(self, goal: Goal, x: int, y: int) -> bool:
        """Whether an exchange of replicas for ``goal`` between ``x`` and ``y`` was found
        impossible at this state version."""
        self._fresh()
        return (id(goal), x, y) in self._no_exchange

    def found_impossible(self, goal: Goal, x: int, y: int) -> None:
        """Remember that an exchange of replicas for ``goal`` between ``x`` and ``y`` is
        impossible until the state changes."""
        self._no_exchange.add((id(goal), x, y))

    def leaving(self, cands: Candidates) -> FloatArray:
        """Per candidate move, the bytes across racks it adds if it leaves its rack: its size when
        its partition holds no more replicas in that rack than it did before the plan."""
        state = self.state
        rack = state.rack[cands.src]
        rows = state.original_replicas[cands.part]
        before = ((rows >= 0) & (state.rack[np.where(rows >= 0, rows, 0)] == rack[:, None])).sum(axis=1)
        replica = cands.dst == NO_BROKER
        return np.where(replica & (state.rack_count[cands.part, rack] <= before), state.disk[cands.part], 0.0)
