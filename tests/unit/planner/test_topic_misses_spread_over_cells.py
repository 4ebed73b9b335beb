"""Where TopicReplicaDistribution's bands cannot all be met, the misses are spread over a broker's
cells rather than left in one: once no more cells can be brought into their bands, exchanges of
replicas of two topics are judged by the squared distances outside the bands, so one that evens
out two cells is a gain (by the distances themselves it was none, or a loss of the two cells'
scales). Before, a new broker filled to its count floor from the few movable topics kept 33
replicas of one of them (band 18..23), and a broker full of excluded topics' replicas kept 4 of
one (band 16..21) beside 15 of another."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafka_balancer.goals.spec import GoalType, default_goal_set
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate


def _every_seventh_topic_excluded(seed: int) -> Cluster:
    spec = SyntheticSpec.filled(
        30, 2000, fill=0.4, racks=3, replication_factor=3, hot_brokers=1, empty_brokers=1, seed=seed
    )
    cluster = generate(spec)
    parts = tuple(replace(p, movable=False) if int(p.topic[-5:]) % 7 == 0 else p for p in cluster.partitions)
    return replace(cluster, partitions=parts)


@pytest.mark.parametrize(
    ("seed", "worst_before", "worst_now"),
    # The worst cell's |count − expected| ÷ expected, in %, at be34cc9 and now.
    [(11, 63.5, 35.8), (12, 53.9, 26.3), (13, 59.4, 27.5), (14, 78.1, 39.1)],
)
def test_a_topic_band_no_plan_can_meet_is_missed_by_as_little_as_the_exchanges_allow(
    seed: int, worst_before: float, worst_now: float
) -> None:
    result = plan(_every_seventh_topic_excluded(seed), default_goal_set())
    missed = {g.type: g.after for g in result.goals if not g.after.satisfied}
    # Immovable replicas crowd some brokers: the band is missed, but by less than before.
    assert set(missed) == {GoalType.TOPIC_REPLICA_DISTRIBUTION.value}
    topics = missed[GoalType.TOPIC_REPLICA_DISTRIBUTION.value]
    assert topics.worst_deviation <= worst_now + 1.0 < worst_before
    # The report says why: the worst cell is on a broker crowded by the excluded topics.
    assert "replicas of excluded topics" in topics.detail
    assert result.figures.bytes_moved <= 1.08 * result.figures.bytes_moved_lower_bound
