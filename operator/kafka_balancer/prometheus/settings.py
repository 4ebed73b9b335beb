"""What the Prometheus source asks and how it finds the broker id in an answer.

The default queries follow the naming of the Prometheus JMX exporter with the rules most Kafka
deployments use (Strimzi's example): ``process_cpu_seconds_total`` of the broker JVM and the
broker-wide ``kafka_server_brokertopicmetrics_*_total`` counters (the series without a ``topic``
label). Network counts replication too, as the cluster model does: a broker's network in is what
producers and its followers' fetches bring in, its network out what consumers and other brokers'
followers fetch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

CPU_QUERY = "sum by ({label}) (rate(process_cpu_seconds_total[{range}]))"
# Each counter is rated and summed on its own: rate() drops the metric name, so one selector over
# both names would give two series with the same labels, which Prometheus refuses.
NETWORK_IN_QUERY = (
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_bytesin_total{{topic=""}}[{range}]))'
    " + "
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_replicationbytesin_total{{topic=""}}[{range}]))'
)
NETWORK_OUT_QUERY = (
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_bytesout_total{{topic=""}}[{range}]))'
    " + "
    'sum by ({label}) (rate(kafka_server_brokertopicmetrics_replicationbytesout_total{{topic=""}}[{range}]))'
)
# A Strimzi pod name ends in the broker id: my-cluster-kafka-3, my-cluster-pool-a-3.
BROKER_ID_PATTERN = r"(\d+)$"
# Two scrapes at Prometheus' default 15 s interval, with room: rate() needs two samples in range.
MIN_RANGE_S = 60


@dataclass(frozen=True)
class PrometheusSettings:
    """Where Prometheus is and what to ask it; queries are templates with ``{label}`` and ``{range}``."""

    url: str
    broker_label: str = "pod"
    broker_id_pattern: re.Pattern[str] = field(default_factory=lambda: re.compile(BROKER_ID_PATTERN))
    cpu_query: str = CPU_QUERY
    network_in_query: str = NETWORK_IN_QUERY
    network_out_query: str = NETWORK_OUT_QUERY
    min_range_s: int = MIN_RANGE_S
    timeout_s: float = 10.0
    ca_file: Path | None = None
    bearer_token: str | None = field(default=None, repr=False)

    def render(self, template: str, interval_ms: int) -> str:
        """The query for one interval: the range is the interval, at least ``min_range_s``."""
        range_s = max(self.min_range_s, -(-interval_ms // 1000))
        return template.format(label=self.broker_label, range=f"{range_s}s")
