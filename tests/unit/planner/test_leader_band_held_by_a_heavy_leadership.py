"""A leader band that an earlier band keeps a broker from reaching is reported with that reason."""

from __future__ import annotations

from dataclasses import replace

from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan
from kafka_balancer_dev.synthetic import SyntheticSpec, generate


def _with_one_hot_leadership(cluster: Cluster, share: float) -> Cluster:
    """``cluster`` with partition 0's leadership carrying ``share`` of a mean broker's network out."""
    mean_out = sum(p.load.network_out for p in cluster.partitions) / len(cluster.brokers)
    hot = cluster.partitions[0]
    heavy = replace(hot, load=replace(hot.load, network_out=share * mean_out))
    return replace(cluster, partitions=(heavy, *cluster.partitions[1:]))


def test_a_leadership_heavier_than_the_network_out_band_is_named_as_why_its_leader_lacks_leaders() -> None:
    # Partition 0's leader sends twice what a broker sent on average before (1.7 times the mean
    # once it is counted): more than the network out band is wide at any broker, so neither of
    # its followers can take the leadership within that band, and its leader, at the band's top
    # with it, cannot take the leaderships its band asks. Without the reason the status named
    # only the broker and its leader count.
    cluster = _with_one_hot_leadership(generate(SyntheticSpec.filled(12, 900, racks=3, seed=1)), 2.0)
    result = plan(cluster, default_goal_set())
    leaders = next(g for g in result.goals if g.label == "LeaderDistribution")
    assert not leaders.after.satisfied
    hot = cluster.partitions[0]
    after = apply_reassignments(cluster, result.reassignments)
    leader = next(p.leader for p in after.partitions if (p.topic, p.partition) == (hot.topic, hot.partition))
    assert leaders.after.detail.startswith(f"broker {leader} has ")
    assert f"; it leads {hot.topic}-{hot.partition}, whose leadership alone carries " in leaders.after.detail
    assert "more than NetworkOutDistribution's band is wide at its other replicas" in leaders.after.detail
    network_out = next(g for g in result.goals if g.label == "NetworkOutDistribution")
    assert network_out.after.satisfied


def test_a_leader_band_met_says_nothing_of_heavy_leaderships() -> None:
    # The same partition at a twentieth of a broker's network out: the leader band is met.
    cluster = _with_one_hot_leadership(generate(SyntheticSpec.filled(12, 900, racks=3, seed=1)), 0.05)
    result = plan(cluster, default_goal_set())
    leaders = next(g for g in result.goals if g.label == "LeaderDistribution")
    assert leaders.after.satisfied and leaders.after.detail == ""
