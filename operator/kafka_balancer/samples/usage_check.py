"""Measured broker usage against the load model: does the Admin API's model account for the traffic?

The model's broker network comes from per-partition rates the Admin API gives (produce from end
offsets, consumption from committed offsets); a source like Prometheus measures the broker itself.
Consumers that never commit offsets are invisible to the first and show in the second, so a broker
whose measured network out is well above its modelled one is named.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import pyarrow as pa

from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.samples.broker_usage import BrokerUsage

# Measured above the model by this factor, and by at least this many bytes/s, is worth a line.
UNSEEN_FACTOR = 1.25
UNSEEN_FLOOR = 100_000.0
_MB = 1_000_000.0


def measured_usage(broker_samples: pa.Table) -> dict[int, BrokerUsage]:
    """Per broker, each resource's time-weighted average over the samples that have it."""
    sums: dict[tuple[int, str], float] = defaultdict(float)
    millis: dict[tuple[int, str], int] = defaultdict(int)
    for row in broker_samples.to_pylist():
        for column in ("cpu", "network_in", "network_out"):
            if row[column] is not None:
                sums[(row["broker"], column)] += row[column] * row["interval_ms"]
                millis[(row["broker"], column)] += row["interval_ms"]

    def average(broker: int, column: str) -> float | None:
        ms = millis.get((broker, column), 0)
        return sums[(broker, column)] / ms if ms > 0 else None

    brokers = sorted({broker for broker, _ in millis})
    return {
        b: BrokerUsage(average(b, "cpu"), average(b, "network_in"), average(b, "network_out"))
        for b in brokers
    }


def modelled_network(cluster: Cluster) -> dict[int, tuple[float, float]]:
    """Broker id → (network in, network out) bytes/s under the load model of docs/design.md."""
    loads = WorkingModel(cluster).broker_loads()
    return {b.id: (load.loads[1], load.loads[2]) for b, load in zip(cluster.brokers, loads, strict=True)}


def comparison_lines(
    measured: Mapping[int, BrokerUsage], modelled: Mapping[int, tuple[float, float]]
) -> list[str]:
    """A small table, then one line per broker whose measured network out the model misses."""
    lines = ["broker  cpu cores  network in MB/s measured/model  network out MB/s measured/model"]
    unseen = []
    for broker in sorted(modelled):
        used = measured.get(broker, BrokerUsage(None, None, None))
        model_in, model_out = modelled[broker]
        cpu = _number(used.cpu, 1.0)
        net_in, net_out = _number(used.network_in, _MB), _number(used.network_out, _MB)
        model = f"{model_in / _MB:<8.3f}", f"{model_out / _MB:.3f}"
        lines.append(f"{broker:>6}  {cpu:>9}  {net_in:>15} / {model[0]}  {net_out:>16} / {model[1]}")
        if used.network_out is not None and used.network_out > max(
            model_out * UNSEEN_FACTOR, model_out + UNSEEN_FLOOR
        ):
            unseen.append(broker)
    if unseen:
        lines.append(
            f"broker(s) {', '.join(map(str, unseen))}: measured network out is well above the model; "
            "consumers that do not commit offsets are invisible to the Admin API"
        )
    return lines


def _number(value: float | None, unit: float) -> str:
    return "-" if value is None else f"{value / unit:.3f}"
