"""The report as one self-contained HTML page a person can share: nothing outside the file (the PNG
inlined as a data URI, the style in the page), readable without the terminal that made it: the
cluster and the plan in a sentence each, every goal before and after, the biggest moves, the
picture and the per-broker table."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from html import escape

from kafka_balancer.goals.base import GoalStatus
from kafka_balancer.report.data import MoveRow, ReportData, format_bytes
from kafka_balancer.report.png import drawing_note
from kafka_balancer.report.table import HEADER, cells, goal_lines

TITLE = "kafka-balancer plan report"
GOALS_HEADER = ("goal", "kind", "priority", "before", "after")
MOVES_HEADER = ("partition", "replicas before", "replicas after", "data copied")

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;max-width:1700px}img{max-width:100%}"
    "table{border-collapse:collapse;font-size:0.9em;margin-bottom:1em}"
    "td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".ok{color:#1a7f37}.bad{color:#c62828;font-weight:bold}.detail{color:#555;font-size:0.9em}"
    "figcaption{color:#444;margin-bottom:0.5em}"
)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric_from: int = 99) -> str:
    """Cells are HTML already (escaped by the caller); columns from ``numeric_from`` align right."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "\n".join(
        "<tr>"
        + "".join(f"<td{' class=n' if c >= numeric_from else ''}>{cell}</td>" for c, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>\n"


def _status(status: GoalStatus) -> str:
    verdict = (
        '<span class="ok">satisfied</span>' if status.satisfied else '<span class="bad">not satisfied</span>'
    )
    detail = f'<br><span class="detail">{escape(status.detail)}</span>' if status.detail else ""
    return f"{verdict} (worst deviation {status.worst_deviation:.3g}){detail}"


def _replicas(replicas: Sequence[int]) -> str:
    return escape(", ".join(str(b) for b in replicas))


def _move(move: MoveRow) -> tuple[str, ...]:
    return (
        escape(f"{move.topic}-{move.partition}"),
        _replicas(move.before),
        _replicas(move.after),
        escape(format_bytes(move.bytes_moved)),
    )


def render_html(data: ReportData, png: bytes) -> str:
    goals = _table(
        GOALS_HEADER,
        (
            (
                escape(g.label),
                "hard" if g.hard else "soft",
                str(g.priority),
                _status(g.before),
                _status(g.after),
            )
            for g in data.goals
        ),
    )
    moves = (
        f"<p>The {len(data.biggest_moves)} partition(s) copying the most data "
        f"(of {data.summary.partitions_changed} changed; the preferred leader first):</p>\n"
        + _table(MOVES_HEADER, (_move(m) for m in data.biggest_moves), numeric_from=3)
        if data.biggest_moves
        else "<p>The plan copies no data.</p>\n"
    )
    brokers = _table(HEADER, ([escape(cell) for cell in row] for row in cells(data.brokers)), numeric_from=3)
    bands = "".join(f"<li>{escape(line)}</li>" for line in goal_lines(data.bands))
    image = base64.b64encode(png).decode("ascii")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title>'
        f"<style>{_STYLE}</style></head><body>\n<h1>{TITLE}</h1>\n"
        f"<p><b>Cluster:</b> {escape(data.cluster.line())}</p>\n"
        f"<p><b>Plan:</b> {escape(data.summary.line())}</p>\n"
        f"<h2>Goals before and after the plan</h2>\n{goals}"
        f"<h2>Biggest moves</h2>\n{moves}"
        f"<h2>Load per broker</h2>\n<figure>"
        f"<figcaption>Before (blue) and after the plan (orange); {escape(drawing_note(data))}. "
        "Shaded: each distribution goal's band; dashed red: each capacity goal's limit.</figcaption>\n"
        f'<img alt="per-broker load before and after the plan" src="data:image/png;base64,{image}">'
        f"</figure>\n<h2>Per broker, before → after</h2>\n{brokers}"
        f"<ul>{bands}</ul>\n</body></html>\n"
    )
