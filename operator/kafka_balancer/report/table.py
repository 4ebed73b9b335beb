"""The per-broker table (terminal text and HTML cells), and the goal lines under it."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_balancer.model.resources import RESOURCES
from kafka_balancer.report.data import BrokerRow, GoalBandView

ARROW = "→"
HEADER: tuple[str, ...] = (
    "broker",
    "rack",
    "state",
    *(f"{r.key} %" for r in RESOURCES),
    "replicas",
    "leaders",
)


def _state(row: BrokerRow) -> str:
    if row.warm_up_share < 1.0:
        return f"{row.state} (warm-up {100.0 * row.warm_up_share:.0f}%)"
    return row.state


def cells(rows: Sequence[BrokerRow]) -> list[tuple[str, ...]]:
    """One tuple of cell texts per broker, in HEADER order; changes read ``before→after``."""
    return [
        (
            str(row.id),
            row.rack,
            _state(row),
            *(f"{b:.1f}{ARROW}{a:.1f}" for b, a in zip(row.before_percent, row.after_percent, strict=True)),
            f"{row.before.replicas}{ARROW}{row.after.replicas}",
            f"{row.before.leaders}{ARROW}{row.after.leaders}",
        )
        for row in rows
    ]


def goal_lines(bands: Sequence[GoalBandView]) -> list[str]:
    return [
        f"{band.label}: {band.outside_before} broker(s) outside the band before, {band.outside_after} after"
        + (
            ""
            if band.enforced
            else " (not enforced: mean utilisation below its thresholdPercent, or nothing to spread)"
        )
        for band in bands
    ]


def text_table(rows: Sequence[BrokerRow]) -> str:
    body = cells(rows)
    widths = [max(len(line[c]) for line in [HEADER, *body]) for c in range(len(HEADER))]
    # Names left-aligned, figures right-aligned so that the arrows line up.
    lines = [
        "  ".join(
            cell.ljust(w) if c < 3 else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in [HEADER, *body]
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"
