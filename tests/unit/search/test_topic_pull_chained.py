"""A broker short of a topic's replicas takes one from another rack: the smallest one, even when
it sits on a broker at its floor for the topic, which a broker of that broker's own rack then
refills; not when the refill costs more bytes (copied and across racks together) than it saves.

Judged at the goal, before the plan's undos: those can bring a large replica back into its rack
in exchange for a smaller one afterwards, but only where every band allows each of the two moves
alone.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.rack import RackAwareGoal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.search import Search
from tests.unit.clusters import broker, partition, snapshot

GB = 1.0e9


def _cluster(small: tuple[float, float]) -> WorkingModel:
    """32 single-replica partitions of topic t on 8 brokers (band 2..6 at ±50 %): rack a's brokers
    0 (2 replicas) and 1 (1, below its band); rack b's broker 2 at its floor with partitions 3
    and 4 (``small`` GB), broker 3 with five of 20..24 GB (partitions 5-9); rack c's brokers
    4-7 with 5, 5, 6 and 6 of 30 GB. Broker 1's missing replica must come from another rack."""
    brokers = [broker(b, "aabbcccc"[b]) for b in range(8)]
    holders = [0, 0, 1, 2, 2, 3, 3, 3, 3, 3] + [4] * 5 + [5] * 5 + [6] * 6 + [7] * 6
    sizes = [30.0, 30.0, 30.0, *small, 20.0, 21.0, 22.0, 23.0, 24.0] + [30.0] * 22
    parts = [partition("t", i, [b], disk=sizes[i] * GB) for i, b in enumerate(holders)]
    return WorkingModel(parse_snapshot(snapshot(brokers, parts)))


def _optimize(state: WorkingModel) -> dict[int, int]:
    """The topic goal alone, RackAware vetoing; which partition went to which broker."""
    rack = RackAwareGoal(GoalSpec.default(GoalType.RACK_AWARE), state)
    spec = GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION, range_percent=50, hard=False)
    goal = TopicReplicaDistributionGoal(spec, state, racks_held=True)
    goal.optimize(state, Search(state, [rack], []))
    assert not (goal.per_cell(state) > 0).any()
    moved = np.nonzero(state.replicas[:, 0] != state.original_replicas[:, 0])[0]
    return {int(p): int(state.replicas[p, 0]) for p in moved}


def test_the_smallest_replica_crosses_and_its_rack_refills_its_broker() -> None:
    # 1 GB across racks and 20 GB within rack b, where a pull from broker 3 (or rack c), which
    # can spare one, copies 20 GB (or 30) across.
    assert _optimize(_cluster((1.0, 2.0))) == {3: 1, 5: 2}


def test_a_chain_that_copies_more_than_it_saves_across_is_left() -> None:
    # 12 GB across and 20 GB within (44 GB copied and across together) against 20 GB across (40).
    assert _optimize(_cluster((12.0, 13.0))) == {5: 1}
