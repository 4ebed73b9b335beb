"""Exchanges: when a one-way move cannot fit, ``broker`` and a partner swap a leadership or a
replica each.

An exchange is one action (``Engine.exchange``): both moves together improve the goal and worsen
no veto. docs/how-a-plan-is-made.md names the terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.port import SWAP_PARTNERS
from kafka_balancer.planner.engine import SWAP_SIDE

if TYPE_CHECKING:
    from kafka_balancer.goals.bands import BandGoal
    from kafka_balancer.model.math import IntArray
    from kafka_balancer.planner.engine import Engine


def swap_with_partners(
    search: Engine, goal: BandGoal, broker: int, over: bool, in_rack: bool = False
) -> bool:
    """Exchange with one of ``broker``'s partners a leadership or a replica of ``broker`` (the
    heavier side when ``over``, the lighter when under) for one of the partner's; whether one
    was. ``in_rack``: replicas exchanged with brokers of ``broker``'s rack only, and no
    leadership (a leadership exchange copies nothing, it is tried in any case after)."""
    state = search.state
    relative = state.quantity(goal.column) / goal.scale
    furthest = relative if over else -relative
    if goal.affects_leadership() and not in_rack:
        # A leadership moves no data and leaves every replica in its rack, so the partners
        # are those furthest the other way, whatever their rack: a rack whose brokers all
        # sit at one end of the band (more brokers than its share of replicas fills) has no
        # partner for it inside.
        for x, y in _partners(search, broker, over, np.lexsort((np.arange(state.n_brokers), furthest))):
            if exchange_leaderships(search, goal, x, y):
                return True
    if not search.moves_data:
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
    pairs = _partners(search, broker, over, ranked)
    if not in_rack:
        # Then the other racks' first partners: the brokers of a rack with room may all be
        # unable to take what this broker gives (at its replica-count floor, a small broker
        # of a rack that must send load to larger ones can only exchange with them).
        across = _partners(search, broker, over, ranked[other_rack[ranked]])
        pairs += [pair for pair in across if pair not in pairs]
    return any(exchange_replicas(search, goal, x, y) for x, y in pairs)


def _partners(search: Engine, broker: int, over: bool, ranked: IntArray) -> list[tuple[int, int]]:
    """The first ``SWAP_PARTNERS`` active brokers of ``ranked`` but ``broker``, each as (the
    broker giving the heavier side, the one giving the lighter)."""
    active = search.state.active
    partners = [int(b) for b in ranked if b != broker and active[b]][:SWAP_PARTNERS]
    return [(broker, p) if over else (p, broker) for p in partners]


def exchange_leaderships(search: Engine, goal: BandGoal, x: int, y: int) -> bool:
    """Exchange a leadership ``x`` holds for a lighter one ``y`` holds, each to the other."""
    column = goal.column
    away, back = search.away(x), search.away(y)
    give = away.take(np.nonzero(away.dst == y)[0])
    take = back.take(np.nonzero(back.dst == x)[0])
    give = give.take(np.argsort(-give.delta[:, column], kind="stable")[:SWAP_SIDE])
    take = take.take(np.argsort(take.delta[:, column], kind="stable")[:SWAP_SIDE])
    return search.exchange(goal, give, take, x, y)


def exchange_replicas(search: Engine, goal: BandGoal, x: int, y: int) -> bool:
    """Exchange a replica of ``x`` for a lighter one of ``y``: between racks, only of
    partitions the other rack may take (the heaviest of a broker often all have a replica
    there already, once that rack's brokers were filled with them)."""
    state, column = search.state, goal.column
    if search.known_impossible(goal, x, y):
        return False
    across = state.rack[x] != state.rack[y]
    give = search.extreme(x, column, True, int(state.rack[y]) if across else None)
    take = search.extreme(y, column, False, int(state.rack[x]) if across else None)
    if search.exchange(goal, give, take, x, y):
        return True
    search.found_impossible(goal, x, y)
    return False
