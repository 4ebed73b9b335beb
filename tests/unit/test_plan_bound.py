"""The bytes-moved lower bound: figured by hand on a tiny cluster, and never above the least bytes
of any assignment meeting the same bands (every assignment enumerated)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.working import WorkingModel
from kafka_balancer.planner.bound import Band, BoundBands, bytes_moved_lower_bound

N = 4
# Topic t crowds broker 0 (4 of its 8 replicas); broker 2 holds the most disk (50 of 126).
LAYOUT = (
    ("t", 1.0, (0, 1)),
    ("t", 2.0, (0, 2)),
    ("t", 4.0, (0, 3)),
    ("t", 8.0, (0, 1)),
    ("u", 16.0, (1, 2)),
    ("u", 32.0, (2, 3)),
)
INF = np.inf


def cluster() -> Cluster:
    brokers = tuple(Broker(b, "r", BrokerState.ACTIVE, (1e3, 1e3, 1e3, 1.0)) for b in range(N))
    parts = tuple(
        Partition(topic, i, replicas, replicas[0], PartitionLoad(disk, 0.0, 0.0, 0.0))
        for i, (topic, disk, replicas) in enumerate(LAYOUT)
    )
    return Cluster(brokers, parts)


def per_broker(lo: list[float], hi: list[float]) -> Band:
    return np.array(lo, dtype=np.float64), np.array(hi, dtype=np.float64)


def topic_band(t: Band, u: Band) -> Band:
    """Rows in the working model's topic order (t, u)."""
    return np.vstack([t[0], u[0]]), np.vstack([t[1], u[1]])


OPEN = per_broker([0.0] * N, [INF] * N)
DISK = per_broker([20.0] * N, [40.0] * N)
T_AT_MOST_2 = topic_band(per_broker([0.0] * N, [2.0] * N), OPEN)

CASES = {
    # Broker 2 sheds ≥ 10 (50 − 40); broker 0 gains ≥ 5 (20 − 15): max(10, 5), the old bound.
    "disk only": (BoundBands(disk=DISK), 10.0),
    # Broker 0 sheds 2 of its 4 replicas of t: the smallest, t-0 and t-1.
    "topic cell ceiling": (BoundBands(topic=T_AT_MOST_2), 3.0),
    # The two sets are at different brokers, so they add up: 3 at broker 0 + 10 at broker 2.
    "topic cell and disk": (BoundBands(disk=DISK, topic=T_AT_MOST_2), 13.0),
    # At one broker the larger of the two counts, not their sum: shedding t-0 and t-1 (3) also
    # brings broker 0's disk from 15 to 12.
    "topic cell and disk at one broker": (
        BoundBands(disk=per_broker([0.0] * N, [12.0, INF, INF, INF]), topic=T_AT_MOST_2),
        3.0,
    ),
    # Broker 0 must gain a replica of u, of which the smallest is u-0 (16); 16 > its disk gap 5.
    "topic cell floor": (
        BoundBands(disk=DISK, topic=topic_band(OPEN, per_broker([1.0] * N, [INF] * N))),
        16.0,
    ),
    # Broker 2 keeps 1 replica and at most 1 of u: u-0 (16) must go, then the smallest other,
    # t-1 (2); broker 0 keeps 3: t-0 (1).
    "replica count with a topic cell": (
        BoundBands(
            replicas=per_broker([0.0] * N, [3.0, 4.0, 1.0, 4.0]),
            topic=topic_band(OPEN, per_broker([0.0] * N, [INF, INF, 1.0, INF])),
        ),
        19.0,
    ),
    # Broker 3 (2 replicas) needs 3: the smallest partition it lacks, t-0.
    "replica count floor": (BoundBands(replicas=per_broker([0.0, 0.0, 0.0, 3.0], [INF] * N)), 1.0),
}


def meets(assignment: tuple[tuple[int, ...], ...], bands: BoundBands) -> bool:
    disk, count, cells = np.zeros(N), np.zeros(N), np.zeros((2, N))
    for (topic, size, _), replicas in zip(LAYOUT, assignment, strict=True):
        for b in replicas:
            disk[b] += size
            count[b] += 1
            cells[0 if topic == "t" else 1, b] += 1
    return all(
        band is None or bool(((q >= band[0]) & (q <= band[1])).all())
        for q, band in ((disk, bands.disk), (count, bands.replicas), (cells, bands.topic))
    )


def least_bytes(bands: BoundBands) -> float:
    """The least bytes of every assignment (replication factor 2 kept) that meets ``bands``."""
    pairs = list(itertools.combinations(range(N), 2))
    best = INF
    for assignment in itertools.product(pairs, repeat=len(LAYOUT)):
        if meets(assignment, bands):
            moved = sum(
                size * len(set(new) - set(old))
                for (_, size, old), new in zip(LAYOUT, assignment, strict=True)
            )
            best = min(best, moved)
    return best


@pytest.mark.parametrize("case", list(CASES))
def test_bound_is_the_hand_figure_and_no_assignment_moves_less(case: str) -> None:
    bands, by_hand = CASES[case]
    bound = bytes_moved_lower_bound(WorkingModel(cluster()), bands)
    assert bound == pytest.approx(by_hand)
    assert bound <= least_bytes(bands)


def test_bound_is_tighter_than_the_disk_bands_alone() -> None:
    bands, _ = CASES["topic cell and disk"]
    least = least_bytes(bands)
    assert bytes_moved_lower_bound(WorkingModel(cluster()), BoundBands(disk=DISK)) < 13.0 <= least
