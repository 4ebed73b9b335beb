"""An exchange between racks asked to count the bytes it copies across racks takes the pair that
copies fewest, bytes moved and across together: a replica the plan already moved within its rack
costs nothing more to move on, but all its bytes across.

The topic goal asks so of its exchanges between racks, where every pair fixes the same cell (mid
at seed 2 copied 7.6 GB of its 13.1 GB across racks by one such exchange, where 4.9 GB must
cross). The goal here is a stand-in that finds every pair equally good, so that the bytes alone
rank them."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.candidate_moves import replica_moves
from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import FloatArray
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from tests.unit.clusters import broker, partition, snapshot
from tests.unit.search.goal_standins import StandInGoal

GB = 1.0e9


class _EveryPairAlike(StandInGoal):
    """Every exchange improves the giving broker by the same amount."""

    def evaluate_pairs(
        self, state: WorkingModel, give: Candidates, take: Candidates, x: int, y: int, target: bool = False
    ) -> tuple[FloatArray, FloatArray]:
        return -np.ones((len(give), len(take))), np.zeros((len(give), len(take)))


def _state() -> WorkingModel:
    """Rack a: brokers 0 and 1; rack b: broker 2. Partition 0 (50 GB) moved by the plan from
    broker 1 to broker 0, within rack a; partition 1 (5 GB) on broker 0 from the start;
    partition 2 (5 GB) on broker 2."""
    brokers = [broker(0, "a"), broker(1, "a"), broker(2, "b")]
    parts = [
        partition("t", 0, [1], disk=50 * GB),
        partition("t", 1, [0], disk=5 * GB),
        partition("u", 2, [2], disk=5 * GB),
    ]
    state = WorkingModel(parse_snapshot(snapshot(brokers, parts)))
    state.apply(replica_moves(state, 1, np.array([0], dtype=np.int64)), 0, 0)
    return state


@pytest.mark.parametrize(
    ("across", "crossing"),
    [
        # 5 + 5 GB moved and 5 + 5 across, against 0 + 5 moved and 50 + 5 across.
        (True, 1),
        # By the bytes moved alone, the replica already moving costs nothing.
        (False, 0),
    ],
)
def test_an_exchange_between_racks_counts_the_bytes_it_copies_across(across: bool, crossing: int) -> None:
    state = _state()
    goal = _EveryPairAlike(GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION))
    give = replica_moves(state, 0)
    take = replica_moves(state, 2)
    assert Search(state).exchange(goal, give, take, 0, 2, across)
    assert state.replicas[crossing, 0] == 2
    assert state.replicas[2, 0] == 0
