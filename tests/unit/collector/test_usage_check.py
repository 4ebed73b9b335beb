"""Measured broker usage (time-weighted, unknown passes skipped) against the load model."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_balancer.formats.snapshot import parse_snapshot
from kafka_balancer.samples.broker_usage import BrokerUsage
from kafka_balancer.samples.schema import BROKER_SAMPLES
from kafka_balancer.samples.usage_check import comparison_lines, measured_usage, modelled_network
from tests.support.samples import broker_row
from tests.unit.clusters import broker, partition, snapshot


def test_measured_usage_is_time_weighted_and_skips_passes_without_a_value() -> None:
    rows = [
        {**broker_row(10_000, 1, 1.0, interval=10_000), "network_in": 100.0},
        {**broker_row(40_000, 1, 2.0, interval=30_000), "network_in": None},  # Prometheus failed here
        {**broker_row(50_000, 1, None, interval=10_000), "network_in": 300.0},
        broker_row(50_000, 2, None),
    ]
    found = measured_usage(pa.Table.from_pylist(rows, schema=BROKER_SAMPLES))
    assert found[1].cpu == pytest.approx((1.0 * 10 + 2.0 * 30) / 40)
    assert found[1].network_in == pytest.approx(200.0)
    assert found[1].network_out is None
    assert 2 not in found  # no value ever


def test_model_network_follows_the_design_load_model() -> None:
    # RF 2, leader on 1: broker 1 gets in 1e5 and out 2e5 + 1e5 (its follower fetches), broker 2 in 1e5.
    cluster = parse_snapshot(snapshot([broker(1, "a"), broker(2, "b")], [partition("t", 0, [1, 2])]))
    assert modelled_network(cluster) == {1: (1.0e5, 3.0e5), 2: (1.0e5, 0.0)}


def test_a_broker_serving_consumers_the_model_cannot_see_is_named() -> None:
    modelled = {1: (1.0e5, 3.0e5), 2: (1.0e5, 0.0)}
    close = {1: BrokerUsage(0.5, 1.1e5, 3.2e5), 2: BrokerUsage(0.2, 1.0e5, 0.5e5)}
    lines = comparison_lines(close, modelled)
    assert len(lines) == 3 and lines[1].split()[:2] == ["1", "0.500"]
    unseen = {1: BrokerUsage(0.5, 1.1e5, 9.0e5), 2: BrokerUsage(None, None, None)}
    lines = comparison_lines(unseen, modelled)
    assert lines[-1].startswith("broker(s) 1: measured network out is well above the model")
    assert lines[2].split()[1] == "-"
