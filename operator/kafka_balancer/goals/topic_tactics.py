"""TopicReplicaDistribution's tactics: how the goal moves replicas to bring each topic × broker
cell into its aimed band (``topic.TopicReplicaDistributionGoal`` is its measure).

First the over-full cells shed their replicas in rounds of moves judged together
(``_shed_apart``); then topic by topic (``_balance_topic``) each over-full cell sheds by a move
within its rack, an exchange within it, a chain through a rack mate or a move across racks, and
each under-full cell pulls by the same kinds of steps the other way; last, where bands cannot
be met, exchanges that even out a broker's misses. docs/how-a-plan-is-made.md names the terms.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.base import EPSILON
from kafka_balancer.goals.port import MAX_SOURCES, SWAP_PARTNERS
from kafka_balancer.model.candidate_moves import replica_moves, slot_moves, slot_of

if TYPE_CHECKING:
    from kafka_balancer.goals.port import SearchPort
    from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
    from kafka_balancer.model.working import WorkingModel

# Candidates weighed per round of sheds apart, per broker: a round applies at most one move per
# two brokers, and the cheapest candidates of a round are refused or clash more often than not.
APART_PER_BROKER = 1
# Candidates checked for cells still over full per round, in rounds' worth of candidates.
APART_WINDOW = 4


def _applied(state: WorkingModel, cands: Candidates, p: int, dest: int) -> int:
    """The row of ``cands`` that moved a replica of partition ``p`` to ``dest``."""
    slot = int(np.nonzero(state.replicas[p] == dest)[0][0])
    return int(np.nonzero((cands.part == p) & (cands.slot == slot))[0][0])


def optimize(goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort) -> None:
    """Bring ``goal``'s cells into their aimed bands, as far as moves and exchanges can."""
    _shed_apart(goal, state, search)
    if _balance(goal, state, search):
        return
    # Some bands cannot be met (immovable replicas crowd a broker, or a new broker's count
    # floor is more than the movable topics' bands allow it): even out each broker's misses.
    # Only now, as an exchange that merely evens two cells moves two replicas for no cell
    # brought into its band, which while bands can still be met only costs bytes and room.
    goal.evening = True
    try:
        _balance(goal, state, search)
    finally:
        goal.evening = False


def _balance(goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort) -> bool:
    """Topic by topic, cells brought into their bands until no more can be; whether all are."""
    for _ in range(16):
        cells = goal.per_cell(state)
        topics = np.nonzero((cells > EPSILON).any(axis=1))[0]
        if len(topics) == 0:
            return True
        progress = False
        for t in topics:
            progress |= _balance_topic(goal, state, search, int(t))
        if not progress:
            return False
    return not (goal.per_cell(state) > EPSILON).any()


def _shed_apart(goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort) -> None:
    """Over-full cells shed their replicas, the most over-full cells' cheapest first, in rounds
    that move many at once (every topic's cells, no broker touched twice in a round) until a
    round moves none; the topic-by-topic loop then does what is left (pulls into under-full
    cells, exchanges, replicas a round refused). Most of this goal's moves are such sheds,
    and at a million replicas weighing each on its own was where the goal's time went."""
    rows, slots = np.nonzero(state.replicas >= 0)
    brokers = state.replicas[rows, slots]
    topics = state.topic[rows]
    over = goal.judged[topics] & state.movable[rows] & state.active[brokers]
    over &= state.topic_count[topics, brokers] > goal.aim_hi[topics, brokers]
    parts, slots = rows[over], slots[over]
    brokers, topics = brokers[over], topics[over]
    excess = state.topic_count[topics, brokers] - goal.aim_hi[topics, brokers]
    order = np.lexsort((slots, parts, slot_moves(state, parts, slots).cost, -excess))
    parts, slots = parts[order], slots[order]
    limit = APART_PER_BROKER * state.n_brokers
    # The queue is a head, what earlier rounds kept of theirs, then the rest of the order from
    # ``cursor`` on: only the head is checked for cells no longer over full and only it is
    # copied, instead of a million replicas every round.
    head_parts, head_slots = parts[:0], slots[:0]
    cursor = 0
    while len(head_parts) or cursor < len(parts):
        more = max(0, APART_WINDOW * limit - len(head_parts))
        head_parts = np.concatenate([head_parts, parts[cursor : cursor + more]])
        head_slots = np.concatenate([head_slots, slots[cursor : cursor + more]])
        cursor = min(len(parts), cursor + more)
        brokers, topics = state.replicas[head_parts, head_slots], state.topic[head_parts]
        still = np.nonzero(state.topic_count[topics, brokers] > goal.aim_hi[topics, brokers])[0]
        take = still[:limit]
        in_rack = _rack_keeps(goal, state, topics[take], brokers[take], head_parts[take])
        cands = slot_moves(state, head_parts[take], head_slots[take])
        applied, refused = search.place_apart(goal, cands, in_rack)
        if applied == 0 and len(take) == len(still) and cursor == len(parts):
            return
        keep = np.zeros(len(head_parts), dtype=bool)
        keep[still] = True
        keep[take[refused]] = False
        head_parts, head_slots = head_parts[keep], head_slots[keep]


def _rack_keeps(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    topics: IntArray,
    brokers: IntArray,
    parts: IntArray,
) -> BoolArray:
    """Whether each shed of ``parts``' replica of its topic on ``brokers`` stays in its rack:
    yes unless the replica is one of those its rack sends out (``_sent``). A larger one that
    crossed only because its rack's brokers refuse it for now would be a copy across racks
    no band asks for."""
    if goal.live_rack is None:
        return np.zeros(len(topics), dtype=bool)
    n_r = len(state.rack_names)
    cells, cell_of = np.unique(topics * n_r + state.rack[brokers], return_inverse=True)
    cell, sent = _sent(goal, state, cells // n_r, cells % n_r)
    n_p = len(state.rf)
    return np.asarray(~np.isin(cell_of * n_p + parts, cell * n_p + sent), dtype=bool)


def _sent(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, topics: IntArray, racks: IntArray
) -> tuple[IntArray, IntArray]:
    """The partitions whose replica of ``topics[i]`` in rack ``racks[i]`` the rack sends out,
    as (i, partition) pairs: where the rack holds e more of the topic than its brokers'
    bands, its e smallest movable ones (the bound's mandatory set), else none. All cells at
    once: a round of sheds asks for hundreds, and one at a time they were a large share of
    the goal's time."""
    assert goal.live_rack is not None
    live = goal.live_rack
    held = (state.topic_count[topics] * (live[None, :] == racks[:, None])).sum(axis=1)
    excess = np.ceil(held - goal.rack_hi[topics, racks]).astype(np.int64)
    over = np.nonzero(excess > 0)[0]
    if len(over) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ps = np.concatenate([state.parts_of_topic[t] for t in topics[over].tolist()])
    cell = np.repeat(over, [len(state.parts_of_topic[t]) for t in topics[over].tolist()])
    rows = state.replicas[ps]
    inside = ((rows >= 0) & (live[np.maximum(rows, 0)] == racks[cell][:, None])).any(axis=1)
    keep = inside & state.movable[ps]
    ps, cell = ps[keep], cell[keep]
    order = np.lexsort((ps, state.disk[ps], cell))
    ps, cell = ps[order], cell[order]
    rank = np.arange(len(cell)) - np.searchsorted(cell, cell)
    taken = rank < excess[cell]
    return np.asarray(cell[taken], dtype=np.int64), np.asarray(ps[taken], dtype=np.int64)


def _shed_smallest(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    t: int,
    x: int,
    ordered: Candidates,
) -> int | None:
    """When ``x``'s rack must send replicas of ``t`` out and ``x`` holds none of those it sends
    (``_sent``): one of them leaves the rack from its broker z, to a broker of another rack
    with room for ``t``, and ``x`` sheds into z instead, as one compound; the partition ``x``
    shed, or None. Else ``x`` would send its cheapest across, which can weigh many times the
    rack's smallest (tests/unit/planner/test_bytes_across_racks.py has the case)."""
    if goal.live_rack is None or len(ordered) == 0:
        return None
    r = int(state.rack[x])
    _, sent = _sent(goal, state, np.array([t]), np.array([r]))
    if len(sent) == 0 or np.isin(ordered.part, sent).any():
        return None
    cheapest = float(state.disk[ordered.part].min())
    count = state.topic_count[t]
    room = (state.rack != r) & state.active & (count < goal.aim_hi[t])
    # The brokers furthest below their floor first: a replica there brings a cell into its band.
    hosts = np.nonzero(room)[0]
    hosts = hosts[np.lexsort((hosts, count[hosts] - goal.aim_lo[t, hosts]))][:MAX_SOURCES]
    for p in sent[2 * state.disk[sent] < cheapest].tolist():
        z = int(state.replicas[p][goal.live_rack[np.maximum(state.replicas[p], 0)] == r][0])
        one = slot_moves(state, np.array([p]), slot_of(state, np.array([p]), z))
        shed: list[int] = []
        if search.compound(partial(_out_and_in, goal, search, one, hosts, ordered, z, shed)):
            return shed[0]
    return None


def _out_and_in(
    goal: TopicReplicaDistributionGoal,
    search: SearchPort,
    one: Candidates,
    hosts: IntArray,
    ordered: Candidates,
    z: int,
    shed: list[int],
) -> bool:
    """``_shed_smallest``'s compound: ``one`` to the first of ``hosts`` that takes it, then
    the first of ``ordered`` that z takes (into ``shed``); whether both were applied."""
    # The rules and the vetoes alone judge the first move: it may take z below its floor,
    # which the second move restores.
    if not any(search.place(None, one, dest=int(y)) is not None for y in hosts):
        return False
    q = search.place(goal, ordered, dest=z)
    if q is None:
        return False
    shed.append(q)
    return True


def _refill_and_shed(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    t: int,
    x: int,
    ordered: Candidates,
) -> int | None:
    """Where ``x`` may not shed a replica of ``t`` across racks alone (it would leave another
    goal's band, a new broker at its replica floor): a rack mate gives ``x`` its cheapest
    replica of a topic both cells can spare and take, and ``x`` then sheds, as one compound;
    the partition ``x`` shed, or None. Else the exchange across racks that follows brings
    the other topic's replica in from another rack: bytes across that no topic needs
    (tests/unit/planner/test_bytes_across_racks.py has the case)."""
    mates = np.nonzero((state.rack == state.rack[x]) & state.active)[0]
    mates = mates[mates != x]
    # The mates with the most replicas first: they are the furthest above their floors.
    held = np.array([len(state.parts_on(int(z))) for z in mates], dtype=np.int64)
    for z in mates[np.lexsort((mates, -held))][:MAX_SOURCES].tolist():
        spare = state.topic_count[:, z] > goal.aim_lo[:, z]
        spare &= state.topic_count[:, x] < goal.aim_hi[:, x]
        spare[t] = False
        given = _of_topics(state, z, spare)
        if len(given) == 0:
            continue
        given = given.take(np.argsort(given.cost, kind="stable")[:MAX_SOURCES])
        shed: list[int] = []
        if search.compound(partial(_in_and_out, goal, search, given, ordered, x, shed)):
            return shed[0]
    return None


def _in_and_out(
    goal: TopicReplicaDistributionGoal,
    search: SearchPort,
    given: Candidates,
    ordered: Candidates,
    x: int,
    shed: list[int],
) -> bool:
    """``_refill_and_shed``'s compound: the first of ``given`` that ``x`` takes (the rules
    and vetoes judge it, as it fixes no cell of this goal), then the first of ``ordered``
    that leaves ``x`` (into ``shed``); whether both were applied."""
    if search.place(None, given, dest=x) is None:
        return False
    q = search.place(goal, ordered)
    if q is None:
        return False
    shed.append(q)
    return True


def _balance_topic(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort, t: int
) -> bool:
    progress = False
    for x in np.argsort(-state.topic_count[t], kind="stable"):
        ordered: Candidates | None = None
        while state.topic_count[t, x] > goal.aim_hi[t, x]:
            if ordered is None:
                cands = replica_moves(state, int(x), goal.on(state, t, int(x)))
                ordered = cands.take(np.argsort(cands.cost, kind="stable"))
            # Within x's rack first, by a move and then by an exchange, as for a pull.
            changed = search.place(goal, ordered, in_rack=True)
            if changed is None and not _swap(goal, state, search, t, int(x), over=True):
                changed = _shed_smallest(goal, state, search, t, int(x), ordered)
                if changed is None:
                    changed = search.place(goal, ordered)
                if changed is None:
                    changed = _refill_and_shed(goal, state, search, t, int(x), ordered)
                if changed is None and not _swap(goal, state, search, t, int(x), over=True, across=True):
                    break
            # After an exchange, rebuilt; after a move only the moved replica's row is out of
            # date (a candidate's delta and cost are its own partition's), and it left x.
            ordered = None if changed is None else ordered.take(np.nonzero(ordered.part != changed)[0])
            progress = True
    for y in np.argsort(state.topic_count[t], kind="stable"):
        if not state.active[y]:
            continue
        while state.topic_count[t, y] < goal.aim_lo[t, y]:
            # Within y's rack first; a pull across racks copies one replica between them, an
            # exchange two.
            if not (
                _pull(goal, state, search, t, int(y))
                or _swap(goal, state, search, t, int(y), over=False)
                or _pull_across(goal, state, search, t, int(y))
                or _swap(goal, state, search, t, int(y), over=False, across=True)
            ):
                break
            progress = True
    return progress


def _pull(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort, t: int, y: int
) -> bool:
    """A replica of ``t`` into ``y`` from a broker of its rack that can spare one."""
    surplus = state.topic_count[t] - goal.aim_lo[t]
    surplus[y] = 0
    surplus[state.rack != state.rack[y]] = 0
    givers = np.lexsort((np.arange(state.n_brokers), -surplus))
    for x in givers[surplus[givers] > 0][:MAX_SOURCES]:
        cands = replica_moves(state, int(x), goal.on(state, t, int(x)))
        ordered = cands.take(np.argsort(cands.cost, kind="stable"))
        if len(cands) and search.place(goal, ordered, dest=y) is not None:
            return True
    return False


def _pull_across(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, search: SearchPort, t: int, y: int
) -> bool:
    """A replica of ``t`` into ``y`` from another rack: the cheapest of every giver's, as the
    bytes that cross racks are what users pay for, and which giver's is all one to the band.
    (A rack short of ``t`` below its brokers' bands asks this of every one of them.) Unless
    a smaller one comes by a chain (``_pull_chained``)."""
    # From a rack that can spare one for good (``_racks_spare``), where one can.
    givers = state.topic_count[t] > goal.aim_lo[t]
    spare = givers & _racks_spare(goal, state, t)
    cands, across = _across_from(goal, state, t, y, spare if spare.any() else givers)
    # Least across first (a replica the plan moved out of y's rack comes back free), then
    # the cheapest: a replica the plan already moves crosses with all its bytes.
    ordered = cands.take(np.lexsort((cands.cost, across)))
    chains = _chains(goal, state, t, y)
    if chains is not None:
        # The pull is tried and undone to learn what it copies, and what of that across
        # racks: a chain is kept only when it copies less.
        pulled: list[tuple[float, float]] = []
        search.compound(partial(_probe, goal, state, search, ordered, y, pulled))
        if _pull_chained(goal, state, search, chains, y, pulled[0] if pulled else (np.inf, np.inf)):
            return True
        if not pulled:
            return False
    return search.place(goal, ordered, dest=y) is not None


def _probe(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    ordered: Candidates,
    y: int,
    pulled: list[tuple[float, float]],
) -> bool:
    """``_pull_across``' trial: the bytes its pull copies and those across racks, into
    ``pulled``; never kept."""
    p = search.place(goal, ordered, dest=y)
    if p is not None:
        k = _applied(state, ordered, p, y)
        home = state.rack[state.original_replicas[p, ordered.slot[k]]]
        pulled.append((float(ordered.cost[k]), float(state.disk[p]) if home != state.rack[y] else 0.0))
    return False


def _chains(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, t: int, y: int
) -> tuple[Candidates, FloatArray] | None:
    """The replicas of ``t`` that could come into ``y`` by a chain (``_pull_chained``): on a
    broker of another rack at its floor for ``t``, whose rack can spare one for good
    (``_racks_spare``: then one of its brokers can refill it), of a partition ``y``'s rack
    may take and ``y`` does not hold; and the bytes each copies across racks. None when
    there are none (the pull then goes untried)."""
    count, lo = state.topic_count[t], goal.aim_lo[t]
    at_floor = (count == lo) & (count > 0) & state.active & _racks_spare(goal, state, t)
    if not at_floor.any():
        return None
    cands, across = _across_from(goal, state, t, y, at_floor)
    fits = state.rack_count[cands.part, state.rack[y]] < state.rack_limit[cands.part]
    fits &= ~(state.replicas[cands.part] == y).any(axis=1)
    rows = np.nonzero(fits)[0]
    if len(rows) == 0:
        return None
    return cands.take(rows), across[rows]


def _pull_chained(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    chains: tuple[Candidates, FloatArray],
    y: int,
    pull: tuple[float, float],
) -> bool:
    """A replica of ``chains`` into ``y`` from a broker z of another rack at its floor for its
    topic, which a broker of z's own rack that can spare one refills (within that rack): kept
    when it copies fewer bytes across racks than ``pull`` (the pull's bytes copied and bytes
    across), and fewer bytes copied and across counted together.

    The smallest replicas of a topic often sit on brokers at their floor, which may not give
    one, and the pulls then copied larger ones than the smallest across racks."""
    if pull[1] == 0:
        return False
    cands, across = chains
    # The tries are few: the least across, then the cheapest.
    rows = np.nonzero(across < pull[1])[0]
    rows = rows[np.lexsort((cands.cost[rows], across[rows]))][:MAX_SOURCES]
    budget = pull[0] + pull[1]
    for k in rows.tolist():
        chain = partial(
            _pull_and_refill, goal, state, search, cands.rows(k, k + 1), y, budget - float(across[k])
        )
        if search.compound(chain):
            return True
    return False


def _pull_and_refill(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    one: Candidates,
    y: int,
    budget: float,
) -> bool:
    """``_pull_chained``'s compound: whether to keep it, which is whether it copies fewer
    than ``budget`` bytes."""
    z = int(one.src[0])
    # The rules and the vetoes alone judge the pull: it takes z below its floor for t.
    if search.place(None, one, dest=y) is None:
        return False
    refills = _refills(goal, state, one)
    p = search.place(goal, refills, dest=z)
    return p is not None and float(one.cost[0] + refills.cost[_applied(state, refills, p, z)]) < budget


def _refills(goal: TopicReplicaDistributionGoal, state: WorkingModel, one: Candidates) -> Candidates:
    """The moves into ``one``'s source of the replicas of its topic on the brokers of its rack
    that can spare one, cheapest first."""
    t, z = int(state.topic[one.part[0]]), int(one.src[0])
    givers = (state.topic_count[t] > goal.aim_lo[t]) & (state.rack == state.rack[z]) & state.active
    moves = _moves_of(goal, state, t, givers)
    moves = moves.take(np.nonzero(~(state.replicas[moves.part] == z).any(axis=1))[0])
    return moves.take(np.argsort(moves.cost, kind="stable"))


def _racks_spare(goal: TopicReplicaDistributionGoal, state: WorkingModel, t: int) -> BoolArray:
    """Per broker, whether its rack holds more replicas of ``t`` than its brokers' floors add
    up to: only such a rack can give one to another rack for good. One whose spare replica
    its own brokers below their floors need takes one back across later, and both replicas
    cross (tests/unit/planner/test_bytes_across_racks.py has the case)."""
    net = np.bincount(
        state.rack,
        weights=np.where(state.active, state.topic_count[t] - goal.aim_lo[t], 0.0),
        minlength=len(state.rack_names),
    )
    return np.asarray(net[state.rack] > EPSILON, dtype=bool)


def _across_from(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, t: int, y: int, givers: BoolArray
) -> tuple[Candidates, FloatArray]:
    """The moves into ``y`` of the movable replicas of ``t`` on ``givers`` of other racks than
    ``y``'s, and the bytes each copies across racks: none for a replica the plan moved out of
    ``y``'s rack, which comes back free."""
    cands = _moves_of(goal, state, t, givers & (state.rack != state.rack[y]) & state.active)
    home = state.rack[state.original_replicas[cands.part, cands.slot]]
    return cands, np.where(home != state.rack[y], state.disk[cands.part], 0.0)


def _moves_of(
    goal: TopicReplicaDistributionGoal, state: WorkingModel, t: int, givers: BoolArray
) -> Candidates:
    """The free moves of the movable replicas of ``t`` on the brokers ``givers``."""
    parts = state.parts_of_topic[t]
    rows = state.replicas[parts]
    on = (rows >= 0) & givers[np.maximum(rows, 0)] & state.movable[parts][:, None]
    k, slots = np.nonzero(on)
    return slot_moves(state, parts[k], slots)


def _swap(
    goal: TopicReplicaDistributionGoal,
    state: WorkingModel,
    search: SearchPort,
    t: int,
    broker: int,
    over: bool,
    across: bool = False,
) -> bool:
    """Exchange a replica of topic ``t`` for one of another topic between ``broker`` and a
    partner: the replica counts stay, so it fits when a one-way move would leave the replica
    distribution's band (a new broker filled to its band with one topic's replicas).
    ``across``: with a partner of another rack, else of ``broker``'s rack."""
    count = state.topic_count[t]
    # Partners that can take (over) or give (under) a replica of t, same rack first: with
    # one replica per rack, only a same-rack partner keeps a partition rack-aware.
    room = (goal.aim_hi[t] - count) if over else (count - goal.aim_lo[t])
    other_rack = state.rack != state.rack[broker]
    room = np.where(other_rack == across, room, 0)
    order = np.lexsort((np.arange(state.n_brokers), -room, other_rack))
    partners = [int(b) for b in order if b != broker and room[b] > 0 and state.active[b]]
    for partner in partners[:SWAP_PARTNERS]:
        x, y = (broker, partner) if over else (partner, broker)
        give = replica_moves(state, x, goal.on(state, t, x))
        # What comes back: a replica of a topic the partner can spare, and of which
        # ``broker``'s own cell can take one (over) or give one (under) while staying within
        # its band or, in ``optimize``'s last phase, outside it by at least two fewer than t's
        # cell: the exchange then evens the two out.
        if over:
            past = count[x] - goal.aim_hi[t, x] - 1 if goal.evening else 0
            spare = state.topic_count[:, y] > goal.aim_lo[:, y]
            spare &= state.topic_count[:, x] - goal.aim_hi[:, x] < past
        else:
            past = goal.aim_lo[t, y] - count[y] - 1 if goal.evening else 0
            spare = state.topic_count[:, x] < goal.aim_hi[:, x]
            spare &= goal.aim_lo[:, y] - state.topic_count[:, y] < past
        spare[t] = False
        take = _of_topics(state, y, spare)
        # Every pair fixes the same cell, so the bytes rank them; between racks, those it
        # copies across too: a replica the plan moved within its rack costs nothing more to
        # move on, but all its bytes across.
        if search.exchange(goal, give, take, x, y, across):
            return True
    return False


def _of_topics(state: WorkingModel, broker: int, topics: BoolArray) -> Candidates:
    parts = state.parts_on(broker)
    return replica_moves(state, broker, parts[topics[state.topic[parts]]])
