"""The shed and fill ladders: how a band goal moves load off a broker above its band (a shed)
or onto one below it (a fill), as named sequences of steps tried in order.

Each climb of a ladder starts at its first step and stops at the first step that changes
something; the broker's candidate pools are then brought up to date and the ladder is climbed
again, until the broker is inside its target band or no step changes anything. The cheap,
local steps come first (a move within the broker's rack, while the rack has room), the
compounds last. docs/how-a-plan-is-made.md walks through both ladders.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

from kafka_balancer.goals.base import EPSILON
from kafka_balancer.goals.port import MAX_SOURCES
from kafka_balancer.model.candidate_moves import leadership_to, replica_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.planner import swaps, trades
from kafka_balancer.planner.pool import Pool, after_swap, new_pool, place_from, refreshed, shed_candidates

if TYPE_CHECKING:
    from kafka_balancer.goals.bands import BandGoal
    from kafka_balancer.planner.search import Search

# Candidates each broker offers per round of sheds apart: its first choice is usually taken.
APART_HEAD = 1
# Rounds in a row a broker may offer a head no broker takes before it leaves the rounds.
APART_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Moved:
    """A step moved one replica or leadership, of partition ``part``."""

    part: int


@dataclass(frozen=True, slots=True)
class Exchanged:
    """A step applied several actions together (an exchange, a trade, a relay), all since state
    version ``since``: the pools are brought up to date from the journal."""

    since: int


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """A step changed what the pools cannot follow (a compound): they are built anew."""


Outcome = Moved | Exchanged | Rebuilt
_REBUILT = Rebuilt()

Turn = TypeVar("Turn")


@dataclass(frozen=True, slots=True)
class Step(Generic[Turn]):
    """One rung of a ladder: its name (docs/how-a-plan-is-made.md), and what it tries; None when
    it changed nothing."""

    name: str
    take: Callable[[Turn], Outcome | None]


def _moved(part: int | None) -> Outcome | None:
    return None if part is None else Moved(part)


def _climb(ladder: tuple[Step[Turn], ...], turn: Turn) -> Outcome | None:
    """The outcome of the first step of ``ladder`` that changes something, or None."""
    for step in ladder:
        outcome = step.take(turn)
        if outcome is not None:
            return outcome
    return None


# ---- the shed ladder -----------------------------------------------------------------------


@dataclass(slots=True)
class Shedding:
    """A broker's shed in progress: what the steps of the shed ladder read."""

    search: Search
    goal: BandGoal
    broker: int
    # The broker's candidates (None: to be built), its excess at this climb, and whether its rack
    # has room for what it sheds at this climb (None: not asked yet).
    pool: Pool | None = None
    excess: float = 0.0
    roomy: bool | None = None

    @property
    def candidates(self) -> Pool:
        assert self.pool is not None
        return self.pool

    def in_rack(self) -> bool:
        """Whether the broker's rack has room: then it sheds within its rack first, by a move and
        then by an exchange, as a replica sent to another rack would be replaced by one coming
        back."""
        if self.roomy is None:
            search = self.search
            slack = search.rack_slack(self.goal, over=True)
            self.roomy = bool(slack[search.state.rack[self.broker]] > 0)
        return self.roomy


def _shed_move_in_rack(s: Shedding) -> Outcome | None:
    if not s.in_rack():
        return None
    return _moved(place_from(s.search, s.goal, s.candidates, s.excess, in_rack=True))


def _shed_exchange_in_rack(s: Shedding) -> Outcome | None:
    if not s.in_rack():
        return None
    since = s.search.state.journal.version
    if swaps.swap_with_partners(s.search, s.goal, s.broker, over=True, in_rack=True):
        return Exchanged(since)
    return None


def _shed_move(s: Shedding) -> Outcome | None:
    return _moved(place_from(s.search, s.goal, s.candidates, s.excess))


def _shed_exchange(s: Shedding) -> Outcome | None:
    since = s.search.state.journal.version
    if swaps.swap_with_partners(s.search, s.goal, s.broker, over=True):
        return Exchanged(since)
    return None


def _shed_trade(s: Shedding) -> Outcome | None:
    if s.goal.column == LEADERS and trades.trade_leaderships(s.search, s.goal, s.broker, s.excess, over=True):
        return _REBUILT
    return None


def _shed_relay(s: Shedding) -> Outcome | None:
    if s.goal.affects_leadership() and trades.relay_leaderships(s.search, s.goal, s.broker):
        return _REBUILT
    return None


def _shed_move_leniently(s: Shedding) -> Outcome | None:
    # Last resort (a tight band, replicas that may not move): a destination may end above its
    # target band, within the goal's band.
    return _moved(place_from(s.search, s.goal, s.candidates, s.excess, lenient=True))


def _shed_hand_over_heaviest(s: Shedding) -> Outcome | None:
    return _REBUILT if trades.hand_over_heaviest(s.search, s.goal, s.broker) else None


def _shed_heavier_leaderships(s: Shedding) -> Outcome | None:
    return _REBUILT if trades.heavier_leaderships(s.search, s.goal, s.broker, s.excess) else None


SHED_LADDER: tuple[Step[Shedding], ...] = (
    Step("move within the rack", _shed_move_in_rack),
    Step("exchange within the rack", _shed_exchange_in_rack),
    Step("move", _shed_move),
    Step("exchange", _shed_exchange),
    Step("trade leaderships", _shed_trade),
    Step("relay leaderships", _shed_relay),
    Step("move leniently", _shed_move_leniently),
    Step("hand over the heaviest leadership", _shed_hand_over_heaviest),
    Step("exchange for heavier leaderships", _shed_heavier_leaderships),
)


def shed(search: Search, goal: BandGoal, broker: int) -> bool:
    """Move load off ``broker`` by the steps of ``SHED_LADDER`` until it is inside ``goal``'s
    target band or no step changes anything; whether anything moved."""
    state = search.state
    turn = Shedding(search, goal, broker)
    progress = False
    while goal.excess(state, broker) > 0 and goal.needs_fix_at(state, broker) > EPSILON:
        if turn.pool is None:
            turn.pool = new_pool(search, goal, shed_candidates(search, goal, broker))
        turn.excess, turn.roomy = goal.excess(state, broker), None
        outcome = _climb(SHED_LADDER, turn)
        if outcome is None:
            return progress
        turn.pool = _shed_pool_after(turn, turn.candidates, outcome)
        progress = True
    return progress


def _shed_pool_after(s: Shedding, pool: Pool, outcome: Outcome) -> Pool | None:
    """The shed's pool after ``outcome``, as a pool built anew would be (None: to be built)."""
    search = s.search
    if isinstance(outcome, Exchanged):
        return after_swap(search, s.goal, s.broker, pool, outcome.since)
    if isinstance(outcome, Rebuilt):
        return None
    pool.retire(outcome.part)
    if outcome.part in search.state.partitions_on[s.broker]:
        more = shed_candidates(search, s.goal, s.broker, np.array([outcome.part]))
        pool = pool.extended(more, search.leaving(more))
    return pool


# ---- the fill ladder -----------------------------------------------------------------------


@dataclass(slots=True)
class Filling:
    """A broker's fill in progress: what the steps of the fill ladder read."""

    search: Search
    goal: BandGoal
    broker: int
    # The donors' pools of replicas to pull (by donor), the pool of leaderships to take (None:
    # to be built, or none for a goal that leadership does not carry), the broker's deficit at
    # this climb, and whether its rack can spare what it lacks at this climb (None: not asked).
    pools: dict[int, Pool] = field(default_factory=dict)
    lead: Pool | None = None
    need: float = 0.0
    roomy: bool | None = None

    def in_rack(self) -> bool:
        """Whether the broker's rack can spare what it lacks: then it fills from its own rack
        first, by a pull and then by an exchange (as for a shed)."""
        if self.roomy is None:
            search = self.search
            slack = search.rack_slack(self.goal, over=False)
            self.roomy = bool(slack[search.state.rack[self.broker]] > 0)
        return self.roomy


def _fill_take_leadership(f: Filling) -> Outcome | None:
    if not f.goal.affects_leadership():
        return None
    if f.lead is None:
        f.lead = new_pool(f.search, f.goal, leadership_to(f.search.state, f.broker))
    return _moved(place_from(f.search, f.goal, f.lead, f.need, dest=f.broker))


def _fill_relay(f: Filling) -> Outcome | None:
    # Two leaderships moved and no data: before any replica is copied in.
    if not f.goal.affects_leadership():
        return None
    since = f.search.state.journal.version
    return Exchanged(since) if trades.relay_leaderships(f.search, f.goal, f.broker) else None


def _fill_pull_in_rack(f: Filling) -> Outcome | None:
    if not f.in_rack():
        return None
    return _moved(pull(f.search, f.goal, f.broker, f.need, f.pools, in_rack=True))


def _fill_exchange_in_rack(f: Filling) -> Outcome | None:
    if not f.in_rack():
        return None
    since = f.search.state.journal.version
    if swaps.swap_with_partners(f.search, f.goal, f.broker, over=False, in_rack=True):
        return Exchanged(since)
    return None


def _fill_pull(f: Filling) -> Outcome | None:
    return _moved(pull(f.search, f.goal, f.broker, f.need, f.pools))


def _fill_exchange(f: Filling) -> Outcome | None:
    since = f.search.state.journal.version
    return Exchanged(since) if swaps.swap_with_partners(f.search, f.goal, f.broker, over=False) else None


def _fill_trade(f: Filling) -> Outcome | None:
    since = f.search.state.journal.version
    if f.goal.column == LEADERS and trades.trade_leaderships(f.search, f.goal, f.broker, f.need, over=False):
        return Exchanged(since)
    return None


def _fill_take_leadership_leniently(f: Filling) -> Outcome | None:
    # Last resort (a tight band, replicas that may not move): a source may end below its target
    # band, within the goal's band.
    if f.lead is None:
        return None
    return _moved(place_from(f.search, f.goal, f.lead, f.need, dest=f.broker, lenient=True))


def _fill_pull_leniently(f: Filling) -> Outcome | None:
    return _moved(pull(f.search, f.goal, f.broker, f.need, f.pools, lenient=True))


def _fill_room_for_leaderships(f: Filling) -> Outcome | None:
    return _REBUILT if trades.room_for_leaderships(f.search, f.goal, f.broker) else None


FILL_LADDER: tuple[Step[Filling], ...] = (
    Step("take a leadership", _fill_take_leadership),
    Step("relay leaderships", _fill_relay),
    Step("pull within the rack", _fill_pull_in_rack),
    Step("exchange within the rack", _fill_exchange_in_rack),
    Step("pull", _fill_pull),
    Step("exchange", _fill_exchange),
    Step("trade leaderships", _fill_trade),
    Step("take a leadership leniently", _fill_take_leadership_leniently),
    Step("pull leniently", _fill_pull_leniently),
    Step("make room for leaderships", _fill_room_for_leaderships),
)


def fill(search: Search, goal: BandGoal, broker: int) -> bool:
    """Move load onto ``broker`` by the steps of ``FILL_LADDER`` until it is inside ``goal``'s
    target band or no step changes anything; whether anything moved."""
    state = search.state
    turn = Filling(search, goal, broker)
    progress = False
    while goal.deficit(state, broker) > 0 and goal.needs_fix_at(state, broker) > EPSILON:
        turn.need, turn.roomy = goal.deficit(state, broker), None
        outcome = _climb(FILL_LADDER, turn)
        if outcome is None:
            return progress
        if isinstance(outcome, Exchanged):
            turn.pools = refreshed(
                search, goal, broker, turn.pools, state.journal.changes_since(outcome.since)
            )
            turn.lead = None
        elif isinstance(outcome, Rebuilt):
            turn.pools, turn.lead = {}, None
        else:
            for pool in turn.pools.values():
                pool.retire(outcome.part)
            if turn.lead is not None:
                turn.lead.retire(outcome.part)
        progress = True
    return progress


# ---- shedding many brokers at once, and pulling ------------------------------------------


def shed_apart(search: Search, goal: BandGoal, brokers: list[int]) -> bool:
    """Move replicas off the over brokers ``brokers`` in rounds, each judged once: every
    broker still above its target band offers the head of its candidates (in its shed's
    order of preference), and each moves its first acceptable one at its best destination,
    unless a move of the round touched that destination or its partition (then it waits for
    the next round). A broker whose head no broker would take offers its next candidate in the
    next round, until APART_DEPTH of its heads in a row were refused: then it leaves the
    rounds, and its shed, with deeper batches, exchanges and the lenient last resort, does the
    rest. Whether anything moved. A broker whose rack has room keeps its moves in the rack
    (the rest of them then go through its shed, which exchanges within the rack before
    crossing).

    A capacity or count goal's shed moves thousands of replicas off a few brokers; one at a
    time, each cost a whole evaluation of vetoes, gain and the goals to come."""
    state = search.state
    pools = {b: new_pool(search, goal, replica_moves(state, b)) for b in brokers}
    misses: dict[int, int] = {}
    progress = False
    while pools:
        heads = []
        roomy = search.rack_slack(goal, over=True) > 0
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
        applied, refused = search.apart(goal, cands, in_order=True, in_rack=roomy[state.rack[cands.src]])
        for k in applied:
            pools[int(cands.src[k])].retire(int(cands.part[k]))
            misses.pop(int(cands.src[k]), None)
        progress |= bool(applied)
        # A round that applies nothing refuses every head, so the rounds end within
        # APART_DEPTH of the last move.
        for b in np.unique(cands.src[refused]).tolist():
            mine = cands.src == b
            if not refused[mine].all():
                continue
            misses[b] = misses.get(b, 0) + 1
            if misses[b] >= APART_DEPTH:
                del pools[b]
                continue
            for p in cands.part[mine].tolist():
                pools[b].retire(int(p))
    return progress


def pull(
    search: Search,
    goal: BandGoal,
    broker: int,
    need: float,
    pools: dict[int, Pool],
    lenient: bool = False,
    in_rack: bool = False,
) -> int | None:
    """Move one replica onto ``broker``, from its own rack when a broker there can give
    (``in_rack``: only from its own rack)."""
    if not search.moves_data:
        return None
    state = search.state
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
            pools[s] = new_pool(search, goal, replica_moves(state, s, parts))
        changed = place_from(search, goal, pools[s], need, dest=broker, lenient=lenient)
        if changed is not None:
            return changed
    return None
