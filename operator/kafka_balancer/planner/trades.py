"""Leadership trades: ways a broker gains or gives up leaderships when no single leader change
fits, because of what leadership carries (network out, cpu) rather than the leader count.

A trade (with a follower, or through a relay of two other brokers) keeps the leader counts and
is kept only with the leadership it makes room for; a hand-over of a heavy leadership, the room
made for leaderships and the exchanges for heavier ones are compounds (``Engine.compound``),
kept whole or undone whole. docs/how-a-plan-is-made.md names the terms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import EPSILON
from kafka_balancer.model.candidate_moves import leader_changes, leadership_to, replica_moves
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.resources import Resource
from kafka_balancer.planner.engine import SWAP_SIDE
from kafka_balancer.planner.pool import new_pool, place_from, shed_candidates
from kafka_balancer.planner.vetoes import TOLERANCE

if TYPE_CHECKING:
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
    from kafka_balancer.planner.search import Search

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
# The leader changes of each side of a relay paired, the most promising first: every pair is
# checked against every veto, and a broker of a large cluster has thousands of each.
RELAY_SIDE = 256
# What a leader carries and a follower does not: the room a trade of leaderships makes.
LEADERSHIP_RESOURCES = (int(Resource.NETWORK_OUT), int(Resource.CPU))
# What a follower carries as much as its leader.
CARRIED = np.array([int(Resource.DISK), int(Resource.NETWORK_IN)], dtype=np.int64)


@dataclass(frozen=True, slots=True)
class _Pairs:
    """Rows ``i`` of one batch of candidates by rows ``j`` of another, and which pairs pass."""

    i: IntArray
    j: IntArray
    ok: BoolArray


def trade_leaderships(search: Search, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
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
    state = search.state
    if state.demoted[broker]:
        return False
    columns = np.array(LEADERSHIP_RESOURCES, dtype=np.int64)
    norm = search.norm[columns]
    away = search.away(broker)
    heaviness = (state.load[:, columns] / norm).sum(axis=1)
    partners = [int(y) for y in np.unique(away.dst) if not state.demoted[y]]
    # The partner takes the heavy leadership: the lightest first; or gives it: the heaviest.
    partners.sort(key=lambda y: (-heaviness[y] if over else heaviness[y], y))
    for y in partners[:TRADE_PARTNERS]:
        give = away.take(np.nonzero(away.dst == y)[0])
        back = search.away(y)
        take = back.take(np.nonzero(back.dst == broker)[0])
        if len(take) == 0:
            continue
        # How much the trade takes off the broker's leadership resources (over: adds).
        relief = ((give.delta[:, None, columns] - take.delta[None, :, columns]) / norm).sum(axis=2)
        if over:
            relief = -relief
        ok = relief > EPSILON
        for veto in search.vetoes:
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
        if _one_more(search, goal, broker, need, over):
            search.actions += 2
            return True
        for part, leader in ((taken, y), (given, broker)):
            undo = leader_changes(state, np.array([part], dtype=np.int64), np.array([leader], dtype=np.int64))
            state.apply(undo, 0, leader)
    return _relay_trade(search, goal, broker, need, over)


def hand_over_heaviest(search: Search, goal: BandGoal, broker: int) -> bool:
    """Hand one of ``broker``'s heaviest leaderships to its follower even though that takes
    the follower above the goal's band, then shed the follower and fill ``broker`` back up;
    kept only when the goal's brokers end nearer its band in all, else undone.

    A broker filled from empty may take a single leadership heavier than the band of what
    leadership carries is wide (the leader replica of a busy partition, moved in for its
    bytes): no broker can take it alone, and the broker can then take no other leadership.
    Its follower, a full broker, can make room by handing lighter leaderships to others."""
    if search.compounding or goal.column == LEADERS or not goal.affects_leadership():
        return False
    away = search.away(broker)
    heaviest = np.argsort(-away.delta[:, goal.column], kind="stable")[:HAND_OVER_TRIES]
    allowed = search.allowed(away.take(heaviest), None)
    for row, k in enumerate(heaviest.tolist()):
        if allowed[row, away.dst[k]] and search.compound(
            partial(_hand_over_and_refill, search, goal, away, k)
        ):
            return True
    return False


def _hand_over_and_refill(search: Search, goal: BandGoal, away: Candidates, k: int) -> bool:
    """``hand_over_heaviest``'s compound: whether to keep it."""
    state = search.state
    broker, follower = int(away.src[k]), int(away.dst[k])
    before = float(goal.needs_fix(state).sum())
    _hand_over_one(search, away, k)
    search.shed(goal, follower)
    if goal.deficit(state, broker) > 0:
        search.fill(goal, broker)
    return float(goal.needs_fix(state).sum()) < before - EPSILON


def _hand_over_one(search: Search, away: Candidates, k: int) -> None:
    """Hand over leadership ``k`` of ``away``; neither the follower's shed nor the broker's
    fill that follow in a compound may hand it straight back."""
    search.state.apply(away, k, int(away.dst[k]))
    search.actions += 1
    search.handed_over = int(away.part[k])


def room_for_leaderships(search: Search, goal: BandGoal, broker: int) -> bool:
    """A broker short of leaderships at the top of a vetoing band of what leadership carries
    hands its heaviest leadership in it to the follower, which sheds lighter ones to others
    within that band, and takes light ones in the room made; kept only when the leader counts
    end nearer their band in all and no vetoing band is further away at any broker, else
    undone. Trading one heavy leadership for one light one with a single follower stops
    when no follower leads a light partition the broker follows."""
    state = search.state
    if search.compounding or goal.column != LEADERS or state.demoted[broker] or broker in search.no_room:
        return False
    bands = [g for g in search.vetoes if isinstance(g, BandGoal)]
    full = [g for g in bands if g.column in LEADERSHIP_RESOURCES and g.excess(state, broker) > -EPSILON]
    for veto in full:
        away = search.away(broker)
        heaviest = np.argsort(-away.delta[:, veto.column], kind="stable")[:ROOM_TRIES]
        for k in heaviest.tolist():
            follower = int(away.dst[k])
            if state.demoted[follower]:
                # A demoted broker takes no leadership, and its open bands would not tell.
                continue
            if search.compound(partial(_make_room, search, goal, veto, bands, away, k)):
                return True
    search.no_room.add(broker)
    return False


def _make_room(
    search: Search, goal: BandGoal, veto: BandGoal, bands: list[BandGoal], away: Candidates, k: int
) -> bool:
    """``room_for_leaderships``' compound: whether to keep it."""
    state = search.state
    leaders_before = float(goal.needs_fix(state).sum())
    vetoes_before = [g.needs_fix(state) for g in bands]
    follower = int(away.dst[k])
    _hand_over_one(search, away, k)
    search.shed(veto, follower)
    if veto.needs_fix(state)[follower] > vetoes_before[bands.index(veto)][follower] + EPSILON:
        # The follower could not shed what it took. The compound would then be undone unless
        # the broker's fill took enough of the follower's load back, which it practically never
        # does, and each try costs a fill's search.
        return False
    search.fill(goal, int(away.src[k]))
    kept = all(
        (g.needs_fix(state) <= before + EPSILON).all() for g, before in zip(bands, vetoes_before, strict=True)
    )
    return kept and float(goal.needs_fix(state).sum()) < leaders_before - EPSILON


def heavier_leaderships(search: Search, goal: BandGoal, broker: int, need: float) -> bool:
    """A broker with too many leaderships at the bottom of a vetoing band of what leadership
    carries exchanges light leader replicas for heavy ones (of about their size) with the
    brokers leading the heaviest partitions, up to ``HEAVIER_TRIES`` of them, until it can
    hand over one more leadership in the room made; undone when it cannot. Each exchange
    keeps both leader counts and every veto.

    An empty broker filled to its replica count with light replicas, then to its network-out
    band with their leaderships, follows too few partitions to trade leaderships with."""
    state = search.state
    if search.compounding or goal.column != LEADERS or state.demoted[broker] or not search.moves_data:
        return False
    low = [
        g
        for g in search.vetoes
        if isinstance(g, BandGoal)
        and g.column in LEADERSHIP_RESOURCES
        and g.deficit(state, broker) > -EPSILON
    ]
    if not low:
        return False
    columns = np.array([g.column for g in low], dtype=np.int64)
    return search.compound(partial(_exchanges_for_heavier, search, goal, broker, need, columns))


def _exchanges_for_heavier(
    search: Search, goal: BandGoal, broker: int, need: float, columns: IntArray
) -> bool:
    """``heavier_leaderships``' compound: whether to keep it."""
    for _ in range(HEAVIER_TRIES):
        if not _exchange_for_heavier(search, broker, columns):
            return False
        if _one_more(search, goal, broker, need, over=True):
            return True
    return False


def _exchange_for_heavier(search: Search, broker: int, columns: IntArray) -> bool:
    """Exchange one of ``broker``'s lightest leader replicas for the leader replica of a
    partition heavier in ``columns`` (what leadership carries that ``broker`` lacks), with
    the first broker of those leading the heaviest partitions that has a pair every veto
    allows: the pair relieving most."""
    state = search.state
    norm = search.norm[columns]

    def led(b: int) -> tuple[Candidates, FloatArray]:
        moves = replica_moves(state, b)
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
        carried = (theirs.delta[:, CARRIED] / search.norm[CARRIED]).sum(axis=1)
        take = theirs.take(np.argsort(-weight / np.maximum(carried, EPSILON), kind="stable")[:SWAP_SIDE])
        if len(give) == 0 or len(take) == 0:
            continue
        relief = ((take.delta[None, :, columns] - give.delta[:, None, columns]) / norm).sum(axis=2)
        ok = search.pairs_allowed(give, take, broker, y, relief > EPSILON)
        if not ok.any():
            continue
        i, j = np.unravel_index(int(np.argmax(np.where(ok, relief, -np.inf))), ok.shape)
        state.apply(give, int(i), y)
        state.apply(take, int(j), broker)
        search.actions += 2
        return True
    return False


def _one_more(search: Search, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
    """Hand over (``over``) or take one leadership; whether one moved."""
    if over:
        step = place_from(search, goal, new_pool(search, goal, shed_candidates(search, goal, broker)), need)
    else:
        pool = new_pool(search, goal, leadership_to(search.state, broker))
        step = place_from(search, goal, pool, need, dest=broker)
    return step is not None


def relay_leaderships(search: Search, goal: BandGoal, broker: int) -> bool:
    """Take a leadership from one broker and hand one to another at once, so that ``broker``
    gets nearer the goal's band while what else leadership carries stays within its vetoes.

    A broker short of cpu at the top of its network-out band (in a rack with more brokers
    than its share of replicas fills: few followers, so its cpu must come from leaderships)
    can take no leadership alone, and the partners of an exchange share only a handful of
    partitions with it. The relay's ends are any leader of a partition ``broker`` follows
    and any follower of one it leads: it takes a leadership heavy in the goal's resource and
    light in the others, and hands over one the other way round."""
    if goal.column == LEADERS:
        return False
    q = float(search.state.quantity(goal.column)[broker])
    lo, hi = (edge[broker] for edge in goal.band_edges(True))
    # Above the band the broker should take leaderships light in the goal's resource and hand
    # over heavy ones; below it, the other way round.
    toward = -1.0 if q > hi else 1.0

    def promise(into: Candidates, out: Candidates) -> tuple[FloatArray, FloatArray]:
        return toward * into.delta[:, goal.column], -toward * out.delta[:, goal.column]

    relay = _relays(search, goal, broker, promise)
    if relay is None:
        return False
    into, out, pairs = relay
    change = into.delta[pairs.i, goal.column][:, None] - out.delta[pairs.j, goal.column][None, :]
    before = max(q - hi, 0.0) + max(lo - q, 0.0)
    gain = before - (np.maximum(q + change - hi, 0.0) + np.maximum(lo - q - change, 0.0))
    ok = pairs.ok & (gain > EPSILON * float(goal.scale[broker]))
    if not ok.any():
        return False
    i, j = np.unravel_index(int(np.argmax(np.where(ok, gain, -np.inf))), ok.shape)
    _apply_relay(search, into, out, int(pairs.i[i]), int(pairs.j[j]), broker)
    return True


def _relay_trade(search: Search, goal: BandGoal, broker: int, need: float, over: bool) -> bool:
    """``trade_leaderships`` through a relay: the heavy leadership goes to a follower and the
    light one comes from a leader, any two brokers, then ``broker`` takes (or hands over) one
    more; undone when it cannot."""
    columns = np.array(LEADERSHIP_RESOURCES, dtype=np.int64)
    norm = search.norm[columns]
    sign = -1.0 if over else 1.0

    def weight(c: Candidates) -> FloatArray:
        return np.asarray((c.delta[:, columns] / norm).sum(axis=1), dtype=np.float64)

    relay = _relays(search, goal, broker, lambda into, out: (-sign * weight(into), sign * weight(out)))
    if relay is None:
        return False
    into, out, pairs = relay
    relief = sign * (weight(out)[pairs.j][None, :] - weight(into)[pairs.i][:, None])
    ok = pairs.ok & (relief > EPSILON)
    if not ok.any():
        return False
    i, j = np.unravel_index(int(np.argmax(np.where(ok, relief, -np.inf))), ok.shape)
    taken, given = int(into.part[pairs.i[i]]), int(out.part[pairs.j[j]])
    leader = int(into.src[pairs.i[i]])
    _apply_relay(search, into, out, int(pairs.i[i]), int(pairs.j[j]), broker)
    if _one_more(search, goal, broker, need, over):
        return True
    state = search.state
    for part, back in ((taken, leader), (given, broker)):
        undo = leader_changes(state, np.array([part], dtype=np.int64), np.array([back], dtype=np.int64))
        state.apply(undo, 0, back)
    search.actions -= 2
    return False


def _relays(
    search: Search,
    goal: BandGoal,
    broker: int,
    promise: Callable[[Candidates, Candidates], tuple[FloatArray, FloatArray]],
) -> tuple[Candidates, Candidates, _Pairs] | None:
    """The leader changes into ``broker`` (``into``) and out of it (``out``) whose other
    ends take them with every veto and the goal no worse there, and which pairs of them
    (one of each, with two different other ends) leave every veto no worse at ``broker``,
    all judged on the state before both; None when there is no such pair. Only the
    ``RELAY_SIDE`` most promising of each side are paired (``promise``: higher first)."""
    state = search.state
    if state.demoted[broker] or not search.band_vetoes:
        return None
    into, out = leadership_to(state, broker), search.away(broker)
    out = out.take(np.nonzero(~state.demoted[out.dst])[0])
    if len(into) == 0 or len(out) == 0:
        return None
    least, most = search.band_vetoes.rooms(state)
    columns = search.band_vetoes.columns
    d_in, d_out = into.delta[:, columns].T, out.delta[:, columns].T
    # Each other end on its own: the leader giving up (−d) and the follower taking (+d).
    leader, follower = into.src, out.dst
    in_ok = ((-d_in >= least[:, leader]) & (-d_in <= most[:, leader])).all(axis=0)
    out_ok = ((d_out >= least[:, follower]) & (d_out <= most[:, follower])).all(axis=0)
    for veto in search.other_vetoes:
        in_ok &= veto.kept(state, into, TOLERANCE)[np.arange(len(into)), broker]
        out_ok &= veto.kept(state, out, TOLERANCE)[np.arange(len(out)), follower]
    at_leader, _ = goal.evaluate(state, into, target=True)
    _, at_follower = goal.evaluate(state, out, target=True)
    in_ok &= at_leader <= TOLERANCE
    out_ok &= at_follower[np.arange(len(out)), follower] <= TOLERANCE
    i_rows, j_rows = np.nonzero(in_ok)[0], np.nonzero(out_ok)[0]
    if len(i_rows) == 0 or len(j_rows) == 0:
        return None
    score_in, score_out = promise(into, out)
    i_rows = i_rows[np.argsort(-score_in[i_rows], kind="stable")[:RELAY_SIDE]]
    j_rows = j_rows[np.argsort(-score_out[j_rows], kind="stable")[:RELAY_SIDE]]
    # At ``broker``: +d_in − d_out within its rooms for every veto.
    d = d_in[:, i_rows, None] - d_out[:, None, j_rows]
    ok = ((d >= least[:, broker, None, None]) & (d <= most[:, broker, None, None])).all(axis=0)
    ok &= leader[i_rows][:, None] != follower[j_rows][None, :]
    return into, out, _Pairs(i_rows, j_rows, ok)


def _apply_relay(search: Search, into: Candidates, out: Candidates, i: int, j: int, broker: int) -> None:
    search.state.apply(into, i, broker)
    search.state.apply(out, j, int(out.dst[j]))
    search.actions += 2
