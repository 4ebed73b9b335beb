"""The text report of a ``--report`` JSON document (``formats.report``), for places that hold the
document rather than the cluster: the operator publishes it next to ``report.json``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_balancer.model.resources import RESOURCES
from kafka_balancer.model.working import BrokerLoad
from kafka_balancer.report.data import BrokerRow, PlanSummary
from kafka_balancer.report.table import text_table


def _load(side: Mapping[str, Any]) -> BrokerLoad:
    d, i, o, c = (float(side[r.key]) for r in RESOURCES)
    return BrokerLoad((d, i, o, c), int(side["replicas"]), int(side["leaders"]))


def _percent(side: Mapping[str, Any]) -> tuple[float, float, float, float]:
    d, i, o, c = (float(side["utilisationPercent"][r.key]) for r in RESOURCES)
    return d, i, o, c


def rows_from_document(document: Mapping[str, Any]) -> tuple[BrokerRow, ...]:
    """Brokers grouped by rack, as the picture and the CLI table show them."""
    rows = (
        BrokerRow(
            id=int(b["id"]),
            rack=str(b["rack"]),
            state=str(b["state"]),
            warm_up_share=float(b["warmUpShare"]),
            before=_load(b["before"]),
            after=_load(b["after"]),
            before_percent=_percent(b["before"]),
            after_percent=_percent(b["after"]),
        )
        for b in document["brokers"]
    )
    return tuple(sorted(rows, key=lambda row: (row.rack, row.id)))


def report_text(document: Mapping[str, Any]) -> str:
    s = document["summary"]
    summary = PlanSummary(
        int(s["partitionsChanged"]), int(s["replicaMoves"]), int(s["leaderChanges"]), float(s["bytesMoved"])
    )
    goals = [
        f"{g['name']}: {'satisfied' if g['before']['satisfied'] else 'not satisfied'} before, "
        f"{'satisfied' if g['after']['satisfied'] else 'not satisfied'} after"
        for g in document["goals"]
    ]
    return (
        f"plan: {summary.line()}\n"
        + text_table(rows_from_document(document))
        + "".join(f"{line}\n" for line in goals)
    )
