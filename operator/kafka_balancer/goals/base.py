"""What every goal offers the optimizer: a measure of its violation and how candidates change it."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.goals.spec import GoalSpec
from kafka_balancer.model.math import BoolArray, FloatArray

if TYPE_CHECKING:
    from kafka_balancer.goals.port import SearchPort
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.working import WorkingModel

# Violations are in relative units (a broker's deviation ÷ its expected value); below this
# they are rounding noise, not something worth moving bytes for.
EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class GoalStatus:
    satisfied: bool
    # Distribution goals: the largest |utilisation − mean| ÷ mean over active brokers, in %.
    # Capacity goals: the highest utilisation in % of capacity. Rack: violating partitions.
    worst_deviation: float
    detail: str


class Goal(abc.ABC):
    """A goal bound to one planning state (its bands are fixed for the whole plan)."""

    # Whether a move's change of this goal depends on the moving partition's replicas only: then
    # no other partition's move can offset it (pruning offers no exchange such a goal refused).
    per_partition = False

    def __init__(self, spec: GoalSpec) -> None:
        self.spec = spec

    @property
    def hard(self) -> bool:
        return self.spec.hard

    @abc.abstractmethod
    def evaluate(
        self, state: WorkingModel, cands: Candidates, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        """Change of this goal's violation at each candidate's source ``[K]`` and at every
        possible destination broker ``[K, B]`` if the candidate were applied there.

        ``target``: measure against the band the goal aims for when it is being optimised
        (narrower, to leave later goals some slack) instead of the band it defends as a veto."""

    def kept(self, state: WorkingModel, cands: Candidates, tolerance: float) -> BoolArray:
        """``[K, B]``: where each candidate may go with this goal getting worse by no more than
        ``tolerance`` at either end (the goal as a veto)."""
        src, dst = self.evaluate(state, cands)
        return np.asarray((src <= tolerance)[:, None] & (dst <= tolerance), dtype=bool)

    def kept_at(self, state: WorkingModel, cands: Candidates, dest: int, tolerance: float) -> BoolArray:
        """``[K]``: ``kept``'s column ``dest``, for a search with one destination (a fill, a
        pull, an undo), where a goal may answer without the other brokers' columns."""
        return np.asarray(self.kept(state, cands, tolerance)[:, dest], dtype=bool)

    @abc.abstractmethod
    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        """Change of the violation at ``x`` and at ``y`` ``[I, J]`` if ``give[i]`` moves from x to y
        and ``take[j]`` moves from y to x together (a swap)."""

    @abc.abstractmethod
    def violation(self, state: WorkingModel) -> float:
        """Total violation (0 when the goal holds with the planner's safety margin)."""

    @abc.abstractmethod
    def status(self, state: WorkingModel) -> GoalStatus:
        """Whether the goal holds by the contract's bands, for reports and hard-goal checks."""

    @abc.abstractmethod
    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        """Apply moves (through ``search``, which enforces vetoes) until satisfied or stuck."""

    def affects_leadership(self) -> bool:
        """Whether a leadership change (no data moved) can change this goal's violation."""
        return False


def no_change(cands: Candidates, n_brokers: int) -> tuple[FloatArray, FloatArray]:
    return np.zeros(len(cands)), np.zeros((len(cands), n_brokers))
