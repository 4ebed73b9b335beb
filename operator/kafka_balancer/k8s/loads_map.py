"""The pool's ``<pool>-loads`` ConfigMap: the report of its latest plan (``report.json``, ``report.txt``)
and each topic's partition count at that plan (``partitions.json``).

The partition counts grow with the topics (a few thousand long topic names pass 1 MiB), so they are
stored as plans are (:mod:`~kafka_balancer.k8s.blobs`): plain text while they fit beside the report,
else gzipped over ``<pool>-loads``, ``<pool>-loads-1``, …; the report stays plain text in the first
ConfigMap for ``kubectl``. A ConfigMap an earlier version wrote (all three keys plain) reads the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kafka_balancer.errors import ForeignConfigMap, UnreadableConfigMap
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import KubePort, PoolId
from kafka_balancer.reconcile.names import loads_config_map
from kafka_balancer.report.document import report_text

PARTITIONS_KEY = "partitions.json"


def store_loads(kube: KubePort, owner: PoolId, report: dict[str, Any], partitions: Mapping[str, int]) -> None:
    """Write the report and the partition counts (ConfigMapTooLarge when the report alone does not
    fit a ConfigMap, ForeignConfigMap when the name is someone else's)."""
    fields = {"report.json": json_text(report), "report.txt": report_text(report)}
    document = json_text(dict(partitions)).encode()
    blobs.store(kube, owner.namespace, loads_config_map(owner.name), owner, fields, PARTITIONS_KEY, document)


def stored_partition_counts(kube: KubePort, pool: PoolId) -> dict[str, int] | None:
    """The partition counts :func:`store_loads` wrote; None when there are none, or when what is
    there is not the pool's own or not counts (anyone who may edit ConfigMaps can write anything):
    the pass then tells of no new partitions, and its plan rewrites them (or says whose the name is)."""
    try:
        found = blobs.load(kube, pool.namespace, loads_config_map(pool.name), pool, PARTITIONS_KEY)
    except (ForeignConfigMap, UnreadableConfigMap):
        return None
    if found is None:
        return None
    return partition_counts_of(found[1])


def partition_counts_of(document: bytes) -> dict[str, int] | None:
    """``{topic: partitions}`` from a stored document; None unless it is exactly that."""
    try:
        counts = json.loads(document)
    except ValueError:
        return None
    if not isinstance(counts, dict):
        return None
    valid = all(type(n) is int and n >= 0 for n in counts.values())
    return {str(topic): n for topic, n in counts.items()} if valid else None
