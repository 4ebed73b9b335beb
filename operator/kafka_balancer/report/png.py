"""The report as a PNG: one panel per resource plus replicas and leaders, brokers grouped by
rack, before/after bars side by side, each goal's band behind them.

Drawn on a bare ``Figure`` with the Agg canvas: no pyplot state, no display needed.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kafka_balancer.model.quantities import N_QUANTITIES, REPLICAS
from kafka_balancer.report.data import BandKind, BrokerRow, GoalBandView, ReportData

# Fixed size: 1600 × 1200 pixels whatever the cluster, so the picture fits the same page every time.
FIGSIZE = (16.0, 12.0)
DPI = 100
BEFORE_COLOUR = "#4878d0"
AFTER_COLOUR = "#ee854a"
BAND_COLOUR = "#6acc64"
LIMIT_COLOUR = "#d62728"
BAR_WIDTH = 0.4
PANEL_TITLES = (
    "disk (% of capacity)",
    "network in (% of capacity)",
    "network out (% of capacity)",
    "cpu (% of capacity)",
    "replicas",
    "leaders",
)


def _value(row: BrokerRow, column: int, after: bool) -> float:
    if column < REPLICAS:
        return (row.after_percent if after else row.before_percent)[column]
    load = row.after if after else row.before
    return float(load.replicas if column == REPLICAS else load.leaders)


def _positions(rows: Sequence[BrokerRow]) -> np.ndarray:
    """x of each broker: consecutive within a rack, one empty slot between racks."""
    x, rack_index, previous = [], -1, None
    for i, row in enumerate(rows):
        if row.rack != previous:
            rack_index, previous = rack_index + 1, row.rack
        x.append(i + rack_index)
    return np.array(x, dtype=np.float64)


def _draw_band(ax: Axes, band: GoalBandView, x: np.ndarray, top: float) -> str | None:
    """Draws the band; returns a note instead for a limit far above every bar (80 % over bars at
    3 %, 10000 replicas), which would squash the bars to nothing."""
    lo, hi = np.array(band.lo), np.array(band.hi)
    if band.kind is BandKind.DISTRIBUTION:
        if band.enforced:
            ax.bar(x, hi - lo, 0.9, bottom=lo, color=BAND_COLOUR, alpha=0.3, linewidth=0, zorder=1)
        return None
    if float(hi.max()) > 2.0 * top:
        limit = f"{float(hi.max()):.4g}%" if band.column < REPLICAS else f"{float(hi.max()):.0f}"
        return f"limit {limit} off scale"
    ax.hlines(hi, x - 0.45, x + 0.45, colors=LIMIT_COLOUR, linestyles="--", linewidth=1.2, zorder=4)
    return None


def _label_racks(ax: Axes, rows: Sequence[BrokerRow], x: np.ndarray) -> None:
    racks = list(dict.fromkeys(row.rack for row in rows))
    centres = [float(np.mean([x[i] for i, r in enumerate(rows) if r.rack == rack])) for rack in racks]
    ax.set_xticks(centres, [f"rack {rack}" for rack in racks], minor=True)
    ax.tick_params(axis="x", which="minor", length=0, pad=16, labelsize=9)
    for i in range(1, len(rows)):
        if rows[i].rack != rows[i - 1].rack:
            ax.axvline((x[i] + x[i - 1]) / 2.0, color="0.6", linestyle=":", linewidth=0.8)


def _tick(row: BrokerRow) -> str:
    if row.state != "active":
        return f"{row.id}↓"
    return f"{row.id}↑" if row.warm_up_share < 1.0 else str(row.id)


def _panel(ax: Axes, data: ReportData, column: int, x: np.ndarray) -> None:
    before = [_value(row, column, after=False) for row in data.brokers]
    after = [_value(row, column, after=True) for row in data.brokers]
    top = max([*before, *after, 1e-9])
    notes = [_draw_band(ax, band, x, top) for band in data.bands if band.column == column]
    ax.bar(x - BAR_WIDTH / 2, before, BAR_WIDTH, color=BEFORE_COLOUR, zorder=3)
    ax.bar(x + BAR_WIDTH / 2, after, BAR_WIDTH, color=AFTER_COLOUR, zorder=3)
    many = len(data.brokers) > 24
    ax.set_xticks(
        x, [_tick(row) for row in data.brokers], fontsize=6 if many else 8, rotation=90 if many else 0
    )
    _label_racks(ax, data.brokers, x)
    ax.set_ylim(bottom=0.0)
    ax.set_axisbelow(True)
    ax.grid(axis="y", color="0.9")
    ax.set_title("; ".join([PANEL_TITLES[column], *(n for n in notes if n)]), fontsize=11)


def figure(data: ReportData) -> Figure:
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    x = _positions(data.brokers)
    for column, ax in zip(range(N_QUANTITIES), fig.subplots(3, 2).flat, strict=True):
        _panel(ax, data, column, x)
    fig.legend(
        handles=[
            Patch(color=BEFORE_COLOUR, label="before"),
            Patch(color=AFTER_COLOUR, label="after the plan"),
            Patch(color=BAND_COLOUR, alpha=0.3, label="distribution goal band"),
            Line2D([], [], color=LIMIT_COLOUR, linestyle="--", label="capacity goal limit"),
        ],
        loc="outside lower center",
        ncols=4,
        frameon=False,
    )
    fig.suptitle(f"kafka-balancer plan: {data.summary.line()}", fontsize=13)
    if any(row.state != "active" or row.warm_up_share < 1.0 for row in data.brokers):
        fig.text(0.005, 0.005, "↓ draining   ↑ warming up", fontsize=9, color="0.3")
    return fig


def png_bytes(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def render_png(data: ReportData) -> bytes:
    return png_bytes(figure(data))
