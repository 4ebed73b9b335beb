"""The report as one self-contained HTML page: the PNG inlined (base64), the table, the goal lines."""

from __future__ import annotations

import base64
from html import escape

from kafka_balancer.report.data import ReportData
from kafka_balancer.report.table import HEADER, cells, goal_lines

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em}img{max-width:100%}"
    "table{border-collapse:collapse;font-size:0.9em}td,th{padding:2px 10px;border-bottom:1px solid #ddd}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
)


def render_html(data: ReportData, png: bytes) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADER)
    body = "\n".join(
        "<tr>"
        + "".join(f"<td{' class=n' if c >= 3 else ''}>{escape(cell)}</td>" for c, cell in enumerate(row))
        + "</tr>"
        for row in cells(data.brokers)
    )
    goals = "".join(f"<li>{escape(line)}</li>" for line in goal_lines(data.bands))
    image = base64.b64encode(png).decode("ascii")
    title = f"kafka-balancer plan: {data.summary.line()}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>\n<h1>{escape(title)}</h1>\n"
        f'<img alt="per-broker load before and after the plan" src="data:image/png;base64,{image}">\n'
        f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>\n"
        f"<ul>{goals}</ul>\n</body></html>\n"
    )
