"""Seeded synthetic clusters for benchmarks, property tests and the demo.

Partition sizes and rates are log-normal (a few big topics, many small ones), replicas are
placed rack-aware but skewed towards a few hot brokers, and new (empty) brokers can be added,
so that a generated cluster needs real work to balance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad

RACK_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    brokers: int
    partitions: int
    racks: int = 3
    replication_factor: int = 3
    topics: int = 0  # 0: about one topic per 200 partitions
    hot_brokers: int = 0  # brokers that get extra replicas
    hot_weight: float = 3.0
    empty_brokers: int = 0  # the last brokers start empty (a scale-up)
    disk_capacity: float = 4.0e12
    network_capacity: float = 1.25e9
    cpu_capacity: float = 16.0
    mean_partition_bytes: float = 2.0e9
    seed: int = 1

    @classmethod
    def filled(cls, brokers: int, partitions: int, fill: float = 0.4, **fields: Any) -> SyntheticSpec:
        """A spec whose brokers' disks are ``fill`` full on average, whatever the number of
        partitions: the benchmarks' and the planner tests' clusters, with ``fields`` as given."""
        rf = fields.get("replication_factor", 3)
        disk = fields.get("disk_capacity", 4.0e12)
        mean = fill * disk * brokers / (partitions * rf)
        return cls(brokers=brokers, partitions=partitions, mean_partition_bytes=mean, **fields)


def scaled(cluster: Cluster, factor: float, picked: Callable[[Broker], bool]) -> Cluster:
    """``cluster`` with the brokers ``picked`` chooses at ``factor`` times their capacity of every
    resource: a newer generation of machines beside the old ones."""
    brokers = tuple(
        replace(
            b,
            capacity=(
                b.capacity[0] * factor,
                b.capacity[1] * factor,
                b.capacity[2] * factor,
                b.capacity[3] * factor,
            ),
        )
        if picked(b)
        else b
        for b in cluster.brokers
    )
    return replace(cluster, brokers=brokers)


def generate(spec: SyntheticSpec) -> Cluster:
    rng = np.random.default_rng(spec.seed)
    racks = [RACK_LETTERS[i % 26] + ("" if i < 26 else str(i // 26)) for i in range(spec.racks)]
    brokers = tuple(
        Broker(
            id=i,
            rack=racks[i % spec.racks],
            state=BrokerState.ACTIVE,
            capacity=(spec.disk_capacity, spec.network_capacity, spec.network_capacity, spec.cpu_capacity),
        )
        for i in range(spec.brokers)
    )
    placeable = spec.brokers - spec.empty_brokers
    weights = np.ones(placeable)
    hot = rng.choice(placeable, size=min(spec.hot_brokers, placeable), replace=False)
    weights[hot] = spec.hot_weight
    # A rack whose every broker is empty holds no replica: it is left out of the draw.
    by_rack: dict[int, np.ndarray] = {
        r: np.array([b for b in range(placeable) if b % spec.racks == r])
        for r in range(spec.racks)
        if r < placeable
    }
    n_topics = spec.topics or max(1, spec.partitions // 200)
    topic_of = np.sort(rng.integers(0, n_topics, size=spec.partitions))
    sigma = 1.0
    sizes = rng.lognormal(np.log(spec.mean_partition_bytes) - sigma**2 / 2, sigma, size=spec.partitions)
    rate_in = sizes / 86_400.0 * rng.uniform(0.5, 1.5, size=spec.partitions)
    fanout = rng.uniform(0.5, 3.0, size=spec.partitions)
    cpu = rate_in / 2.0e7
    replicas = _place(rng, spec, by_rack, weights)
    starts = np.searchsorted(topic_of, np.arange(n_topics))
    numbers = np.arange(spec.partitions) - starts[topic_of]
    partitions = tuple(
        Partition(
            topic=f"topic-{int(topic_of[i]):05d}",
            partition=int(numbers[i]),
            replicas=tuple(int(b) for b in replicas[i]),
            leader=int(replicas[i][0]),
            load=PartitionLoad(
                disk=float(sizes[i]),
                network_in=float(rate_in[i]),
                network_out=float(rate_in[i] * fanout[i]),
                cpu=float(cpu[i]),
                follower_cpu=float(cpu[i] * 0.3),
            ),
        )
        for i in range(spec.partitions)
    )
    return Cluster(brokers, partitions)


def _place(
    rng: np.random.Generator, spec: SyntheticSpec, by_rack: dict[int, np.ndarray], weights: np.ndarray
) -> np.ndarray:
    """``[partitions, RF]`` broker ids: each replica in a different rack while racks last,
    brokers within a rack drawn by weight (hot brokers get more)."""
    n, rf = spec.partitions, spec.replication_factor
    live = np.array(list(by_rack))
    rack_order = live[np.argsort(rng.random((n, len(live))), axis=1)]
    out = np.full((n, rf), -1, dtype=np.int64)
    for slot in range(rf):
        racks = rack_order[:, slot % len(live)]
        for r, pool in by_rack.items():
            rows = np.nonzero(racks == r)[0]
            if len(rows) == 0:
                continue
            cdf = np.cumsum(weights[pool]) / weights[pool].sum()
            picks = pool[np.minimum(np.searchsorted(cdf, rng.random(len(rows))), len(pool) - 1)]
            out[rows, slot] = picks
    # Where racks repeat (RF > racks) a draw can hit the same broker twice: redraw those rows.
    for i in np.nonzero([len(set(row)) < rf for row in out])[0] if rf > len(live) else []:
        out[i] = rng.choice(np.concatenate(list(by_rack.values())), size=rf, replace=False)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m kafka_balancer_dev.synthetic --output S``: write a skewed synthetic snapshot."""
    import argparse
    import json
    from pathlib import Path

    from kafka_balancer.formats.snapshot import cluster_to_snapshot

    parser = argparse.ArgumentParser(prog="python -m kafka_balancer_dev.synthetic", description=main.__doc__)
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--partitions", type=int, default=900)
    parser.add_argument("--racks", type=int, default=3)
    parser.add_argument("--hot-brokers", type=int, default=2)
    parser.add_argument("--empty-brokers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    spec = SyntheticSpec.filled(
        args.brokers,
        args.partitions,
        racks=args.racks,
        hot_brokers=args.hot_brokers,
        empty_brokers=args.empty_brokers,
        seed=args.seed,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(cluster_to_snapshot(generate(spec))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
