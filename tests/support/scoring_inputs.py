"""A small sample store with a few minutes of history, and its brokers: inputs of one scoring run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_balancer.kafka.sample_store import SampleStore
from kafka_balancer.samples.schema import BROKER_SAMPLES, PARTITION_SAMPLES
from tests.support.samples import broker_row, partition_row

STEP = 60_000
END = 1_700_000_000_000
RACKS = {0: "a", 1: "a", 2: "b"}
NO_GOALS = {"apiVersion": "v1", "kind": "List", "items": []}  # the job's default goal set


def store_with_history(root: Path, minutes: int = 4) -> SampleStore:
    """One pass a minute, as the collector appends them: 6 partitions (RF 2), orders-0 the busiest."""
    store = SampleStore(root)
    for minute in range(minutes):
        ts = END - (minutes - 1 - minute) * STEP
        rows = [
            partition_row(
                ts,
                "orders",
                p,
                [p % 3, (p + 1) % 3],
                p % 3,
                interval=STEP,
                size=(10.0 if p == 0 else 1.0) * 1e9 + minute * 1e6,
                bytes_in=(10.0 if p == 0 else 1.0) * 6e6,
                bytes_out=1.2e7,
            )
            for p in range(6)
        ]
        brokers = [broker_row(ts, b, 1.0 + b, interval=STEP) for b in RACKS]
        store.append(
            ts, pa.Table.from_pylist(rows, PARTITION_SAMPLES), pa.Table.from_pylist(brokers, BROKER_SAMPLES)
        )
    return store


def topology() -> dict[str, Any]:
    return {
        "brokers": [
            {
                "id": b,
                "rack": rack,
                "state": "active",
                "capacity": {"disk": 1e12, "networkIn": 1e8, "networkOut": 1e8, "cpu": 8},
            }
            for b, rack in RACKS.items()
        ]
    }
