"""The operator's cluster source on the real Kafka bed with the Embedded engine: passes go to the pool's
sample store, a background Spark run scores it, and later reads serve the scored per-partition loads."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from prometheus_client import CollectorRegistry

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.k8s.metrics import OperatorMetrics
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.scored_loads import BackgroundScoring, ScoringSchedule, pass_times
from kafka_balancer.k8s.source import ClusterSource
from kafka_balancer.scoring.launch import EmbeddedScorer
from kafka_balancer_dev.localbed.kafka import KafkaBed

POOL = PoolId("team-a", "scored", "uid-scored")
KEY = "team-a/scored"


def test_reads_fall_back_to_collected_loads_until_the_background_run_completes(
    kafka_bed: KafkaBed, tmp_path: Path
) -> None:
    topic = f"scored-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bed.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 2)], operation_timeout=30)[topic].result(timeout=60)
    producer = Producer({"bootstrap.servers": kafka_bed.bootstrap_servers})
    for i in range(3000):
        producer.produce(topic, value=b"x" * 500, partition=i % 3)
    assert producer.flush(60) == 0

    # A 3 s window so one run can start after a few passes; no second run within the test.
    schedule = ScoringSchedule(interval_s=3600, window_ms=3000, windows=1)
    metrics = OperatorMetrics(CollectorRegistry())
    scoring = BackgroundScoring(
        lambda engine: EmbeddedScorer(tmp_path / "scoring", timeout_s=1200),
        schedule,
        observe=metrics.scoring_run,
    )
    source = ClusterSource(tmp_path / "state", scoring)
    spec = BrokerPoolSpec.model_validate(
        {
            "kafka": {"bootstrapServers": kafka_bed.bootstrap_servers},
            "capacity": {"disk": "1T", "networkIn": "100M", "networkOut": "100M", "cpu": "8"},
        }
    )
    deadline = time.monotonic() + 120
    while not scoring.running(KEY):
        assert time.monotonic() < deadline, "no scoring run started after two minutes of passes"
        metadata, loads = source.read(POOL, spec, {})
        assert scoring.latest(KEY, int(time.time() * 1000)) is None  # nothing scored yet: collected loads
        time.sleep(1.0)  # the passes' spacing: the store needs one window of history
    store = tmp_path / "state" / "samples" / "team-a.scored"
    assert len(pass_times(store)) >= 3

    scoring.wait(KEY, 1500)
    assert not scoring.running(KEY)
    assert scoring.last_error.get(KEY) is None
    scored = scoring.latest(KEY, int(time.time() * 1000))
    assert scored is not None
    metadata, loads = source.read(POOL, spec, {})
    ours = [(p.topic, p.partition) for p in metadata.partitions if p.topic == topic]
    assert len(ours) == 3
    for tp in ours:
        assert loads[tp] == scored.loads[tp]
        assert loads[tp].disk > 0
    seconds = metrics.registry.get_sample_value(
        "kafka_balancer_scoring_seconds_sum", {"pool": KEY, "engine": "Embedded", "result": "succeeded"}
    )
    assert seconds is not None and seconds > 0
    print(f"\nembedded scoring run in the operator's source: {seconds:.1f} s")
