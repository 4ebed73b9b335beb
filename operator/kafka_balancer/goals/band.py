"""The band of a per-broker goal, computed once for the planner and the Spark job alike.

A per-broker goal keeps one quantity of every broker (a resource load, the replica count or the
leader count) within ``lo .. hi``. Capacity goals: at most ``thresholdPercent`` of capacity.
Distribution goals: mean × (1 ± range) of effective capacity (resources, capacity-weighted mean
over active brokers) or floor/ceil of the expected count (counts, split by warm-up share); below
``thresholdPercent`` mean utilisation a resource distribution goal holds trivially.

A demoted broker leads nothing, so the distribution goals of what leadership carries (leader count,
network out, cpu) leave it out: its share of their mean and expected count is 0 and its band is open.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.goals.spec import GoalFamily, GoalSpec, GoalType
from kafka_balancer.model import math
from kafka_balancer.model.math import BoolArray, FloatArray
from kafka_balancer.model.quantities import LEADERS, REPLICAS
from kafka_balancer.model.resources import Resource

# A distribution goal being fixed aims for this fraction of its range, so the goals optimised
# after it keep some room to move without breaking it.
TARGET_RANGE = 0.9

# The quantities a leader carries more of than a follower: what a demoted broker gives up.
LEADERSHIP_COLUMNS = (int(Resource.NETWORK_OUT), int(Resource.CPU), LEADERS)


def goal_column(goal_type: GoalType) -> int:
    """The quantity column a per-broker goal constrains."""
    if goal_type.resource is not None:
        return int(goal_type.resource)
    return LEADERS if goal_type is GoalType.LEADER_DISTRIBUTION else REPLICAS


@dataclass(frozen=True, slots=True)
class GoalBand:
    column: int
    lo: FloatArray
    hi: FloatArray
    # Where a broker being fixed is aimed (distribution goals: TARGET_RANGE of the range).
    target_lo: FloatArray
    target_hi: FloatArray
    # Normaliser of violations: the broker's expected quantity (distribution) or capacity.
    scale: FloatArray
    # Distribution goals: mean utilisation (resources) or mean count per full broker; NaN otherwise.
    mean: float
    expected: FloatArray
    enforced: bool
    # The brokers the goal measures: active ones, less demoted ones for the leadership columns.
    counted: BoolArray

    def violation(self, quantity: FloatArray) -> FloatArray:
        """Per-broker distance outside the band, relative to scale (0 when not enforced)."""
        if not self.enforced:
            return np.zeros_like(quantity)
        return math.outside_band(quantity, self.lo, self.hi) / self.scale

    def utilisation(self, quantity: FloatArray) -> FloatArray:
        """Capacity goals: share of capacity. Distribution goals: utilisation comparable to ``mean``."""
        if np.isnan(self.mean):
            return np.asarray(quantity / self.scale, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(self.expected > 0, quantity / self.expected * self.mean, 0.0))

    def deviation(self, quantity: FloatArray) -> FloatArray:
        """Distribution goals: |utilisation − mean| ÷ mean per broker."""
        return math.relative_deviation(self.utilisation(quantity), self.mean)


def goal_band(
    spec: GoalSpec,
    quantity: FloatArray,
    capacity: FloatArray | None,
    share: FloatArray,
    active: BoolArray,
    demoted: BoolArray | None = None,
    kept: FloatArray | None = None,
) -> GoalBand:
    """``quantity``: the goal's column per broker; ``capacity``: its resource capacity per broker
    (None for counts); ``share``: warm-up share (the planner passes 0 for draining brokers);
    ``demoted``: brokers that may lead nothing (None: none); ``kept``: what of ``quantity`` a
    demoted broker keeps as a follower (follower cpu), which the other brokers cannot take."""
    column = goal_column(spec.type)
    n = len(quantity)
    share = np.where(active, share, 0.0)
    exempt = np.zeros(n, dtype=bool)
    if demoted is not None and column in LEADERSHIP_COLUMNS and spec.type.family is not GoalFamily.CAPACITY:
        exempt = demoted & active
        share = np.where(exempt, 0.0, share)
    counted = active & ~exempt
    if spec.type.family is GoalFamily.CAPACITY:
        if column == REPLICAS:
            hi = np.full(n, float(spec.max_replicas_per_broker))
            scale = np.maximum(hi, 1.0)
        else:
            assert capacity is not None
            hi = capacity * spec.threshold_percent / 100.0
            scale = np.maximum(capacity, 1e-300)
        lo = np.full(n, -np.inf)
        return GoalBand(column, lo, hi, lo, hi, scale, float("nan"), scale, True, active)
    r = spec.range_percent / 100.0
    total = float(quantity.sum()) - (float(kept[exempt].sum()) if kept is not None else 0.0)
    if capacity is not None:
        effective = capacity * share
        mean = float(math.capacity_weighted_mean(np.array(total), effective, active))
        lo, hi = math.distribution_bounds(mean, r, effective)
        target = math.distribution_bounds(mean, r * TARGET_RANGE, effective)
        expected = mean * effective
        fallback = mean * capacity
        enforced = mean > 0 and mean * 100.0 >= spec.threshold_percent
    else:
        expected = math.expected_counts(total, share)
        mean = total / max(float(share.sum()), 1e-300)
        lo, hi = math.count_bounds(expected, r)
        target = math.count_bounds(expected, r * TARGET_RANGE)
        fallback = np.full(n, mean)
        enforced = total > 0
    scale = np.maximum(np.where(expected > 0, expected, fallback), 1e-300)
    # Open for a demoted broker: whatever it still leads (every replica demoted) is no violation.
    lo, target_lo = np.where(exempt, 0.0, lo), np.where(exempt, 0.0, target[0])
    hi, target_hi = np.where(exempt, np.inf, hi), np.where(exempt, np.inf, target[1])
    return GoalBand(column, lo, hi, target_lo, target_hi, scale, mean, expected, enforced, counted)
