"""The scored model's rows, one per partition, folded on the job's driver from the rows of
:func:`kafka_balancer.scoring.transforms.rollup` (one per partition and replica list).

Almost every partition has one such row; one reassigned in the used windows has one per replica
list it had. Its model row takes the newest row's replicas, leader and size, and sums the rest
(the load model rules are in :mod:`kafka_balancer.scoring.transforms`). Folding them in Spark
keeps the newest replica list in an aggregation buffer, which Spark can only do by sorting
every row; here it is a sort of rows already few and a handful of array operations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_balancer.model.math import IntArray
from kafka_balancer.scoring.transforms import window_samples

MODEL = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("replicas", pa.list_(pa.int32())),
        ("leader", pa.int32()),
        ("disk", pa.float64()),
        ("network_in", pa.float64()),
        ("network_out", pa.float64()),
        ("bytes_in", pa.float64()),
        ("samples", pa.int64()),
        ("complete", pa.bool_()),
    ]
)


def partition_model(rolled: pa.Table, windows: int, min_samples: int) -> pa.Table:
    """One row per partition of ``rolled``, in topic and partition order (``MODEL``): the
    newest replicas, leader and ``disk`` (size), network in and out as Σ bytes ÷ Σ interval
    seconds, ``bytes_in``, ``samples`` in all ``windows`` used windows, and ``complete`` when
    each of them holds at least ``min_samples`` samples. The job uses at least one window."""
    rows = rolled.take(
        pc.sort_indices(rolled, [("topic", "ascending"), ("partition", "ascending"), ("ts_ms", "ascending")])
    )
    n = rows.num_rows
    if n == 0:
        return MODEL.empty_table()
    topic = rows["topic"].combine_chunks()
    number = rows["partition"].to_numpy()
    first = np.ones(n, dtype=bool)
    other_topic = pc.not_equal(topic[1:], topic[:-1]).to_numpy(zero_copy_only=False)
    first[1:] = (number[1:] != number[:-1]) | other_topic
    starts = np.flatnonzero(first)
    newest = rows.take(np.append(starts[1:], n) - 1)

    def summed(column: str) -> np.ndarray[Any, Any]:
        return np.add.reduceat(rows[column].to_numpy(), starts)

    counts = [summed(window_samples(k)) for k in range(windows)]
    complete = np.ones(len(starts), dtype=bool)
    for count in counts:
        complete &= count >= min_samples
    seconds = summed("interval_ms") / 1000.0
    bytes_in = summed("bytes_in")
    with np.errstate(divide="ignore", invalid="ignore"):
        # A zero interval gives NaN or infinity, which the snapshot's check refuses.
        network_in, network_out = bytes_in / seconds, summed("bytes_out") / seconds
    replicas = newest["replicas"].combine_chunks()
    return pa.table(
        {
            "topic": newest["topic"],
            "partition": newest["partition"],
            "replicas": replicas,
            "leader": _leader(replicas, newest["leader"].to_numpy()),
            "disk": newest["size_bytes"],
            "network_in": network_in,
            "network_out": network_out,
            "bytes_in": bytes_in,
            "samples": np.sum(counts, axis=0, dtype=np.int64),
            "complete": complete,
        },
        schema=MODEL,
    )


def _leader(replicas: pa.ListArray, leader: IntArray) -> pa.Array:
    """Each partition's leader when it is one of its replicas, else its first replica (the
    preferred leader stands in for one offline, -1); null when it has none."""
    lengths = pc.list_value_length(replicas).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(replicas).to_numpy(zero_copy_only=False).astype(np.float64)
    owner = pc.list_parent_indices(replicas).to_numpy()
    listed = np.zeros(len(leader), dtype=bool)
    listed[owner[flat == leader[owner]]] = True
    preferred = np.full(len(leader), np.nan)
    has = lengths > 0
    preferred[has] = flat[(np.cumsum(lengths) - lengths)[has]]
    chosen = np.where(listed, leader, preferred)
    return pa.array(np.nan_to_num(chosen, nan=0).astype(np.int32), mask=np.isnan(chosen), type=pa.int32())
