"""Undoing moves the goals do not need, so that the plan copies fewer bytes.

The goals run one after another, each choosing moves by its own violation, so a replica one goal
moved may no longer be needed once the later goals have moved others: the room it made was made
again, or it was the first hop of a chain. A moved replica that can go back to its original broker
(in its original slot, so the diff no longer shows it) with no goal getting worse at any broker
keeps every met goal met, and every other no further from its band (or its aim) anywhere, and
saves its bytes. The largest go back first. When every goal is met, "no worse anywhere" means
"still met", so the pruned state replans to nothing, as the unpruned one did; when some goal is
not, the optimizer's passes run again after the undos, until they find nothing to do.

A replica that cannot go home alone often can in exchange for a cheaper replica of its home
going the other way. Those pair checks are offered only where a pair can help (the bands
refused the return alone, or the topic cells did and a cheaper replica of the same topic is on
the home broker), as they cost most of pruning when every moved replica was offered every
partner.

Last, a replica the plan copies across racks comes back into its rack: alone, to another broker
of the rack than the one it left (the same bytes moved), or in exchange for a smaller replica of
its topic going across instead, or making way for one: the one step of pruning that may add to
the bytes moved (the smaller replica's, when the plan did not move it), to cut the bytes across
racks by more. A replica of an excluded topic that had to move (off a draining broker or an
offline log dir) is never taken back.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import Goal
from kafka_balancer.model.candidate_moves import replica_moves, slot_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.destinations import rack_allowed_at
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from kafka_balancer.planner.vetoes import TOLERANCE, StackedBands

# A kind of exchange whose last round saved less than this share of the bytes moved is not
# offered again in the sweep: its rounds save less and less, and on large clusters each round
# is costly; a higher share stopped the sweep a round early, further from the bound. A sweep
# that saved this share is followed by another, every kind offered again: the undos after a
# kind stopped open exchanges it would have found
# (tests/unit/planner/test_prune_sweeps_until_little_is_saved.py).
LEAST_YIELD = 1e-3
# The home broker's replicas offered in exchange for each undo: the cheapest few the bands allow.
EXCHANGE_SIDE = 48
# The replicas of one broker going home to another asked at once, the largest first: a hot
# broker emptied onto a new one gives hundreds, and checking each against thousands of partners
# cost more than the exchanges the smaller ones found saved. When any partner may do, the rest
# are not asked once these found none; partners of their own topic are a few per replica, so
# the next ones are (all at once, the pair checks cost far more on large clusters once moves
# stayed in their rack and a home broker's replicas gathered on a few brokers).
GIVE_SIDE = 32
# The returns judged together once earlier returns changed their brokers (``_single_undos``).
RECHECK = 64
# The small replicas of one broker tried in a relay into a rack (``_relay_into_rack``).
RELAY_TRIES = 3


def prune(state: WorkingModel, goals: list[Goal]) -> int:
    """Move back every moved replica whose return makes no goal of ``goals`` worse at any broker,
    alone or in exchange for a cheaper replica going the other way; returns how many went home.

    Sweeps until one saves less than ``LEAST_YIELD`` of the bytes moved. Each undo or exchange
    moves fewer bytes than before, so the sweeps end."""
    search = Search(state, list(goals), [])
    bands = StackedBands([g for g in goals if isinstance(g, BandGoal)], state.n_brokers)
    others = [g for g in goals if not isinstance(g, BandGoal)]
    undone = 0
    while True:
        before = _bytes_moved(state)
        swept = _sweep(state, search, bands, others)
        undone += swept
        if swept == 0 or before - _bytes_moved(state) < LEAST_YIELD * before:
            return undone + _back_in_rack(state, search)


def _back_in_rack(state: WorkingModel, search: Search) -> int:
    """Bring back into its rack each replica the plan copies across racks, the largest first
    (see ``_into_rack``); returns how many came back.

    Alone, the replica moves as many bytes as before and none across racks. Otherwise a replica
    of the same topic less than half its size goes across instead, from a broker of that rack
    that takes the first in its place: it is copied in addition (when the plan did not move it;
    one the plan moved within the rack is copied as far as before), and across racks instead of
    the larger, saving more bytes across racks than it adds to the bytes moved. A topic cell over
    full in a rack whose brokers cannot hold all of its replicas sends one across, and the
    over-full broker's is rarely its rack's smallest."""
    original = np.zeros_like(state.rack_count)
    held = state.original_replicas >= 0
    np.add.at(original, (np.nonzero(held)[0], state.rack[state.original_replicas[held]]), 1)
    parts, slots = np.nonzero(state.moved)
    into = state.rack[state.replicas[parts, slots]]
    out_of = state.rack[state.original_replicas[parts, slots]]
    # Gained in its new rack beyond what it lost there, and lost in its home rack. An exchange
    # changes the racks of its two partitions only: this one, and a partner none of whose
    # replicas is in this list.
    across = (state.rack_count[parts, into] > original[parts, into]) & (
        state.rack_count[parts, out_of] < original[parts, out_of]
    )
    parts, slots, out_of = parts[across], slots[across], out_of[across]
    crossing = np.zeros(len(state.rf), dtype=bool)
    crossing[parts] = True
    returned = 0
    for k in np.lexsort((slots, parts, -state.disk[parts])).tolist():
        p = int(parts[k])
        returned += _into_rack(state, search, p, int(state.replicas[p, slots[k]]), int(out_of[k]), crossing)
    return returned


def _into_rack(state: WorkingModel, search: Search, p: int, z: int, rack: int, crossing: BoolArray) -> int:
    """Move ``p``'s replica on ``z`` into ``rack``: alone to the lowest-numbered broker of the
    rack the goals let it go to; or else for the smallest replica of its topic, less than half
    its size, in ``rack`` from the start (not moved by the plan, or moved within the rack) and of
    a partition not ``crossing`` racks, that leaves a broker of ``rack`` in its place: by a relay
    (``_relay_into_rack``) when that one is smaller than the best exchange's partner, else in
    exchange with ``z``. 1 if it came back."""
    give = replica_moves(state, z, np.array([p], dtype=np.int64))
    if len(give) == 0:
        # A replica of a topic the plan may not move, moved only off a draining broker.
        return 0
    alone = np.nonzero(search.allowed(give)[0] & (state.rack == rack))[0]
    if len(alone):
        state.apply(give, 0, int(alone[0]))
        return 1
    same = state.parts_of_topic[int(state.topic[p])]
    same = same[state.disk[same] < state.disk[p] / 2]
    if len(same) == 0:
        return 0
    rows = state.replicas[same]
    home = state.original_replicas[same]
    mine = (rows >= 0) & (~state.moved[same] | (state.rack[np.where(home >= 0, home, 0)] == rack))
    mine &= ~crossing[same][:, None]
    mine[mine] = state.rack[rows[mine]] == rack
    k, s = np.nonzero(mine)
    best: tuple[float, int, int, Candidates] | None = None
    offered: list[tuple[int, Candidates]] = []
    for y in np.unique(rows[k, s]).tolist():
        if not state.active[y]:
            continue
        take = replica_moves(state, y, same[k[rows[k, s] == y]])
        if len(take) == 0:
            continue
        offered.append((y, take))
        sizes = np.where(search.pairs_allowed(give, take, z, y)[0], state.disk[take.part], np.inf)
        j = int(np.lexsort((take.part, sizes))[0])
        if sizes[j] < np.inf and (best is None or sizes[j] < best[0]):
            best = (float(sizes[j]), j, y, take)
    if _relay_into_rack(state, search, p, z, offered, np.inf if best is None else best[0]):
        return 1
    if best is None:
        return 0
    _, j, y, take = best
    state.apply(give, 0, y)
    state.apply(take, j, z)
    return 1


def _relay_into_rack(
    state: WorkingModel,
    search: Search,
    p: int,
    z: int,
    offered: list[tuple[int, Candidates]],
    below: float,
) -> int:
    """A replica ``q`` of ``offered`` (brokers of ``p``'s rack, each with its replicas of ``p``'s
    topic less than half ``p``'s size), smaller than ``below`` (the best exchange's), leaves its
    broker y for any other broker, into y's rack first, then ``p`` comes from ``z`` to y in its
    place; each move alone worsens no goal at any broker (so the two together do not). 1 if one
    did.

    An exchange fails where z's rack already holds every small replica's partition (a rack-aware
    placement refuses them there), or finds only a larger partner than the rack's smallest;
    another rack takes one instead. The smallest replicas are tried first, ``RELAY_TRIES`` at
    most per broker, as each try applies a move."""
    rack = state.rack
    for y, take in sorted(offered, key=lambda found: float(state.disk[found[1].part].min())):
        if state.disk[take.part].min() >= below:
            break
        ok = search.allowed(take)
        ok[state.disk[take.part] >= below] = False
        tried = 0
        for j in np.lexsort((take.part, state.disk[take.part])).tolist():
            dests = np.nonzero(ok[j])[0]
            if len(dests) == 0:
                continue
            if tried == RELAY_TRIES:
                break
            tried += 1
            # Into y's rack if allowed (q crosses no rack then), else the lowest id: deterministic.
            home = dests[rack[dests] == rack[y]]
            w = int(home[0] if len(home) else dests[0])
            q = int(take.part[j])
            state.apply(take, j, w)
            give = replica_moves(state, z, np.array([p], dtype=np.int64))
            if search.allowed(give, y)[0, y]:
                state.apply(give, 0, y)
                return 1
            state.apply(replica_moves(state, w, np.array([q], dtype=np.int64)), 0, y)
    return 0


def _sweep(state: WorkingModel, search: Search, bands: StackedBands, others: list[Goal]) -> int:
    """Rounds of undos until one changes nothing: an undo can make room for another. Whether a
    replica may go home depends only on its partition and on its two brokers (their bands and
    topic cells), so after the first round only the replicas with a broker the last round
    touched are looked at again."""
    undone = 0
    # Whether each kind of exchange (any partner, a partner of the same topic) is still offered.
    offering = {False: True, True: True}
    touched = np.ones(state.n_brokers, dtype=bool)
    while touched.any():
        looked_at, touched = touched, np.zeros(state.n_brokers, dtype=bool)
        alone, by_bands, by_cells = _undoable(state, search, others, looked_at, any(offering.values()))
        undone += _single_undos(state, search, alone, touched)
        for same_topic, offered in ((False, by_bands), (True, by_cells)):
            if not offering[same_topic]:
                continue
            if same_topic:
                offered = _cheaper_in_cell(state, offered)
            before = _bytes_moved(state)
            undone += _exchange_undos(state, bands, others, offered, same_topic, touched)
            offering[same_topic] = before - _bytes_moved(state) >= LEAST_YIELD * before
    return undone


def _bytes_moved(state: WorkingModel) -> float:
    return float(state.disk @ state.moved.sum(axis=1))


def _single_undos(state: WorkingModel, search: Search, alone: IntArray, touched: BoolArray) -> int:
    """Move home, in order, the moved replicas ``alone`` ([K, 2] partition, slot; each allowed
    home by ``_undoable`` just before) whose return no goal vetoes; returns how many, the brokers
    changed marked in ``touched``.

    Whether a return is vetoed depends only on its partition and its two brokers, so one is
    judged again only when an earlier return changed one of them, and then with the next
    ``RECHECK`` such ones at once (on large clusters most returns allowed in ``_undoable`` are
    refused once their home has taken another, and judging each alone again was costly)."""
    parts, slots = alone[:, 0], alone[:, 1]
    home = state.original_replicas[parts, slots]
    now = state.replicas[parts, slots]
    # A replica's broker changes only when it goes home itself: ``now`` holds for the call.
    index = np.arange(len(alone))
    of_broker = _grouped(np.concatenate([home, now]), np.concatenate([index, index]), state.n_brokers)
    # Another replica of the same partition: rare, and none for most partitions.
    seen, counts = np.unique(parts, return_counts=True)
    shared = index[np.isin(parts, seen[counts > 1])]
    shared = shared[np.argsort(parts[shared], kind="stable")]
    cuts = np.nonzero(np.diff(parts[shared]))[0] + 1
    of_part = {int(parts[rows[0]]): rows for rows in np.split(shared, cuts) if len(rows)}
    ok = np.ones(len(alone), dtype=bool)
    fresh = np.ones(len(alone), dtype=bool)
    undone = 0
    for i in range(len(alone)):
        if not fresh[i]:
            ahead = i + np.nonzero(~fresh[i:])[0][:RECHECK]
            allowed = search.allowed(slot_moves(state, parts[ahead], slots[ahead]))
            ok[ahead] = allowed[np.arange(len(ahead)), home[ahead]]
            fresh[ahead] = True
        if not ok[i]:
            continue
        p, h, x = int(parts[i]), int(home[i]), int(now[i])
        state.apply(slot_moves(state, parts[i : i + 1], slots[i : i + 1]), 0, h)
        undone += 1
        touched[[h, x]] = True
        fresh[of_broker[h]] = False
        fresh[of_broker[x]] = False
        if p in of_part:
            fresh[of_part[p]] = False
    return undone


def _grouped(keys: IntArray, values: IntArray, n: int) -> list[IntArray]:
    """``values`` split by ``keys`` (each in 0..n-1), in their order within each group."""
    order = np.argsort(keys, kind="stable")
    return np.split(values[order], np.searchsorted(keys[order], np.arange(1, n)))


def _undoable(
    state: WorkingModel, search: Search, others: list[Goal], brokers: BoolArray, offer: bool
) -> tuple[IntArray, IntArray, IntArray]:
    """``[K, 2]`` (partition, slot), largest first, of the moved replicas with a broker in
    ``brokers`` that could go home alone now; of those whose return alone only the bands refuse;
    and of those another goal refuses too, one a partner can offset (not RackAware's kind).

    The first are undone; the others are offered exchanges, the last with partners of their own
    topic only (the one partner that leaves the topic cells as they are). A replica whose return
    a per-partition goal refuses is not offered: no partner changes its partition's racks.
    Offering every moved replica every partner cost most of pruning in pair checks that failed."""
    alone_only = [g for g in others if g.per_partition]
    offset = [g for g in others if not g.per_partition]
    parts, slots = np.nonzero(state.moved)
    home = state.original_replicas[parts, slots]
    now = state.replicas[parts, slots]
    # A replica of an excluded topic moved only because it had to (off a draining broker or an
    # offline log dir): it stays where that put it.
    keep = state.active[home] & state.movable[parts] & (brokers[home] | brokers[now])
    parts, slots, home, now = parts[keep], slots[keep], home[keep], now[keep]
    by_now, rows_of = [], []
    for broker in np.unique(now).tolist():
        rows = np.nonzero(now == broker)[0]
        by_now.append(replica_moves(state, broker, parts[rows]))
        # replica_moves sorts its partitions; a partition has one replica per broker.
        rows_of.append(rows[np.argsort(parts[rows], kind="stable")])
    ok = np.zeros(len(parts), dtype=bool)
    by_bands = np.zeros(len(parts), dtype=bool)
    by_cells = np.zeros(len(parts), dtype=bool)
    if by_now:
        cands, rows = Candidates.concat(by_now), np.concatenate(rows_of)
        # Each replica is asked about its home broker only: grouped by home, the vetoes are
        # checked at one broker instead of every broker.
        homes = home[rows]
        for broker in np.unique(homes).tolist():
            at = np.nonzero(homes == broker)[0]
            group = cands.take(at)
            alone = search.allowed(group, dest=broker)[:, broker]
            ok[rows[at]] = alone
            if not offer:
                continue
            refused = np.nonzero(~alone)[0]
            for goal in alone_only:
                refused = refused[goal.kept(state, group.take(refused), TOLERANCE)[:, broker]]
            kept = np.ones(len(refused), dtype=bool)
            for goal in offset:
                kept &= goal.kept(state, group.take(refused), TOLERANCE)[:, broker]
            by_bands[rows[at[refused[kept]]]] = True
            by_cells[rows[at[refused[~kept]]]] = True
    return (
        _largest_first(state, parts[ok], slots[ok]),
        _largest_first(state, parts[by_bands], slots[by_bands]),
        _largest_first(state, parts[by_cells], slots[by_cells]),
    )


def _largest_first(state: WorkingModel, parts: IntArray, slots: IntArray) -> IntArray:
    order = np.lexsort((slots, parts, -state.disk[parts]))
    return np.stack([parts[order], slots[order]], axis=1)


def _cheaper_in_cell(state: WorkingModel, offered: IntArray) -> IntArray:
    """The rows of ``offered`` whose home broker holds a replica of their topic that costs fewer
    bytes to move than the replica saves going home: the only partners their exchange may have."""
    if len(offered) == 0:
        return offered
    parts, slots = offered[:, 0], offered[:, 1]
    rows = state.replicas
    held = rows >= 0
    # A replica the plan moves already costs nothing more to send on.
    cost = np.where(state.moved, 0.0, state.disk[:, None])[held]
    cells = state.topic[np.nonzero(held)[0]] * state.n_brokers + rows[held]
    least = np.full(state.n_topics * state.n_brokers, np.inf)
    np.minimum.at(least, cells, cost)
    home = state.original_replicas[parts, slots]
    cheaper = least[state.topic[parts] * state.n_brokers + home] < state.disk[parts]
    return np.asarray(offered[cheaper], dtype=np.int64)


def _exchange_undos(
    state: WorkingModel,
    bands: StackedBands,
    others: list[Goal],
    offered: IntArray,
    same_topic: bool,
    touched: BoolArray,
) -> int:
    """Send the moved replicas ``offered`` ([K, 2] partition, slot) home in exchange for a replica
    of the home broker (of the same topic, with ``same_topic``) going the other way; returns how
    many went home, the brokers changed marked in ``touched``.

    A replica that cannot go home alone because its home would leave a band often can when one
    of its home broker's replicas goes to where it is now: best another moved replica going
    home too, else one the plan moves anyway (no more bytes), else one that costs fewer bytes
    than the undo saves. Every goal is checked at both brokers on the pair, so none gets worse."""
    parts, slots = offered[:, 0], offered[:, 1]
    # The single undos and exchanges just before may have sent some home already.
    still = state.moved[parts, slots]
    parts, slots = parts[still], slots[still]
    home = state.original_replicas[parts, slots]
    now = state.replicas[parts, slots]
    undone = 0
    for h in np.unique(home).tolist():
        undone += _exchanges_home(state, bands, others, parts, slots, home, now, h, same_topic, touched)
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
    same_topic: bool,
    touched: BoolArray,
) -> int:
    """The exchanges that send replicas home to ``h``; the brokers they change are marked in
    ``touched``."""
    on_h = state.parts_on(h)
    if same_topic:
        # Partners of the offered replicas' topics only: a few of a broker's thousands.
        on_h = on_h[np.isin(state.topic[on_h], state.topic[parts[home == h]])]
    take_all = replica_moves(state, h, on_h)
    # Cheapest first: an offer looks at the partners cheaper than its largest saving only.
    take_all = take_all.take(np.lexsort((take_all.part, take_all.cost)))
    undone = 0
    for a in np.unique(now[home == h]).tolist():
        rows = np.nonzero((home == h) & (now == a))[0]
        rows = rows[state.replicas[parts[rows], slots[rows]] == a]
        start = 0
        while start < len(rows):
            give = replica_moves(state, a, parts[rows[start : start + GIVE_SIDE]])
            applied = _exchange_one(state, bands, others, give, take_all, a, h, same_topic)
            if applied is None:
                if not same_topic:
                    break
                # Partners of their own topic are a few per replica: the next ones are asked.
                start += GIVE_SIDE
                continue
            back, used = applied
            undone += back
            touched[[a, h]] = True
            # The partner left h; the others' moves are as they were (a replica's move depends
            # on its partition only). The replica that came home is no partner: it would go
            # back out.
            take_all = take_all.take(np.delete(np.arange(len(take_all)), used))
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
    same_topic: bool,
) -> tuple[int, int] | None:
    """Apply the best pair (``give[i]`` from ``a`` home to ``h``, ``take_all[j]`` from ``h`` to
    ``a``, ``take_all`` cheapest first) that saves bytes and keeps every goal; how many replicas
    went home and j, None if no pair.

    The cheap array checks over every partner come first (rules, bytes, racks, the bands: most
    offers end there), the other goals are asked about the cheapest partners the bands allow."""
    rules = ~(state.replicas[give.part] == h).any(axis=1)
    if state.any_pinned or state.any_banned:
        rules &= rack_allowed_at(state, give.part, give.slot, h)
    if state.demoted[h]:
        rules &= give.delta[:, LEADERS] <= 0
    if not rules.all():
        give = give.take(np.nonzero(rules)[0])
    if len(give) == 0:
        return None
    saving = state.disk[give.part]
    # Costlier partners cannot save bytes (one going home, the only kind to save more than its
    # cost, costs nothing).
    take_all = take_all.rows(0, int(np.searchsorted(take_all.cost, saving.max())))
    goes_home = state.original_replicas[take_all.part, take_all.slot] == a
    net = take_all.cost - np.where(goes_home, state.disk[take_all.part], 0.0)
    fits = (net < float(saving.max())) & ~(state.replicas[take_all.part] == a).any(axis=1)
    if state.any_pinned or state.any_banned:
        fits &= rack_allowed_at(state, take_all.part, take_all.slot, a)
    if state.demoted[a]:
        fits &= take_all.delta[:, LEADERS] <= 0
    if same_topic:
        fits &= np.isin(state.topic[take_all.part], state.topic[give.part])
    partners = np.nonzero(fits)[0]
    take = take_all.take(partners)
    net = net[partners]
    ok = saving[:, None] > net[None, :]
    if same_topic:
        ok &= state.topic[give.part][:, None] == state.topic[take.part][None, :]
    # Never more bytes across racks: the replica sent from h to a instead (or on from h to a, when
    # the plan moves it already) may cross racks only as much as the moves it replaces did.
    rack, origin = state.rack, state.original_replicas[take.part, take.slot]
    size = state.disk[take.part]
    across_before = saving[:, None] * (rack[h] != rack[a]) + (size * (rack[origin] != rack[h]))[None, :]
    ok &= (size * (rack[origin] != rack[a]))[None, :] <= across_before
    rows, cols = np.nonzero(ok.any(axis=1))[0], np.nonzero(ok.any(axis=0))[0]
    if len(cols) == 0:
        return None
    give, take, ok, net, partners = _pairs(give, take, ok, net, partners, rows, cols)
    ok &= bands.pair_allowed(state, give, take, a, h)
    # The other goals are asked about the cheapest partners the bands allow only: about every
    # one, on large clusters, they cost more than the exchanges they found saved.
    cols = np.nonzero(ok.any(axis=0))[0]
    cols = cols[np.lexsort((take.part[cols], net[cols]))][:EXCHANGE_SIDE]
    rows = np.nonzero(ok[:, cols].any(axis=1))[0]
    if len(rows) == 0:
        return None
    give, take, ok, net, partners = _pairs(give, take, ok, net, partners, rows, cols)
    for goal in others:
        dx, dy = goal.evaluate_pairs(state, give, take, a, h)
        ok &= (dx <= TOLERANCE) & (dy <= TOLERANCE)
        if not ok.any():
            return None
    i, j = np.nonzero(ok)
    gain = state.disk[give.part][i] - net[j]
    best = np.lexsort((take.part[j], give.part[i], -gain))[0]
    used = int(partners[j[best]])
    state.apply(give, int(i[best]), h)
    state.apply(take, int(j[best]), a)
    return 1 + int(goes_home[used]), used


def _pairs(
    give: Candidates,
    take: Candidates,
    ok: BoolArray,
    net: FloatArray,
    partners: IntArray,
    rows: IntArray,
    cols: IntArray,
) -> tuple[Candidates, Candidates, BoolArray, FloatArray, IntArray]:
    """The offers ``rows`` and partners ``cols`` of a pair check, and what is known of them."""
    return give.take(rows), take.take(cols), ok[rows][:, cols], net[cols], partners[cols]
