"""A stand-in goal for tests of the search and the passes: met, changed by no move, and doing
nothing when optimised; a test's subclass overrides what it exercises."""

from __future__ import annotations

import numpy as np

from kafka_balancer.goals.base import Goal, GoalStatus, no_change
from kafka_balancer.goals.port import SearchPort
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import FloatArray
from kafka_balancer.model.working import WorkingModel


class StandInGoal(Goal):
    def evaluate(
        self, state: WorkingModel, cands: Candidates, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        return no_change(cands, state.n_brokers)

    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        return np.zeros((len(give), len(take))), np.zeros((len(give), len(take)))

    def violation(self, state: WorkingModel) -> float:
        return 0.0

    def status(self, state: WorkingModel) -> GoalStatus:
        return GoalStatus(True, 0.0, "")

    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        return None
