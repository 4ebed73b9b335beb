"""A leadership relay: a broker short of cpu at the top of its network-out band takes a cpu-heavy
leadership from one broker and hands a network-out-heavy one to another at once.

No single leader change fits (taking any leadership lifts its network out over the band) and no
exchange with one partner exists (no broker both leads a partition it follows and follows one it
leads), as in a rack with more brokers than its share of replicas fills, where every broker holds
few followers and its cpu must come from leaderships."""

from __future__ import annotations

from typing import Any

import numpy as np

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.goals.bands import BandGoal
from kafka_balancer.goals.registry import build_goal
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model.resources import Resource
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner import trades
from kafka_balancer.planner.search import Search
from tests.unit.clusters import broker, snapshot


def _led(topic: str, count: int, replicas: list[int], network_out: float, cpu: float) -> list[dict[str, Any]]:
    load = {"disk": 1.0e9, "networkIn": 0.0, "networkOut": network_out, "cpu": cpu, "followerCpu": 0.0}
    return [
        {"topic": topic, "partition": i, "replicas": replicas, "leader": replicas[0], "load": load}
        for i in range(count)
    ]


def cluster() -> dict[str, Any]:
    """Network-out band 18.9..23.1, cpu band 15.3..18.7. Broker 0 leads 20 light-cpu
    leaderships (network out 22, 1.1 from its top; cpu 4) followed by brokers 2 and 3; broker 1
    leads 20 cpu-heavy ones (network out 30, over its band; cpu 32) that broker 0 follows;
    brokers 2 and 3 lead two partitions each that broker 0 does not hold (network out 16, under
    the band; cpu 16)."""
    parts = (
        _led("light", 20, [0, 2, 3], 1.1e6, 0.2)
        + _led("heavy", 20, [1, 0, 3], 1.5e6, 1.6)
        + _led("even-2", 2, [2, 1, 3], 8.0e6, 8.0)
        + _led("even-3", 2, [3, 1, 2], 8.0e6, 8.0)
    )
    return snapshot([broker(b, "r") for b in range(4)], parts)


def test_a_broker_short_of_cpu_at_its_network_out_top_gains_cpu_by_relays() -> None:
    state = WorkingModel(parse_snapshot(cluster()))
    network_out = build_goal(GoalSpec.default(GoalType.NETWORK_OUT_DISTRIBUTION), state)
    cpu = build_goal(GoalSpec.default(GoalType.CPU_DISTRIBUTION), state)
    assert isinstance(network_out, BandGoal) and isinstance(cpu, BandGoal)
    outside_before = network_out.needs_fix(state).copy()
    cpu_before = state.quantity(int(Resource.CPU)).copy()
    assert cpu.needs_fix_at(state, 0) > 0 and network_out.needs_fix_at(state, 0) == 0

    assert Search(state, [network_out], []).fill(cpu, 0)

    cpu_after = state.quantity(int(Resource.CPU))
    assert cpu_after[0] > cpu_before[0] + 1.0
    # The network-out band (the veto) is no further away at any broker, and broker 1 nearer.
    assert (network_out.needs_fix(state) <= outside_before + 1e-12).all()
    assert network_out.needs_fix_at(state, 1) < outside_before[1]
    # Leaderships moved, no replica did: broker 0 now leads heavy partitions and no longer
    # leads some light ones.
    assert (state.replicas == state.original_replicas).all()
    leader = state.replicas[np.arange(len(state.rf)), state.leader_slot]
    topic = np.array([name for name, _ in state.names])
    assert (leader[topic == "heavy"] == 0).sum() >= 2
    assert (leader[topic == "light"] != 0).sum() >= 2


def test_a_relay_among_more_leader_changes_than_it_pairs_takes_the_heaviest() -> None:
    """With the cluster above at 15 × the partitions (each 1/15 of the load, so the same bands),
    broker 0 has more leader changes on each side than a relay pairs (``trades.RELAY_SIDE``):
    the ones it pairs must be the most promising, so its first relay takes the heaviest cpu and
    hands over the lightest."""
    k = 15
    assert 20 * k > trades.RELAY_SIDE
    light = _led("light", 20 * k, [0, 2, 3], 1.1e6 / k, 0.2 / k)
    heavy = _led("heavy", 20 * k, [1, 0, 3], 1.5e6 / k, 1.6 / k)
    for p in light + heavy:  # cpu 0.5 × .. 1.5 × the mean, rising with the partition number
        p["load"] = p["load"] | {"cpu": p["load"]["cpu"] * (0.5 + p["partition"] / (20 * k))}
    parts = (
        light + heavy + _led("even-2", 2, [2, 1, 3], 8.0e6, 8.0) + _led("even-3", 2, [3, 1, 2], 8.0e6, 8.0)
    )
    state = WorkingModel(parse_snapshot(snapshot([broker(b, "r") for b in range(4)], parts)))
    network_out = build_goal(GoalSpec.default(GoalType.NETWORK_OUT_DISTRIBUTION), state)
    cpu = build_goal(GoalSpec.default(GoalType.CPU_DISTRIBUTION), state)
    assert isinstance(network_out, BandGoal) and isinstance(cpu, BandGoal)
    assert cpu.needs_fix_at(state, 0) > 0

    assert trades.relay_leaderships(Search(state, [network_out], []), cpu, 0)

    leader = state.replicas[np.arange(len(state.rf)), state.leader_slot]
    led = [(topic, p) for (topic, p), b in zip(state.names, leader, strict=True) if b == 0]
    assert [p for topic, p in led if topic == "heavy"] == [20 * k - 1]
    assert [p for topic, p in led if topic == "light"] == list(range(1, 20 * k))
