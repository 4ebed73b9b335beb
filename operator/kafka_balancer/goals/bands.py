"""Goals that keep a per-broker quantity inside a band: capacity, resource and count distribution."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.band import TARGET_RANGE, GoalBand, goal_band, goal_column
from kafka_balancer.goals.base import EPSILON, Goal, GoalStatus
from kafka_balancer.goals.spec import GoalFamily, GoalSpec
from kafka_balancer.model import math
from kafka_balancer.model.math import FloatArray
from kafka_balancer.model.quantities import LEADERS, REPLICAS
from kafka_balancer.model.rack_totals import rack_ranges
from kafka_balancer.model.resources import Resource

if TYPE_CHECKING:
    from kafka_balancer.goals.port import SearchPort
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.working import WorkingModel

# Floating-point safety: planned brokers stay this far (relative to scale) inside a band.
MARGIN = 1e-6
# A rack that cannot meet a resource goal's contract has its brokers aimed at the rack's own
# mean, within this fraction of the goal's range. Within the whole range a broker could end the
# rack's shortfall plus the whole range off the contract's mean (25 % where the rack's mean is
# 16.7 % off and the range is 10 %); an exact split would chase bytes with ever smaller moves.
SHORT_RACK_RANGE = 0.5
# A rack whose total lies this close (relative) to the sum of its brokers' band edges is within
# them. Whole shares put it exactly there (RF 4 on 4 racks, a rack of 10 capacity units in 36:
# its floor at 90 % of 10/36 is its quarter), and the last bits of two float sums, which differ
# between the cluster planned and the one it leaves, then decided whether the rack was short
# and aimed elsewhere: a plan that did not replan to nothing.
RACK_EDGE = 1e-9
# A rack's brokers are filled before any broker sheds when at least this share of what they lack
# below their bands must come from other racks (a new rack: all of it). A rack only a little
# short fills mostly from inside: filled first, its brokers took replicas other than those the
# over brokers of their own rack would have shed to them, and the plan moved more.
FED_FROM_OTHER_RACKS = 0.5


@dataclass(frozen=True, slots=True)
class RackShortfall:
    """A rack whose total of a goal's quantity no plan that meets RackAware can bring within the
    sum of its brokers' bands (``least .. most``): RackAware lets it hold ``held_least ..
    held_most`` (the same figure when it keeps every replica in its rack), and with the other
    racks' limits it is aimed at ``total``."""

    rack: str
    total: float
    least: float
    most: float
    held_least: float
    held_most: float


@dataclass(frozen=True, slots=True)
class RackAim:
    """Where a distribution goal aims when some racks cannot meet its contract: ``band`` is the
    contract's, but for the brokers of the ``short`` racks, aimed at their rack's own mean."""

    band: GoalBand
    short: tuple[RackShortfall, ...]


def _outside(q: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """``math.outside_band`` without its input conversions, for the hot path (float arrays only)."""
    return np.maximum(q - hi, 0.0) + np.maximum(lo - q, 0.0)


class BandGoal(Goal):
    """Keeps ``state.quantity(column)`` of every broker within a band.

    ``lo..hi`` is the contract (status, reports, the bytes-moved bound). The optimizer aims at the
    contract too, but where a rack cannot meet it (``aim``: RackAware keeps the rack's total as it
    is) at the rack's own mean: the closest balance the constraints allow. From the aim come the
    veto band (minus a floating-point margin) and the target band, where fixed brokers go.
    """

    _cache_key: tuple[int, bool] | None = None
    _cache: tuple[FloatArray, FloatArray]

    def __init__(self, spec: GoalSpec, band: GoalBand, aim: RackAim | None = None) -> None:
        super().__init__(spec)
        self.band = band
        self.column = band.column
        self.lo, self.hi, self.scale = band.lo, band.hi, band.scale
        self.active = band.enforced
        self.rack_aim = aim
        aimed = band if aim is None else aim.band
        self.aim_lo, self.aim_hi = aimed.lo, aimed.hi
        # Resources are floats: keep planned brokers a hair inside; counts are exact integers.
        margin = MARGIN if band.column < REPLICAS else 0.0
        slack = margin * self.scale
        self.veto_lo = np.where(self.aim_lo > 0, self.aim_lo + slack, self.aim_lo)
        self.veto_hi = self.aim_hi - slack
        self.target_lo = np.maximum(
            np.where(aimed.target_lo > 0, aimed.target_lo + slack, aimed.target_lo), self.veto_lo
        )
        self.target_hi = np.minimum(aimed.target_hi - slack, self.veto_hi)

    def band_edges(self, target: bool) -> tuple[FloatArray, FloatArray]:
        """The target band (where a broker being fixed is aimed) or the veto band."""
        return (self.target_lo, self.target_hi) if target else (self.veto_lo, self.veto_hi)

    def _before(self, state: WorkingModel, target: bool) -> tuple[FloatArray, FloatArray]:
        """Per-broker quantity and its distance outside a band, cached until the state changes."""
        key = (state.journal.version, target)
        if self._cache_key != key:
            q = state.quantity(self.column)
            self._cache = (q, _outside(q, *self.band_edges(target)))
            self._cache_key = key
        return self._cache

    def affects_leadership(self) -> bool:
        return self.column in (Resource.NETWORK_OUT, Resource.CPU, LEADERS)

    def needs_fix(self, state: WorkingModel) -> FloatArray:
        """Per-broker distance outside the aimed band (relative); brokers above EPSILON get fixed."""
        if not self.active:
            return np.zeros(state.n_brokers)
        return math.outside_band(state.quantity(self.column), self.aim_lo, self.aim_hi) / self.scale

    def contract_violation(self, state: WorkingModel) -> FloatArray:
        """Per-broker distance outside the contract's band (relative)."""
        if not self.active:
            return np.zeros(state.n_brokers)
        return math.outside_band(state.quantity(self.column), self.lo, self.hi) / self.scale

    def evaluate(
        self, state: WorkingModel, cands: Candidates, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        if not self.active:
            return np.zeros(len(cands)), np.zeros((len(cands), state.n_brokers))
        lo, hi = self.band_edges(target)
        q, before = self._before(state, target)
        d = cands.delta[:, self.column]
        src = cands.src
        after_src = _outside(q[src] - d, lo[src], hi[src])
        after = _outside(q[None, :] + d[:, None], lo, hi)
        return (after_src - before[src]) / self.scale[src], (after - before) / self.scale

    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        shape = (len(give), len(take))
        if not self.active:
            return np.zeros(shape), np.zeros(shape)
        lo, hi = self.band_edges(target)
        q = state.quantity(self.column)
        dq = give.delta[:, self.column][:, None] - take.delta[:, self.column][None, :]
        dx = math.outside_band(q[x] - dq, lo[x], hi[x]) - math.outside_band(q[x], lo[x], hi[x])
        dy = math.outside_band(q[y] + dq, lo[y], hi[y]) - math.outside_band(q[y], lo[y], hi[y])
        return dx / self.scale[x], dy / self.scale[y]

    def needs_fix_at(self, state: WorkingModel, broker: int) -> float:
        """``needs_fix(state)[broker]`` of one broker, with the same arithmetic: the search asks
        after every action of a shed or fill, and every broker's cost a dozen numpy calls."""
        if not self.active:
            return 0.0
        q = self._value(state, broker)
        outside = max(q - float(self.aim_hi[broker]), 0.0) + max(float(self.aim_lo[broker]) - q, 0.0)
        return outside / float(self.scale[broker])

    def _value(self, state: WorkingModel, broker: int) -> float:
        """``state.quantity(self.column)[broker]``, without building every broker's."""
        if self.column < REPLICAS:
            return float(state.load[broker, self.column])
        counts = state.replica_count if self.column == REPLICAS else state.leader_count
        return float(counts[broker])

    def violation(self, state: WorkingModel) -> float:
        return float(self.contract_violation(state).sum())

    def status(self, state: WorkingModel) -> GoalStatus:
        fix = self.contract_violation(state)
        worst = self.worst_deviation(state)
        if not (fix > EPSILON).any():
            return GoalStatus(True, worst, "")
        b = int(np.argmax(fix))
        q = float(state.quantity(self.column)[b])
        detail = (
            f"broker {int(state.broker_ids[b])} has {self.describe(q, b)}, "
            f"band {self.describe(float(self.lo[b]), b)} .. {self.describe(float(self.hi[b]), b)}"
        )
        return GoalStatus(False, worst, detail + self._why_short(state, b))

    def _why_short(self, state: WorkingModel, broker: int) -> str:
        """Why ``broker`` cannot be brought into the band, when its rack is why."""
        rack = state.rack_names[int(state.rack[broker])]
        short = [s for s in self.rack_aim.short if s.rack == rack] if self.rack_aim is not None else []
        if not short:
            return ""
        unit = (
            {REPLICAS: "replicas", LEADERS: "leaders"}[self.column]
            if self.column >= REPLICAS
            else Resource(self.column).key
        )
        gap = short[0]
        bands = f"its brokers' bands add up to {gap.least:.6g} .. {gap.most:.6g}"
        if gap.held_least == gap.held_most:
            held = f"rack {rack} holds {gap.total:.6g} {unit}, which RackAware keeps in it, and {bands}"
        else:
            held = (
                f"under RackAware rack {rack} can hold {gap.held_least:.6g} .. {gap.held_most:.6g} {unit} "
                f"and each other rack only so much, so {bands} and their total is aimed at {gap.total:.6g}"
            )
        return f"; {held}: they are balanced around the rack's own mean instead"

    def describe(self, value: float, broker: int) -> str:
        return f"{value:.6g}"

    def worst_deviation(self, state: WorkingModel) -> float:
        raise NotImplementedError

    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        for _ in range(64):
            violation = self.needs_fix(state)
            todo = [int(b) for b in np.argsort(-violation, kind="stable") if violation[b] > EPSILON]
            if not todo:
                return
            progress = False
            # Not for a leadership, which copies no data wherever it comes from.
            for b in [] if self.affects_leadership() else self._fed_from_other_racks(state, todo):
                progress |= search.fill(self, b)
            over = [b for b in todo if state.quantity(self.column)[b] > self.aim_hi[b]]
            if over and not self.affects_leadership():
                # Moves of replicas only: many over brokers' sheds go together, in rounds.
                progress |= search.shed_apart(self, over)
            for b in todo:
                if state.quantity(self.column)[b] > self.aim_hi[b]:
                    progress |= search.shed(self, b)
            for b in todo:
                if state.quantity(self.column)[b] < self.aim_lo[b] and self.needs_fix_at(state, b) > EPSILON:
                    progress |= search.fill(self, b)
            if not progress:
                return

    def _fed_from_other_racks(self, state: WorkingModel, todo: list[int]) -> list[int]:
        """The brokers of ``todo`` below their band in a rack whose brokers hold less than their
        bands' floors add up to (a new rack, a rack of larger brokers). What they lack must
        cross from other racks anyway, so they are filled before any over broker sheds: from the
        brokers with most to give. Filled after, they found the hot brokers' excess spread over
        those brokers' own racks, and took other replicas: each byte they gained was copied
        twice."""
        q = state.quantity(self.column)
        lo, _ = self.band_edges(False)
        n = len(state.rack_names)
        room = np.bincount(state.rack, weights=np.where(state.active, q - lo, 0.0), minlength=n)
        lack = np.bincount(
            state.rack, weights=np.where(state.active, np.maximum(lo - q, 0.0), 0.0), minlength=n
        )
        short = -room >= FED_FROM_OTHER_RACKS * lack
        return [b for b in todo if short[state.rack[b]] and q[b] < self.aim_lo[b]]

    # Sizing for the search: how far a broker is from its target band, and what it can spare.
    def excess(self, state: WorkingModel, broker: int) -> float:
        return self._value(state, broker) - float(self.target_hi[broker])

    def deficit(self, state: WorkingModel, broker: int) -> float:
        return float(self.target_lo[broker]) - self._value(state, broker)

    def surplus(self, state: WorkingModel) -> FloatArray:
        """How much each broker could give before leaving its band, relative to its scale."""
        return (state.quantity(self.column) - self.veto_lo) / self.scale


class CapacityGoal(BandGoal):
    """A broker may use at most ``thresholdPercent`` of its capacity (of a resource or replicas)."""

    def describe(self, value: float, broker: int) -> str:
        if self.column == REPLICAS:
            return f"{value:.0f} replicas"
        return f"{100.0 * value / self.scale[broker]:.2f}% of capacity"

    def status(self, state: WorkingModel) -> GoalStatus:
        base = super().status(state)
        if base.satisfied:
            return base
        b = int(np.argmax(self.contract_violation(state)))
        q = float(state.quantity(self.column)[b])
        limit = (
            f"at most {self.hi[b]:.0f} replicas"
            if self.column == REPLICAS
            else f"threshold {self.spec.threshold_percent}%"
        )
        return GoalStatus(
            False,
            base.worst_deviation,
            f"broker {int(state.broker_ids[b])} holds {self.describe(q, b)} ({limit})",
        )

    def worst_deviation(self, state: WorkingModel) -> float:
        mask = state.active
        if not mask.any():
            return 0.0
        return float(100.0 * self.band.utilisation(state.quantity(self.column))[mask].max())


class DistributionGoal(BandGoal):
    """Every active broker within mean × (1 ± range): utilisation for resources, counts for
    replicas and leaders (expected count scaled by warm-up share, band floor/ceil)."""

    @property
    def mean(self) -> float:
        return self.band.mean

    def worst_deviation(self, state: WorkingModel) -> float:
        mask = self.band.counted
        if not mask.any() or self.mean <= 0:
            return 0.0
        return float(100.0 * self.band.deviation(state.quantity(self.column))[mask].max())

    def describe(self, value: float, broker: int) -> str:
        if self.column >= REPLICAS:
            return f"{value:.0f} {'replicas' if self.column == REPLICAS else 'leaders'}"
        cap = float(self.scale[broker] / self.mean) if self.mean > 0 else 0.0
        return f"{100.0 * value / cap:.2f}% utilisation" if cap > 0 else f"{value:.6g}"


def band_goal(spec: GoalSpec, state: WorkingModel, racks_held: bool = False) -> BandGoal:
    """``racks_held``: RackAware is hard or optimised before this goal, so no move breaks it."""
    column = goal_column(spec.type)
    capacity = state.capacity[:, column] if column < REPLICAS else None
    band = goal_band(
        spec, state.quantity(column), capacity, state.share, state.active, state.demoted, _kept(state, column)
    )
    if spec.type.family is GoalFamily.CAPACITY:
        return CapacityGoal(spec, band)
    ranges = rack_ranges(state, column) if racks_held else None
    aim = rack_aim(band, state, *ranges) if ranges is not None else None
    return DistributionGoal(spec, band, aim)


def rack_totals(expected: FloatArray, least: FloatArray, most: FloatArray, total: float) -> FloatArray:
    """``[racks]``: each rack's total, within ``least .. most``, adding up to ``total``, as near
    its ``expected`` share as those limits allow: every rack at λ × expected clipped to its
    limits, with the one λ that adds up (the worst relative deviation is then the least). A
    rack with nothing expected stays at its least."""

    def at(scale: float) -> FloatArray:
        return np.asarray(np.clip(scale * expected, least, most), dtype=np.float64)

    lo_scale, hi_scale = 0.0, 1.0
    while float(at(hi_scale).sum()) < total and hi_scale < 1e12:
        hi_scale *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo_scale + hi_scale)
        lo_scale, hi_scale = (mid, hi_scale) if float(at(mid).sum()) < total else (lo_scale, mid)
    return at(hi_scale)


def rack_aim(
    band: GoalBand, state: WorkingModel, held_least: FloatArray, held_most: FloatArray
) -> RackAim | None:
    """The band of a distribution goal where RackAware limits each rack's total (``held_least
    .. held_most``, one figure when it keeps every replica in its rack), with each rack that
    cannot meet the contract aimed at its own mean: the racks' totals as near their expected
    shares as their limits allow (``rack_totals``), and a rack whose total lies outside the sum
    of its brokers' bands has the contract's expected quantities scaled by that total over their
    sum: the split with the least worst deviation the racks allow. A count is aimed at that
    split exactly (floor .. ceil), which whole replicas reach; a resource within half the
    range of it (``SHORT_RACK_RANGE``), as partitions of uneven sizes would chase a split to
    the byte with ever smaller moves. None
    when every rack can meet the contract."""
    lo, hi = band.lo.copy(), band.hi.copy()
    target_lo, target_hi = band.target_lo.copy(), band.target_hi.copy()
    n_racks = len(state.rack_names)
    counted = [(state.rack == rack) & band.counted for rack in range(n_racks)]
    expected_of = np.array([float(band.expected[m].sum()) for m in counted])
    grand = float(state.quantity(band.column).sum())
    totals = rack_totals(
        expected_of * grand / max(float(expected_of.sum()), 1e-300), held_least, held_most, grand
    )
    short: list[RackShortfall] = []
    for rack, name in enumerate(state.rack_names):
        members = counted[rack]
        total = float(totals[rack])
        expected = float(expected_of[rack])
        least, most = float(band.lo[members].sum()), float(band.hi[members].sum())
        edge = RACK_EDGE * abs(total)
        if expected <= 0 or least - edge <= total <= most + edge:
            continue
        short.append(RackShortfall(name, total, least, most, float(held_least[rack]), float(held_most[rack])))
        factor = total / expected
        if band.column >= REPLICAS:
            lo[members], hi[members] = math.count_bounds(band.expected[members] * factor, 0.0)
            target_lo[members], target_hi[members] = lo[members], hi[members]
        else:
            # Resource bands are the mean times each broker's share: linear in the mean.
            centre = band.expected[members] * factor
            half = (band.hi[members] - band.lo[members]) / 2 * factor * SHORT_RACK_RANGE
            lo[members], hi[members] = centre - half, centre + half
            target_lo[members] = centre - half * TARGET_RANGE
            target_hi[members] = centre + half * TARGET_RANGE
    if not short:
        return None
    aimed = replace(band, lo=lo, hi=hi, target_lo=target_lo, target_hi=target_hi)
    return RackAim(aimed, tuple(short))


def _kept(state: WorkingModel, column: int) -> FloatArray | None:
    """Per broker: the resource a demoted broker keeps once it leads nothing (what its replicas
    add as followers); None without demoted brokers or for a count."""
    if column >= REPLICAS or not state.demoted.any():
        return None
    kept = np.zeros(state.n_brokers)
    for b in (int(i) for i in np.nonzero(state.demoted)[0]):
        kept[b] = float(state.follower_load[state.parts_on(b), column].sum())
    return kept
