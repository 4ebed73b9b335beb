"""A snapshot's ``logDirs`` (JBOD) from what DescribeLogDirs says: each broker's dirs and the dir of each
replica. Pure, no I/O: ``kafka-balancer snapshot`` reads the dirs, this fills the document.

The contract is all or nothing (every broker and every partition, or none), so where DescribeLogDirs
cannot say (a broker before Kafka 3.3 gives no volume size, a replica in no dir of its broker) the
snapshot goes without ``logDirs`` and the caller says why.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kafka_balancer.kafka.admin import LogDirState


def add_log_dirs(
    document: Mapping[str, Any], dirs: Mapping[int, tuple[LogDirState, ...]]
) -> tuple[dict[str, Any], str | None]:
    """``document`` with ``logDirs`` on every broker and partition, or unchanged and the reason."""
    out = copy.deepcopy(dict(document))
    for broker in out["brokers"]:
        found = dirs.get(broker["id"], ())
        if not found:
            return dict(document), f"broker {broker['id']} reported no log dir"
        online = [d for d in found if d.online]
        sizes = [d.total_bytes for d in online if d.total_bytes is not None]
        if len(sizes) != len(online):
            return dict(document), f"broker {broker['id']} does not report its log dirs' size (Kafka < 3.3)"
        # An offline dir's volume is not measured; its size never matters (it takes no replica), so it
        # gets its broker's average, which keeps the snapshot's capacities positive.
        stand_in = sum(sizes) / len(sizes) if sizes else broker["capacity"]["disk"] / len(found)
        broker["logDirs"] = [
            {"path": d.path, "capacity": float(d.total_bytes or stand_in), "online": d.online} for d in found
        ]
    for part in out["partitions"]:
        tp = (part["topic"], part["partition"])
        paths = []
        for b in part["replicas"]:
            holding = [d.path for d in dirs.get(b, ()) if tp in d.replicas]
            # A broker does not list what an offline dir held; a replica it does not list is there.
            offline = [d.path for d in dirs.get(b, ()) if not d.online]
            if not holding and not offline:
                return dict(document), f"broker {b} lists {tp[0]}-{tp[1]} in none of its log dirs"
            paths.append(holding[0] if holding else offline[0])
        part["logDirs"] = paths
    return out, None
