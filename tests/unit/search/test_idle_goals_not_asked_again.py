"""A goal that found nothing to do is not asked again while the assignment is the one it found
nothing in, and is asked again once another goal changed it.

The goals are stand-ins that count their calls; one moves a replica on its first calls."""

from __future__ import annotations

import numpy as np

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.port import SearchPort
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.optimizer import _passes
from kafka_balancer.planner.search import Search
from tests.unit.clusters import broker, partition, snapshot
from tests.unit.search.goal_standins import StandInGoal


class _Counting(StandInGoal):
    """Moves partition 0's replica to broker 1 on its first ``moves`` calls, then nothing."""

    def __init__(self, moves: int) -> None:
        super().__init__(GoalSpec.default(GoalType.REPLICA_DISTRIBUTION))
        self.calls = 0
        self.moves = moves

    def optimize(self, state: WorkingModel, search: SearchPort) -> None:
        self.calls += 1
        if self.calls > self.moves:
            return
        src = int(state.replicas[0, 0])
        state.apply(replica_moves(state, src, np.array([0], dtype=np.int64)), 0, 1 - src)
        assert isinstance(search, Search)
        search.actions += 1


def _state() -> WorkingModel:
    brokers = [broker(0, "a"), broker(1, "a")]
    return WorkingModel(parse_snapshot(snapshot(brokers, [partition("t", 0, [0])])))


def test_a_goal_that_found_nothing_is_not_asked_again_on_the_same_assignment() -> None:
    # Pass 1: the first goal moves, the second finds nothing after it. Pass 2: the first finds
    # nothing, so the assignment is the one the second found nothing in: it is not asked.
    mover, idle = _Counting(moves=1), _Counting(moves=0)
    _passes(_state(), [mover, idle])
    assert (mover.calls, idle.calls) == (2, 1)


def test_a_goal_that_found_nothing_is_asked_again_once_the_assignment_changed() -> None:
    # The second goal finds nothing in pass 1 and pass 2, each time after the first one moved;
    # in pass 3 nothing changed since it last found nothing.
    mover, idle = _Counting(moves=2), _Counting(moves=0)
    _passes(_state(), [mover, idle])
    assert (mover.calls, idle.calls) == (3, 2)
