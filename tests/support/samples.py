"""Writing sample rows as the collector does: Parquet with the schemas of ``samples.schema``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_balancer.samples.schema import BROKER_DIR, BROKER_SAMPLES, PARTITION_DIR, PARTITION_SAMPLES


def partition_row(
    ts: int,
    topic: str,
    partition: int,
    replicas: list[int],
    leader: int,
    *,
    interval: int = 60_000,
    size: float = 0.0,
    bytes_in: float = 0.0,
    bytes_out: float = 0.0,
) -> dict[str, Any]:
    return {
        "ts_ms": ts,
        "interval_ms": interval,
        "topic": topic,
        "partition": partition,
        "leader": leader,
        "replicas": replicas,
        "size_bytes": size,
        "bytes_in": bytes_in,
        "bytes_out": bytes_out,
        "messages_in": int(bytes_in // 100),
    }


def broker_row(ts: int, broker: int, cpu: float | None, *, interval: int = 60_000) -> dict[str, Any]:
    return {
        "ts_ms": ts,
        "interval_ms": interval,
        "broker": broker,
        "rack": None,
        "cpu": cpu,
        "network_in": None,
        "network_out": None,
    }


def write_samples(root: Path, partitions: list[dict[str, Any]], brokers: list[dict[str, Any]]) -> None:
    (root / PARTITION_DIR).mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(partitions, PARTITION_SAMPLES), root / PARTITION_DIR / "part-0.parquet"
    )
    if brokers:
        (root / BROKER_DIR).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(brokers, BROKER_SAMPLES), root / BROKER_DIR / "part-0.parquet")
