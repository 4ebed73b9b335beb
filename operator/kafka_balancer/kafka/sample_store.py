"""The durable, append-only sample store on a local file system.

One Parquet file per sampling pass under ``<root>/partition_samples/`` and ``<root>/broker_samples/``
(the layout of :mod:`kafka_balancer.samples.schema`, which the Spark scoring job reads). Each file is
written to a hidden temporary name, fsynced and renamed, so a reader (or a crash) never sees half a
file; Spark and pyarrow skip hidden files. Nothing is held in memory: a restarted collector reads
the history back from disk.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_balancer.errors import KafkaBalancerError
from kafka_balancer.samples.schema import BROKER_DIR, BROKER_SAMPLES, PARTITION_DIR, PARTITION_SAMPLES

SUFFIX = ".parquet"


class SampleStore:
    """See the module docstring. File names start with the pass's ``ts_ms`` so reads can skip old ones."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partition_dir = root / PARTITION_DIR
        self.broker_dir = root / BROKER_DIR

    def append(self, ts_ms: int, partitions: pa.Table, brokers: pa.Table) -> None:
        """Store the samples of one pass (both tables must have the shared schemas exactly)."""
        name = f"{ts_ms:013d}-{uuid.uuid4().hex[:12]}{SUFFIX}"
        _write(self.partition_dir / name, partitions, PARTITION_SAMPLES)
        _write(self.broker_dir / name, brokers, BROKER_SAMPLES)

    def partition_samples(self, since_ms: int = 0) -> pa.Table:
        """Every stored partition sample with ``ts_ms`` > ``since_ms``."""
        return _read(self.partition_dir, PARTITION_SAMPLES, since_ms)

    def broker_samples(self, since_ms: int = 0) -> pa.Table:
        """Every stored broker sample with ``ts_ms`` > ``since_ms``."""
        return _read(self.broker_dir, BROKER_SAMPLES, since_ms)


def _write(path: Path, table: pa.Table, schema: pa.Schema) -> None:
    if not table.schema.equals(schema):
        raise KafkaBalancerError(f"refusing to store samples whose schema differs from {path.parent.name}'s")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, tmp)
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise KafkaBalancerError(f"cannot write samples to {path}: {err.strerror}") from err


def _read(directory: Path, schema: pa.Schema, since_ms: int) -> pa.Table:
    if not directory.is_dir():
        return schema.empty_table()
    tables = []
    for path in sorted(directory.glob(f"*{SUFFIX}")):
        if path.name.startswith(".") or _file_ts(path) <= since_ms:
            continue
        try:
            table = pq.read_table(path, schema=schema)
        except (OSError, pa.ArrowInvalid) as err:
            raise KafkaBalancerError(f"cannot read samples from {path}: {err}") from err
        tables.append(table.filter(pc.greater(table["ts_ms"], since_ms)))
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _file_ts(path: Path) -> int:
    head = path.name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0
