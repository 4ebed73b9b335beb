"""Sample schemas (Parquet). The collector appends; the scoring job aggregates.

Partition samples: one row per partition per collection interval, measured from the Admin
API alone (no broker plugin):

| column | type | meaning |
|---|---|---|
| ``ts_ms`` | int64 | end of the interval, epoch milliseconds |
| ``interval_ms`` | int64 | interval length (> 0) |
| ``topic`` | string | |
| ``partition`` | int32 | |
| ``leader`` | int32 | leader broker id at sampling time (-1 if none) |
| ``replicas`` | list<int32> | replica broker ids, preferred leader first |
| ``size_bytes`` | float64 | log size of the partition (leader replica's, from describe_log_dirs) |
| ``bytes_in`` | float64 | bytes produced during the interval |
| ``bytes_out`` | float64 | bytes fetched by consumers during the interval |
| ``messages_in`` | int64 | records produced during the interval |

Broker samples: one row per broker per interval; resource columns are null where no source
(e.g. Prometheus) provides them:

| column | type | meaning |
|---|---|---|
| ``ts_ms``, ``interval_ms`` | int64 | as above |
| ``broker`` | int32 | broker id |
| ``rack`` | string | broker.rack (null if unset) |
| ``cpu`` | float64, nullable | cores used on average |
| ``network_in`` / ``network_out`` | float64, nullable | bytes/s |
"""

from __future__ import annotations

import pyarrow as pa

PARTITION_SAMPLES = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("interval_ms", pa.int64(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("leader", pa.int32(), nullable=False),
        pa.field("replicas", pa.list_(pa.int32()), nullable=False),
        pa.field("size_bytes", pa.float64(), nullable=False),
        pa.field("bytes_in", pa.float64(), nullable=False),
        pa.field("bytes_out", pa.float64(), nullable=False),
        pa.field("messages_in", pa.int64(), nullable=False),
    ]
)

BROKER_SAMPLES = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("interval_ms", pa.int64(), nullable=False),
        pa.field("broker", pa.int32(), nullable=False),
        pa.field("rack", pa.string()),
        pa.field("cpu", pa.float64()),
        pa.field("network_in", pa.float64()),
        pa.field("network_out", pa.float64()),
    ]
)

# Directory layout of a sample store (local path or s3a:// URI): Parquet files under these.
PARTITION_DIR = "partition_samples"
BROKER_DIR = "broker_samples"
