"""Seeded clusters of the shape production clusters have (issue 62), for benchmarks and tests.

``synthetic.py`` draws one topic per 200 partitions over equal racks at random; a real cluster
has thousands of small topics beside a few large ones, racks of unequal size, two generations of
machines, and a placement left by its history: a topic's replicas sit on the brokers that existed
when it was created. Here:

- topics have 1 to 200 partitions, most few (heavy-tailed), and Zipf-distributed throughput,
  larger topics tending to be the busier ones;
- each topic has its own retention (log-uniform, 6 h to 7 days), so its disk is its bytes-in rate
  times its retention and disk and network no longer go together;
- topics are at replication factor 3 or 2;
- brokers (and whole racks) join over eras; a topic created in an era is placed rack-aware over
  the brokers of that era only, skewed towards a few hot brokers; brokers that join from a given
  era on are of a second generation, with other capacities;
- two variants: a scale-out (new empty brokers of the newest generation) and a decommission (the
  oldest brokers draining).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer_dev.synthetic import RACK_LETTERS

MAX_PARTITIONS = 200
HOUR = 3600.0
VARIANTS = ("none", "scale-out", "decommission")


@dataclass(frozen=True, slots=True)
class RealShapeSpec:
    # Brokers per rack, and the era each rack's first broker joined in (0: from the start).
    rack_sizes: tuple[int, ...]
    rack_eras: tuple[int, ...]
    topics: int
    # The mean number of partitions of a topic (1..200, heavy-tailed).
    mean_partitions: float
    eras: int = 4
    # The share of a rack's brokers that join in its first era; the rest join evenly later.
    initial_share: float = 0.5
    rf2_share: float = 1 / 3  # topics at replication factor 2, the others at 3
    zipf_exponent: float = 1.0
    # How strongly a topic's throughput follows its partition count (0: not at all).
    size_correlation: float = 1.0
    min_retention_hours: float = 6.0
    max_retention_hours: float = 168.0
    # The first era whose brokers are of the second generation (``eras``: a single generation).
    second_generation_era: int = 4
    # disk, network in, network out, cpu of a first-generation broker, and the second's factors.
    capacity: tuple[float, float, float, float] = (4.0e12, 1.25e9, 1.25e9, 16.0)
    second_generation_factors: tuple[float, float, float, float] = (2.0, 2.0, 2.0, 1.5)
    # Replicas' bytes in over all brokers' network-in capacity, and the most disk they may fill:
    # retentions are shortened in proportion where the disk would not fit.
    network_fill: float = 0.15
    disk_fill: float = 0.45
    max_disk_fill: float = 0.85
    # No partition carries more than this share of the smallest broker's disk or network.
    partition_cap: float = 0.2
    hot_brokers: int = 0
    hot_weight: float = 2.0
    # Variants: new empty brokers (spread over the racks), the oldest brokers draining.
    empty_brokers: int = 0
    draining: int = 0
    seed: int = 1

    @property
    def brokers(self) -> int:
        return sum(self.rack_sizes) + self.empty_brokers


# 240 brokers in racks of 70, 70, 50, 50; ~480,000 partitions, ~1.28 M replicas.
_BASE = RealShapeSpec(
    rack_sizes=(70, 70, 50, 50),
    rack_eras=(0, 0, 0, 1),
    topics=11_000,
    mean_partitions=44.0,
    hot_brokers=12,
    seed=62,
)

# The clusters, and two of the same family to iterate on: small (about 1/20 of base's
# replicas, on 48 brokers) and mid.
SIZES: dict[str, RealShapeSpec] = {
    "small": RealShapeSpec(
        rack_sizes=(14, 14, 10, 10),
        rack_eras=(0, 0, 0, 1),
        topics=550,
        mean_partitions=44.0,
        hot_brokers=2,
        seed=62,
    ),
    # base with a fifth of its topics (~260,000 replicas): each topic's band per broker is as
    # narrow as at base, so the planner's work per replica is base's, in a fifth of the time.
    "mid": replace(_BASE, topics=2_200),
    "base": _BASE,
    # 360 brokers in 3 zones, two generations; ~1.05 M partitions, ~2.8 M replicas.
    "xlarge": RealShapeSpec(
        rack_sizes=(130, 120, 110),
        rack_eras=(0, 0, 0),
        topics=24_000,
        mean_partitions=44.0,
        second_generation_era=2,
        hot_brokers=18,
        seed=62,
    ),
}

# Per size: the empty brokers of its scale-out and the brokers its decommission drains.
VARIANT_COUNTS: dict[str, tuple[int, int]] = {
    "small": (4, 2),
    "mid": (12, 8),
    "base": (12, 8),
    "xlarge": (18, 12),
}


def sized(name: str, variant: str = "none") -> RealShapeSpec:
    """The spec of a named size in one of ``VARIANTS``."""
    spec = SIZES[name]
    empty, draining = VARIANT_COUNTS[name]
    if variant == "scale-out":
        return replace(spec, empty_brokers=empty)
    if variant == "decommission":
        return replace(spec, draining=draining)
    if variant != "none":
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    return spec


def generate(spec: RealShapeSpec) -> Cluster:
    rng = np.random.default_rng(spec.seed)
    racks = [RACK_LETTERS[i % 26] + ("" if i < 26 else str(i // 26)) for i in range(len(spec.rack_sizes))]
    rack_of, era_of = _brokers(spec)
    n_brokers = len(rack_of)
    # A scale-out's new brokers change nothing of the cluster it starts from but add themselves.
    placed = n_brokers - spec.empty_brokers
    generation2 = era_of >= spec.second_generation_era
    factors = np.where(generation2[:, None], np.array(spec.second_generation_factors), 1.0)
    capacity = np.array(spec.capacity) * factors

    counts = _partition_counts(rng, spec)
    n_topics = len(counts)
    topic_era = _topic_eras(rng, spec)  # drawn right after the counts: ``history`` relies on it
    rf = np.where(rng.random(n_topics) < spec.rf2_share, 2, 3)
    topic_in = _topic_throughput(rng, spec, counts)
    retention = (
        np.exp(rng.uniform(np.log(spec.min_retention_hours), np.log(spec.max_retention_hours), size=n_topics))
        * HOUR
    )
    fanout = rng.uniform(0.5, 4.0, size=n_topics)

    topic_of = np.repeat(np.arange(n_topics), counts)
    number = np.arange(len(topic_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    # Keys are not spread evenly over a topic's partitions.
    skew = rng.lognormal(-0.125, 0.5, size=len(topic_of))
    # Bytes in of one replica; scaled so that all replicas fill ``network_fill`` of the brokers'
    # network in, then capped so that no partition outgrows a broker.
    rate = topic_in[topic_of] / counts[topic_of] * skew
    replicas_in = float((rate * rf[topic_of]).sum())
    held = capacity[:placed]
    rate *= spec.network_fill * held[:, 1].sum() / replicas_in
    rate = np.minimum(rate, spec.partition_cap * held[:, 1].min())
    disk = np.minimum(rate * retention[topic_of], spec.partition_cap * held[:, 0].min())
    cpu = rate / 2.0e7

    weights = np.ones(placed)
    weights[rng.choice(placed, size=min(spec.hot_brokers, placed), replace=False)] = spec.hot_weight
    replicas = _place(
        rng, spec, rack_of[:placed], era_of[:placed], weights, topic_era[topic_of], rf[topic_of]
    )
    # Retentions shortened in proportion where the disks would not hold them: the brokers fill
    # ``disk_fill`` on average and the fullest no more than ``max_disk_fill``.
    on = replicas >= 0
    per_broker = np.bincount(
        replicas[on], weights=np.broadcast_to(disk[:, None], on.shape)[on], minlength=placed
    )
    disk *= min(
        1.0,
        spec.disk_fill * held[:, 0].sum() / per_broker.sum(),
        spec.max_disk_fill / float((per_broker / held[:, 0]).max()),
    )

    draining = set(range(spec.draining))  # the oldest brokers, the first to be retired
    brokers = tuple(
        Broker(
            id=i,
            rack=racks[rack_of[i]],
            state=BrokerState.DRAINING if i in draining else BrokerState.ACTIVE,
            capacity=(
                float(capacity[i, 0]),
                float(capacity[i, 1]),
                float(capacity[i, 2]),
                float(capacity[i, 3]),
            ),
        )
        for i in range(n_brokers)
    )
    partitions = tuple(
        Partition(
            topic=f"topic-{int(topic_of[i]):05d}",
            partition=int(number[i]),
            replicas=tuple(int(b) for b in replicas[i, : rf[topic_of[i]]]),
            leader=int(replicas[i, 0]),
            load=PartitionLoad(
                disk=float(disk[i]),
                network_in=float(rate[i]),
                network_out=float(rate[i] * fanout[topic_of[i]]),
                cpu=float(cpu[i]),
                follower_cpu=float(cpu[i] * 0.3),
            ),
        )
        for i in range(len(topic_of))
    )
    return Cluster(brokers, partitions)


def history(spec: RealShapeSpec) -> tuple[np.ndarray, np.ndarray]:
    """The era each broker (by id) joined in and each topic (by number) was created in."""
    rng = np.random.default_rng(spec.seed)
    _partition_counts(rng, spec)
    return _brokers(spec)[1], _topic_eras(rng, spec)


def _brokers(spec: RealShapeSpec) -> tuple[np.ndarray, np.ndarray]:
    """Each broker's rack and join era, broker ids in join order (as an operator adds them): a
    rack's brokers join, ``initial_share`` of them in its first era and the rest evenly over the
    eras after it, and within an era the racks take turns. The empty brokers of a scale-out come
    last, of the last era, spread over the racks."""
    joined = []  # (era, turn within its rack and era, rack)
    for r, (size, first) in enumerate(zip(spec.rack_sizes, spec.rack_eras, strict=True)):
        initial = max(1, round(size * spec.initial_share)) if first < spec.eras - 1 else size
        later = size - initial
        eras = [first] * initial + [first + 1 + k * (spec.eras - first - 1) // later for k in range(later)]
        joined += [(e, eras[:k].count(e), r) for k, e in enumerate(eras)]
    joined.sort()
    rack_of = [r for _, _, r in joined] + [i % len(spec.rack_sizes) for i in range(spec.empty_brokers)]
    era_of = [e for e, _, _ in joined] + [spec.eras - 1] * spec.empty_brokers
    return np.array(rack_of, dtype=np.int64), np.array(era_of, dtype=np.int64)


def _partition_counts(rng: np.random.Generator, spec: RealShapeSpec) -> np.ndarray:
    """1..200 partitions per topic: 1 + 199 u^k, whose mean is 1 + 199 / (k + 1), so most topics
    are small and a long tail reaches 200."""
    k = max(0.0, (MAX_PARTITIONS - 1) / (spec.mean_partitions - 1) - 1)
    u = rng.random(spec.topics)
    return 1 + np.floor(MAX_PARTITIONS * u**k).clip(0, MAX_PARTITIONS - 1).astype(np.int64)


def _topic_eras(rng: np.random.Generator, spec: RealShapeSpec) -> np.ndarray:
    """The era each topic was created in, from the first era with 3 racks (so that every topic
    could be placed rack-aware on the brokers of its time), more in later eras as the cluster
    grows: era e's weight is e + 1."""
    first = next((e for e in range(spec.eras) if _racks_at(spec, e) >= 3), None)
    if first is None:
        raise ValueError("fewer than 3 racks in every era: no topic at replication factor 3 fits")
    eras = np.arange(first, spec.eras)
    return rng.choice(eras, size=spec.topics, p=(eras + 1) / (eras + 1).sum())


def _racks_at(spec: RealShapeSpec, era: int) -> int:
    return sum(1 for e in spec.rack_eras if e <= era)


def _topic_throughput(rng: np.random.Generator, spec: RealShapeSpec, counts: np.ndarray) -> np.ndarray:
    """Zipf weights (rank^-s), ranked by partition count times log-normal noise: larger topics
    tend to be busier, but a hot topic with one partition happens."""
    noise = rng.lognormal(0.0, 1.0, size=len(counts))
    order = np.argsort(-(counts.astype(float) ** spec.size_correlation) * noise, kind="stable")
    weights = np.empty(len(counts))
    weights[order] = np.arange(1, len(counts) + 1, dtype=float) ** -spec.zipf_exponent
    return weights


def _place(
    rng: np.random.Generator,
    spec: RealShapeSpec,
    rack_of: np.ndarray,
    era_of: np.ndarray,
    weights: np.ndarray,
    era: np.ndarray,
    rf: np.ndarray,
) -> np.ndarray:
    """``[partitions, 3]`` broker ids (the third -1 at RF 2): each replica in a different rack
    of those its era had, brokers within a rack drawn by weight among those of the era."""
    out = np.full((len(era), 3), -1, dtype=np.int64)
    n_racks = len(spec.rack_sizes)
    for e in range(spec.eras):
        rows = np.nonzero(era == e)[0]
        if len(rows) == 0:
            continue
        present = era_of <= e
        live = np.array([r for r in range(n_racks) if (present & (rack_of == r)).any()])
        order = live[np.argsort(rng.random((len(rows), len(live))), axis=1)]
        for slot in range(3):
            racks = order[:, slot]
            for r in live:
                pool = np.nonzero(present & (rack_of == r))[0]
                hit = rows[(racks == r) & (rf[rows] > slot)]
                cdf = np.cumsum(weights[pool]) / weights[pool].sum()
                out[hit, slot] = pool[np.minimum(np.searchsorted(cdf, rng.random(len(hit))), len(pool) - 1)]
    return out
