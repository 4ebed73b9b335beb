"""Lower bounds on the bytes (and the bytes across racks) any plan must move to reach the bands a
plan reached.

The planner's bytes are judged against it, so it must be valid: no plan that meets the same bands
may move less. They are built from these facts.

1. A plan is a diff of two assignments with the replication factors kept, so every partition
   gains as many replicas as it loses and bytes moved = Σ over removed replicas (p, b) of disk[p]
   = Σ over added replicas (p, b) of disk[p]. Each removed (or added) replica belongs to exactly
   one broker and one topic × broker cell, so per-broker amounts R_b (removed) and A_b (added)
   sum to the bytes moved: bound = max(Σ_b R_b lower bounds, Σ_b A_b lower bounds).
2. At broker b, a band forces a least set of removals (additions): disk after ≤ hi forces
   R_b ≥ disk_b − hi_b and disk after ≥ lo forces A_b ≥ lo_b − disk_b; a replica count after ≤
   hi forces at least count_b − hi_b removals (lo − count additions); a topic cell after ≤ hi
   forces at least c_tb − hi_tb removals of that topic's replicas from b (lo − c additions of
   its partitions not yet on b); a draining broker loses everything it holds.
3. The cheapest set that meets per-topic least counts e_t and a total least count k at one broker
   is the e_t smallest replicas of each topic (the mandatory set G) plus the k − |G| smallest
   replicas outside G. Proof: a feasible set S holds s_t ≥ e_t replicas of topic t, which weigh at
   least the s_t smallest of t, that is G's part of t plus s_t − e_t distinct replicas of t
   outside G; these number Σ(s_t − e_t) ≥ k − |G| and weigh at least the k − |G| smallest outside G.

Per broker the bound takes the larger of (3) and the disk requirement (both are valid, their sum
need not be; (7) below couples them), and sums over brokers (disjoint by (1)). A band enters
only if the plan meets it: the figure is then a bound on the plan's own bytes, and never above
them.

4. When RackAware is met and every movable partition fills every rack to its limit (replication
   factor 3 on 3 racks: one replica per rack), no replica can change rack: a partition holds
   exactly its limit in each rack before and after, so in each rack it loses as many replicas as
   it gains, of one size. Bytes moved are then Σ over racks of the bytes removed in that rack,
   which equal the bytes added there, and the bound is Σ_racks max(Σ_{b in rack} R_b,
   Σ_{b in rack} A_b): a broker short of disk cannot be filled from an over-full broker of
   another rack. With a rack some partition may leave (6 racks, replication factor 3), the
   global max of (1) stands.

5. Bytes across racks (``PlanFigures.cross_rack_bytes``) count, for each partition and rack, the
   replicas it gains there beyond those it loses there, each at its size; per partition the
   gains beyond losses over all racks equal the losses beyond gains. So (2) and (3) hold with
   racks for brokers: a rack's topic cell, replica count and disk must end within the sum of its
   active brokers' bands, and whatever the rack holds beyond (or lacks below) that sum must leave
   (come) across racks. A partition at its rack limit in a rack cannot gain there beyond what it
   loses while RackAware is met; without RackAware any partition may. A partition holding more
   than its limit in a rack loses the difference there, and gains it back in no plan that meets
   RackAware: those bytes leave the rack whatever the bands.

6. Keeping replicas in their racks costs bytes, and each byte saved costs one across racks. In
   rack r a plan removes removed_r ≥ Σ_{b in r} R_b and adds added_r ≥ Σ_{b in r} A_b, and
   added_r − removed_r is at most the bytes partitions gain in r beyond what they lose there,
   C_r; Σ_r C_r is the bytes across racks C of (5). So bytes moved = Σ_r removed_r ≥
   Σ_r max(R_r, A_r − C_r) ≥ Σ_r max(R_r, A_r) − C: bytes moved plus bytes across racks is at
   least the per-rack sum of (4), with or without RackAware. A plan that copies nothing between
   racks moves at least that much, and the global max of (1) is reachable only by copying the
   difference across racks (a cluster grown by brokers in every rack, the racks over and under
   their bands by different amounts).

7. A unit's disk after is disk_b − R_b + A_b, so its disk band couples its removals and
   additions: disk after ≤ hi forces R_b ≥ disk_b + A_b − hi_b ≥ disk_b + a_b − hi_b, and disk
   after ≥ lo forces A_b ≥ lo_b − disk_b + r_b, where r_b and a_b are the least removals and
   additions of (2) and (3). A broker near the top of its disk band that must gain replicas of
   topics it lacks must make room for them; one near the bottom that must give away replicas
   of topics it holds too many of must take as many bytes back. Once is enough: with the
   tightened r_b, a_b's requirement grows by lo_b − hi_b ≤ 0 beyond what r_b gave it.

8. Bytes across racks split by topic, as each crossing replica is of one topic, and per partition
   (5)'s gains beyond losses over the racks equal its losses beyond gains. So a topic copies
   across racks at least what its rack cells over their ceilings must send out (the mandatory
   set of (3), racks for brokers), and at least what its short cells must take in (the smallest
   partitions each can gain), whichever is more; summed over topics, this is a bound beside (5)'s
   max(Σ removed, Σ added), which lets one topic's leavers stand for another's arrivals.
9. docs/design.md's drain sends a drained replica to a broker of its own rack when one can take it
   within the hard goals, and the plan keeps it in that rack (the optimizer pins it there
   before any goal acts). A partition with k such replicas kept in rack r, of which the active
   brokers of r held j before, ends with at least k replicas there, so those brokers gain at
   least (k − j) of it: its kept bytes K_r. The rack's active brokers then gain Y_r ≥ max(K_r,
   Σ_b A_b) and, by (7) summed over them, shed X_r ≥ D_r + Y_r − Σ_b hi_b (D_r: what they held)
   and gain Y_r ≥ Σ_b lo_b − D_r + X_r. Removals and additions per rack are disjoint, so the
   bounds of (1) and (4) take these per-rack sums (two brokers draining in one rack: its other
   brokers take all the drained bytes and must send away what of their own their bands cannot
   then hold, far more than any of them alone is forced to send).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.base import Goal
from kafka_balancer.goals.rack import RackAwareGoal
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import REPLICAS
from kafka_balancer.model.rack_totals import racks_fixed
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel

Band = tuple[FloatArray, FloatArray]


@dataclass(frozen=True, slots=True)
class BoundBands:
    """The bands the bound may rely on; None where no met goal constrains that quantity.

    ``disk`` and ``replicas`` are per broker ``[B]``; ``topic`` per topic × broker ``[T, B]``
    (a cell a goal does not judge open: lo 0, hi ∞)."""

    disk: Band | None = None
    replicas: Band | None = None
    topic: Band | None = None
    # RackAware met: no rack holds more than its limit of a partition's replicas.
    rack_aware: bool = False
    # ``[racks]``: fact 9's kept bytes, what the drain kept in each rack adds to its active
    # brokers; None where nothing was drained into its rack.
    kept_in_rack: FloatArray | None = None


def bound_bands(
    met: list[Goal],
    aimed: list[Goal] | None = None,
    missed: list[Goal] | None = None,
    state: WorkingModel | None = None,
) -> BoundBands:
    """The bands of the goals a plan met that the bytes-moved bound can use: disk and replica
    count per broker (the tightest of every such goal) and the topic cells; of the ``aimed``
    goals, whose contract no plan can meet, the band the plan met instead (``aim_lo .. aim_hi``);
    and of the ``missed`` ones the band the plan reached in ``state``: the contract's, each
    broker's (cell's) edge moved out to where the plan left it. The bound is then of the plans
    that leave no broker further outside than this one."""
    per_broker: dict[int, list[Band]] = {int(Resource.DISK): [], REPLICAS: []}
    topic: Band | None = None
    rack_aware = False
    kinds = [(g, "met") for g in met] + [(g, "aimed") for g in aimed or []]
    kinds += [(g, "missed") for g in missed or [] if state is not None]
    for goal, kind in kinds:
        if isinstance(goal, RackAwareGoal):
            rack_aware = rack_aware or kind == "met"
        elif isinstance(goal, TopicReplicaDistributionGoal):
            judged = goal.judged[:, None]
            lo, hi = (goal.aim_lo, goal.aim_hi) if kind == "aimed" else (goal.lo, goal.hi)
            if kind == "missed" and state is not None:
                lo, hi = _reached(lo, hi, state.topic_count)
            topic = (np.where(judged, lo, 0.0), np.where(judged, hi, np.inf))
        elif isinstance(goal, BandGoal) and goal.active and goal.column in per_broker:
            lo, hi = (goal.aim_lo, goal.aim_hi) if kind == "aimed" else (goal.lo, goal.hi)
            if kind == "missed" and state is not None:
                lo, hi = _reached(lo, hi, state.quantity(goal.column))
            per_broker[goal.column].append((lo, hi))
    disk, replicas = (_tightest(per_broker[c]) for c in (int(Resource.DISK), REPLICAS))
    kept = _kept_in_rack(state) if state is not None and state.any_pinned else None
    return BoundBands(disk, replicas, topic, rack_aware, kept)


def _kept_in_rack(state: WorkingModel) -> FloatArray:
    """Fact 9: per rack, the bytes its active brokers gain at the least for the replicas pinned
    there (drained into their rack, or re-homed off an offline log dir within it)."""
    n_r = len(state.rack_names)
    parts, slots = np.nonzero(state.pinned_rack >= 0)
    cell = parts * n_r + state.pinned_rack[parts, slots]
    cells, kept = np.unique(cell, return_counts=True)
    part, rack = cells // n_r, cells % n_r
    rows = state.original_replicas[part]
    on = np.where(rows >= 0, rows, 0)
    held = ((rows >= 0) & state.active[on] & (state.rack[on] == rack[:, None])).sum(axis=1)
    gained = np.maximum(kept - held, 0) * state.disk[part]
    return np.bincount(rack, weights=gained, minlength=n_r).astype(np.float64)


def _reached(lo: FloatArray, hi: FloatArray, quantity: FloatArray | IntArray) -> Band:
    q = np.asarray(quantity, dtype=np.float64)
    return np.minimum(lo, q), np.maximum(hi, q)


def _tightest(bands: list[Band]) -> Band | None:
    if not bands:
        return None
    return np.max([lo for lo, _ in bands], axis=0), np.min([hi for _, hi in bands], axis=0)


@dataclass(frozen=True, slots=True)
class LowerBounds:
    """A plan's three bounds: bytes moved, bytes copied between racks, and the two together."""

    bytes_moved: float
    cross_rack: float
    rack_local: float


def lower_bounds(state: WorkingModel, bands: BoundBands) -> LowerBounds:
    """The three bounds, each broker's forced bytes (a sort of every replica) counted once."""
    forced = _forced_per_rack(state, bands)
    return LowerBounds(
        _bytes_moved(state, bands, forced), cross_rack_lower_bound(state, bands), _rack_local(forced)
    )


def bytes_moved_lower_bound(state: WorkingModel, bands: BoundBands) -> float:
    """The least bytes any plan from ``state``'s original assignment that meets ``bands`` and
    empties the draining brokers must move (see the module docstring for the argument)."""
    return _bytes_moved(state, bands, _forced_per_rack(state, bands))


def rack_local_lower_bound(state: WorkingModel, bands: BoundBands) -> float:
    """The least bytes moved plus bytes copied between racks of any plan that meets ``bands``
    (fact 6): what a plan that keeps every replica in its rack must move at the least."""
    return _rack_local(_forced_per_rack(state, bands))


def _bytes_moved(state: WorkingModel, bands: BoundBands, forced: tuple[FloatArray, FloatArray]) -> float:
    if bands.rack_aware and racks_fixed(state):
        return _rack_local(forced)
    removed, added = forced
    return float(max(removed.sum(), added.sum()))


def _rack_local(forced: tuple[FloatArray, FloatArray]) -> float:
    removed, added = forced
    return float(np.maximum(removed, added).sum())


def _forced_per_rack(state: WorkingModel, bands: BoundBands) -> tuple[FloatArray, FloatArray]:
    """Per rack, the least bytes that must leave it and come to it: its brokers' sums of (2)–(7),
    with fact 9 where the drain kept replicas in their rack."""
    replicas = _Replicas.of(state)
    units = _Units(state.n_brokers, replicas.broker, bands.disk, bands.replicas, bands.topic, state.active)
    removed, added = _forced(state, replicas, units, _on_broker(state))
    n_r, rack, active = len(state.rack_names), state.rack, state.active

    def per_rack(values: FloatArray, brokers: BoolArray) -> FloatArray:
        return np.bincount(rack[brokers], weights=values[brokers], minlength=n_r).astype(np.float64)

    every = np.ones(state.n_brokers, dtype=bool)
    out, into = per_rack(removed, every), per_rack(added, every)
    if bands.kept_in_rack is None:
        return out, into
    into = np.maximum(into, bands.kept_in_rack)
    if bands.disk is None:
        return out, into
    lo, hi = bands.disk
    leaving = per_rack(removed, ~active)
    on = np.bincount(replicas.broker, weights=replicas.weight, minlength=state.n_brokers).astype(np.float64)
    held = per_rack(on, active)
    shed = np.maximum(out - leaving, held + into - per_rack(hi, active))
    into = np.maximum(into, per_rack(lo, active) - held + shed)
    return leaving + shed, into


def cross_rack_lower_bound(state: WorkingModel, bands: BoundBands) -> float:
    """The least bytes any plan from ``state``'s original assignment that meets ``bands`` must
    copy between racks (facts 5 and 8 of the module docstring)."""
    replicas = _Replicas.of(state)
    n_r = len(state.rack_names)
    racks = [(state.rack == r) & state.active for r in range(n_r)]

    def per_rack(band: Band | None) -> Band | None:
        if band is None:
            return None
        lo, hi = band
        return (
            np.stack([lo[..., m].sum(axis=-1) for m in racks], axis=-1),
            np.stack([hi[..., m].sum(axis=-1) for m in racks], axis=-1),
        )

    units = _Units(
        n_r,
        state.rack[replicas.broker],
        per_rack(bands.disk),
        per_rack(bands.replicas),
        per_rack(bands.topic),
        np.ones(n_r, dtype=bool),
    )
    held = _in_rack(state, bands.rack_aware)
    removed, added = _forced(state, replicas, units, held)
    if bands.rack_aware:
        removed = np.maximum(removed, _over_rack_limit(state))
    return float(max(removed.sum(), added.sum(), _topic_crossings(state, replicas, units, held)))


def _over_rack_limit(state: WorkingModel) -> FloatArray:
    """``[racks]``: the bytes of the replicas a movable partition holds in a rack beyond its rack
    limit, which leave the rack for good in any plan that meets RackAware."""
    rows = state.original_replicas
    held = (rows >= 0) & state.movable[:, None]
    parts = np.nonzero(held)[0]
    n_r = len(state.rack_names)
    counts = np.zeros((len(state.rf), n_r))
    np.add.at(counts, (parts, state.rack[rows[held]]), 1.0)
    over = np.maximum(counts - state.rack_limit[:, None], 0.0) * state.disk[:, None]
    return np.asarray(over.sum(axis=0), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class _Replicas:
    """Every replica of the original assignment: its partition, broker, size and topic."""

    part: IntArray
    broker: IntArray
    weight: FloatArray
    topic: IntArray

    @classmethod
    def of(cls, state: WorkingModel) -> _Replicas:
        slots = np.arange(state.original_replicas.shape[1])[None, :] < state.rf[:, None]
        part, _ = np.nonzero(slots)
        return cls(part, state.original_replicas[slots], state.disk[part], state.topic[part])


@dataclass(frozen=True, slots=True)
class _Units:
    """What the bound counts removals and additions per (brokers, or racks), with each unit's
    bands after the plan; an inactive unit loses everything and gains nothing."""

    n: int
    of: IntArray
    disk: Band | None
    replicas: Band | None
    topic: Band | None
    active: BoolArray


# ``held(parts, units)``: which ``parts[k]`` can gain no replica at ``units[k]`` that it did not
# lose there; at most as many of a topic's partitions as the unit holds replicas of that topic.
Held = Callable[[IntArray, IntArray], BoolArray]


def _on_broker(state: WorkingModel) -> Held:
    def held(parts: IntArray, brokers: IntArray) -> BoolArray:
        return np.asarray((state.original_replicas[parts] == brokers[:, None]).any(axis=1), dtype=bool)

    return held


def _in_rack(state: WorkingModel, rack_aware: bool) -> Held:
    """A partition at its rack limit gains no replica in that rack it did not lose there, when
    RackAware is met; without it, any partition may."""

    def held(parts: IntArray, racks: IntArray) -> BoolArray:
        if not rack_aware:
            return np.zeros(len(parts), dtype=bool)
        rows = state.original_replicas[parts]
        counts = ((rows >= 0) & (state.rack[np.where(rows >= 0, rows, 0)] == racks[:, None])).sum(axis=1)
        return np.asarray(counts >= state.rack_limit[parts], dtype=bool)

    return held


def _forced(
    state: WorkingModel, replicas: _Replicas, units: _Units, held: Held
) -> tuple[FloatArray, FloatArray]:
    """Per unit, the least bytes that must leave it and the least that must come to it."""
    n_u = units.n
    disk_on = np.bincount(units.of, weights=replicas.weight, minlength=n_u).astype(np.float64)
    count_on = np.bincount(units.of, minlength=n_u).astype(np.float64)
    cells = _cells(state, replicas, units)
    removed = _removed(replicas, units, disk_on, count_on, cells)
    added = _added(state, units, held, disk_on, count_on, cells)
    if units.disk is not None:
        lo, hi = units.disk
        removed, added = np.maximum(removed, disk_on + added - hi), np.maximum(added, lo - disk_on + removed)
    return np.where(units.active, removed, disk_on), np.where(units.active, added, 0.0)


def _cells(state: WorkingModel, replicas: _Replicas, units: _Units) -> FloatArray:
    """``[T, units]``: each unit's replicas of each topic."""
    n_u, n_t = units.n, state.n_topics
    flat = np.bincount(replicas.topic * n_u + units.of, minlength=n_t * n_u)
    return np.asarray(flat.reshape(n_t, n_u), dtype=np.float64)


def _topic_crossings(state: WorkingModel, replicas: _Replicas, units: _Units, held: Held) -> float:
    """Fact 8 of the module docstring: per topic, the larger of the bytes its over-full rack
    cells must send out and the bytes its short ones must take in, summed over the topics."""
    if units.topic is None:
        return 0.0
    cells = _cells(state, replicas, units)
    mandatory = _mandatory(replicas, units, cells)
    out = np.bincount(replicas.topic[mandatory], weights=replicas.weight[mandatory], minlength=state.n_topics)
    gained, _ = _topic_gains(state, units, held, cells)
    into = np.bincount(state.topic[gained], weights=state.disk[gained], minlength=state.n_topics)
    return float(np.maximum(out, into).sum())


def _removed(
    replicas: _Replicas, units: _Units, disk_on: FloatArray, count_on: FloatArray, cells: FloatArray
) -> FloatArray:
    """Per unit, the least bytes that must leave it."""
    n_u = units.n
    part, unit, weight = replicas.part, units.of, replicas.weight
    mandatory = _mandatory(replicas, units, cells)
    forced = np.bincount(unit[mandatory], weights=weight[mandatory], minlength=n_u).astype(np.float64)
    if units.replicas is not None:
        least = np.maximum(count_on - units.replicas[1], 0.0)
        need = np.maximum(least - np.bincount(unit[mandatory], minlength=n_u), 0.0)
        rest = np.nonzero(~mandatory)[0]
        rest = rest[np.lexsort((part[rest], weight[rest], unit[rest]))]
        fill = rest[_rank_in_group(unit[rest]) < need[unit[rest]]]
        forced += np.bincount(unit[fill], weights=weight[fill], minlength=n_u)
    if units.disk is not None:
        forced = np.maximum(forced, disk_on - units.disk[1])
    return np.asarray(forced, dtype=np.float64)


def _mandatory(replicas: _Replicas, units: _Units, cells: FloatArray) -> BoolArray:
    """Which replicas are in the mandatory set of (3): per unit, the smallest of each topic cell
    over its ceiling, as many as it holds beyond."""
    n_t = cells.shape[0]
    part, unit, weight, topic = replicas.part, units.of, replicas.weight, replicas.topic
    mandatory = np.zeros(len(part), dtype=bool)
    if units.topic is None:
        return mandatory
    excess = np.maximum(cells - units.topic[1], 0.0)
    # Replicas by unit, then topic, then size: the first e_t of each cell are the mandatory set.
    order = np.lexsort((part, weight, topic, unit))
    cell = (unit * n_t + topic)[order]
    mandatory[order] = _rank_in_group(cell) < excess[topic[order], unit[order]]
    return mandatory


def _added(
    state: WorkingModel,
    units: _Units,
    held: Held,
    disk_on: FloatArray,
    count_on: FloatArray,
    cells: FloatArray,
) -> FloatArray:
    """Per unit, the least bytes that must come to it."""
    n_u = units.n
    gained, unit_of = _topic_gains(state, units, held, cells)
    forced = np.bincount(unit_of, weights=state.disk[gained], minlength=n_u).astype(np.float64)
    # The partitions each unit must gain for its topic cells, grouped by unit.
    order = np.argsort(unit_of, kind="stable")
    taken = gained[order]
    taken_by = np.searchsorted(unit_of[order], np.arange(n_u + 1))
    if units.replicas is not None:
        need_u = np.maximum(units.replicas[0] - count_on, 0.0) * units.active
        by_size = np.lexsort((np.arange(len(state.disk)), state.disk))
        n_taken = np.diff(taken_by)
        for u in np.nonzero(need_u > n_taken)[0]:
            more = int(need_u[u]) - int(n_taken[u])
            top = by_size[: more + int(count_on[u]) + int(n_taken[u])]
            ok = ~held(top, np.full(len(top), u, dtype=np.int64))
            ok &= ~np.isin(top, taken[taken_by[u] : taken_by[u + 1]])
            forced[u] += float(state.disk[top[ok][:more]].sum())
    if units.disk is not None:
        forced = np.maximum(forced, units.disk[0] - disk_on)
    return forced


def _topic_gains(
    state: WorkingModel, units: _Units, held: Held, cells: FloatArray
) -> tuple[IntArray, IntArray]:
    """The partitions the units must gain for their topic cells, each the smallest of its topic
    that can gain there, and the unit of each."""
    if units.topic is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    short = np.maximum(units.topic[0] - cells, 0.0) * units.active[None, :]
    by_topic = np.lexsort((np.arange(len(state.topic)), state.disk, state.topic))
    starts = np.searchsorted(state.topic[by_topic], np.arange(state.n_topics + 1))
    # Per short cell (t, u), the smallest partitions of t that can gain at u: among the first
    # short + count of t's (at most count of them are held at u).
    ts, us = np.nonzero(short)
    need = short[ts, us].astype(np.int64)
    window = np.minimum(starts[ts + 1] - starts[ts], need + cells[ts, us].astype(np.int64))
    cell = np.repeat(np.arange(len(ts)), window)
    offset = np.arange(len(cell)) - np.repeat(np.cumsum(window) - window, window)
    head = by_topic[starts[ts][cell] + offset]
    free = np.nonzero(~held(head, us[cell]))[0]
    kept = free[_rank_in_group(cell[free]) < need[cell[free]]]
    return head[kept], us[cell[kept]]


def _rank_in_group(keys: IntArray) -> IntArray:
    """Position of each element within its run of equal ``keys`` (``keys`` sorted)."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    starts = np.r_[0, np.nonzero(keys[1:] != keys[:-1])[0] + 1]
    lengths = np.diff(np.r_[starts, len(keys)])
    return np.asarray(np.arange(len(keys)) - np.repeat(starts, lengths), dtype=np.int64)
