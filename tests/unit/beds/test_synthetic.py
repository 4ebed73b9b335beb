"""The synthetic clusters the benchmarks and planner tests are built from must be clusters Kafka
could hold: every replica on a known broker, one replica per rack while racks last."""

from __future__ import annotations

import pytest

from kafka_balancer_dev.synthetic import SyntheticSpec, generate


@pytest.mark.parametrize(("brokers", "racks", "empty"), [(7, 7, 1), (6, 3, 3), (12, 3, 1)])
def test_replicas_sit_on_known_brokers_in_distinct_racks(brokers: int, racks: int, empty: int) -> None:
    # 7 brokers on 7 racks with the last one empty left that rack with no broker to draw from,
    # and every partition that drew it held a replica on broker -1.
    spec = SyntheticSpec.filled(brokers, 400, racks=racks, replication_factor=3, empty_brokers=empty, seed=5)
    cluster = generate(spec)
    rack_of = {b.id: b.rack for b in cluster.brokers}
    empty_ids = {b.id for b in cluster.brokers[brokers - empty :]}
    live_racks = len({rack_of[b] for b in rack_of if b not in empty_ids})
    for p in cluster.partitions:
        assert all(r in rack_of and r not in empty_ids for r in p.replicas), p
        assert len(set(p.replicas)) == 3
        assert len({rack_of[r] for r in p.replicas}) == min(3, live_racks)
