"""Samples + cluster metadata + broker capacities → the snapshot of docs/design.md (version 1). Pure, no I/O.

The rules are the scoring job's (:mod:`kafka_balancer.scoring.transforms`), applied to one window
of ``window_ms`` ending at the newest partition sample, ``(newest − window, newest]``:

- disk: the newest ``size_bytes``; networkIn/Out: Σ bytes ÷ Σ interval seconds over the window
  (time-weighted); replicas and leader: the newest sample's (a leader outside the replicas, e.g.
  -1 while offline, is taken to be the preferred leader ``replicas[0]``);
- cpu: a broker's time-weighted average cpu over the window (null samples ignored) is shared
  among the partitions it leads in proportion to their bytes in (evenly when none has any);
  0 when the broker has no cpu samples — the Admin API gives none, so without a cpu source every
  partition's cpu is 0 and cpu goals hold trivially;
- followerCpu: ``FOLLOWER_CPU_FRACTION`` × cpu.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_balancer.errors import InputError, KafkaOperationError

# The scoring job's DEFAULT_FOLLOWER_CPU_FRACTION (a unit test keeps the two equal).
FOLLOWER_CPU_FRACTION = 0.2

# disk bytes, networkIn bytes/s, networkOut bytes/s, cpu cores
Capacity = tuple[float, float, float, float]
CAPACITY_KEYS = ("disk", "networkIn", "networkOut", "cpu")


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker as cluster metadata describes it."""

    id: int
    rack: str | None


@dataclass(frozen=True)
class Capacities:
    """Per-broker capacities, with a default for brokers not listed."""

    per_broker: Mapping[int, Capacity]
    default: Capacity | None = None

    def of(self, broker: int) -> Capacity:
        found = self.per_broker.get(broker, self.default)
        if found is None:
            raise InputError(f"capacity: broker {broker} is not listed and no default capacity is given")
        return found


@dataclass
class _Partition:
    newest_ts: int = -1
    replicas: tuple[int, ...] = ()
    leader: int = -1
    disk: float = 0.0
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    seconds: float = 0.0


def build_snapshot(
    brokers: Sequence[BrokerInfo],
    capacities: Capacities,
    partition_samples: pa.Table,
    broker_samples: pa.Table,
    window_ms: int,
) -> dict[str, Any]:
    """The snapshot document of the newest window of samples (see the module docstring)."""
    if window_ms <= 0:
        raise InputError(f"window: must be positive, got {window_ms} ms")
    rows = partition_samples.to_pylist()
    newest = max((r["ts_ms"] for r in rows), default=0)
    oldest = newest - window_ms
    partitions = _partitions([r for r in rows if oldest < r["ts_ms"] <= newest])
    cpu = _broker_cpu([r for r in broker_samples.to_pylist() if oldest < r["ts_ms"] <= newest])
    known = {b.id for b in brokers}
    for (topic, pid), part in partitions.items():
        for replica in part.replicas:
            if replica not in known:
                raise KafkaOperationError(
                    f"partition {topic}-{pid} has a replica on broker {replica}, "
                    "which is not in the cluster metadata (offline?)"
                )
    shares = _cpu_shares(partitions, cpu)
    return {
        "version": 1,
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "state": "active",
                "capacity": dict(zip(CAPACITY_KEYS, capacities.of(b.id), strict=True)),
            }
            for b in sorted(brokers, key=lambda b: b.id)
        ],
        "partitions": [
            {
                "topic": topic,
                "partition": pid,
                "replicas": list(part.replicas),
                "leader": part.leader,
                "load": {
                    "disk": part.disk,
                    "networkIn": part.bytes_in / part.seconds if part.seconds > 0 else 0.0,
                    "networkOut": part.bytes_out / part.seconds if part.seconds > 0 else 0.0,
                    "cpu": shares[(topic, pid)],
                    "followerCpu": shares[(topic, pid)] * FOLLOWER_CPU_FRACTION,
                },
            }
            for (topic, pid), part in sorted(partitions.items())
        ],
    }


def _partitions(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], _Partition]:
    found: dict[tuple[str, int], _Partition] = defaultdict(_Partition)
    for r in rows:
        part = found[(r["topic"], r["partition"])]
        part.bytes_in += r["bytes_in"]
        part.bytes_out += r["bytes_out"]
        part.seconds += r["interval_ms"] / 1000.0
        if r["ts_ms"] > part.newest_ts:
            part.newest_ts = r["ts_ms"]
            part.replicas = tuple(r["replicas"])
            part.leader = r["leader"] if r["leader"] in part.replicas else part.replicas[0]
            part.disk = r["size_bytes"]
    return dict(found)


def _broker_cpu(rows: Sequence[Mapping[str, Any]]) -> dict[int, float]:
    weighted: dict[int, float] = defaultdict(float)
    millis: dict[int, int] = defaultdict(int)
    for r in rows:
        if r["cpu"] is not None:
            weighted[r["broker"]] += r["cpu"] * r["interval_ms"]
            millis[r["broker"]] += r["interval_ms"]
    return {b: weighted[b] / ms for b, ms in millis.items() if ms > 0}


def _cpu_shares(
    partitions: Mapping[tuple[str, int], _Partition], cpu: Mapping[int, float]
) -> dict[tuple[str, int], float]:
    led: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for key, part in partitions.items():
        led[part.leader].append(key)
    shares: dict[tuple[str, int], float] = {}
    for leader, keys in led.items():
        total_in = sum(partitions[k].bytes_in for k in keys)
        for k in keys:
            share = partitions[k].bytes_in / total_in if total_in > 0 else 1.0 / len(keys)
            shares[k] = cpu.get(leader, 0.0) * share
    return shares
