"""The report as a PNG: one panel per resource plus replicas and leaders, before and after the plan,
brokers grouped by rack, every per-broker goal's band or limit drawn on its quantity's panel.

Up to ``PER_BROKER_UP_TO`` brokers each broker gets a pair of bars (by id within its rack); past
that, bars would be thinner than a pixel and their labels unreadable, so each rack is drawn as its
brokers' loads sorted from highest to lowest, before and after sorted separately: a flat line is a
balanced rack and the spread is plain at any size. The figure's subtitle says which drawing it is.

Drawn on a bare ``Figure`` with the Agg canvas: no pyplot state, no display needed.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kafka_balancer.goals.spec import GoalType
from kafka_balancer.model.quantities import N_QUANTITIES, REPLICAS
from kafka_balancer.report.data import BandKind, BrokerRow, GoalBandView, ReportData

# Fixed size: 1600 × 1200 pixels whatever the cluster, so the picture fits the same page every time.
FIGSIZE = (16.0, 12.0)
DPI = 100
# 60 brokers are 120 bars of about 6 pixels in a panel, with ids still legible under them.
PER_BROKER_UP_TO = 60
BEFORE_COLOUR = "#4878d0"
AFTER_COLOUR = "#ee854a"
BAND_COLOUR = "#6acc64"
LIMIT_COLOUR = "#d62728"
BAR_WIDTH = 0.4
BAND_ALPHA = 0.3
# A limit more than this many times the highest bar is drawn on a gauge beside the panel: on the
# panel itself it would squash the bars (80 % over bars at 3 %, 10000 replicas over 100).
ON_PANEL_LIMIT_REACH = 1.5
PANEL_TITLES = (
    "disk (% of capacity)",
    "network in (% of capacity)",
    "network out (% of capacity)",
    "cpu (% of capacity)",
    "replicas",
    "leaders",
)


def band_gid(band: GoalBandView) -> str:
    """The id of the artist drawing a distribution goal's band or a capacity goal's limit."""
    return f"{'band' if band.kind is BandKind.DISTRIBUTION else 'limit'}:{band.label}"


@dataclass(frozen=True, slots=True)
class _Span:
    """Where a group of brokers is drawn: one broker (bars) or one rack (sorted profile)."""

    x0: float
    x1: float
    brokers: tuple[int, ...]  # indexes into ReportData.brokers


@dataclass(frozen=True, slots=True)
class _Layout:
    per_broker: bool
    spans: tuple[_Span, ...]
    # Per rack: its name, its brokers (indexes into ReportData.brokers) and their x positions.
    racks: tuple[tuple[str, tuple[int, ...], np.ndarray], ...]


def _racks(rows: Sequence[BrokerRow]) -> list[tuple[str, tuple[int, ...]]]:
    racks: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        racks.setdefault(row.rack, []).append(i)
    return [(rack, tuple(members)) for rack, members in racks.items()]


def _layout(rows: Sequence[BrokerRow]) -> _Layout:
    """x of each broker or rank: consecutive within a rack, a gap between racks."""
    per_broker = len(rows) <= PER_BROKER_UP_TO
    gap = 1 if per_broker else max(2, len(rows) // 40)
    racks, start = [], 0
    for rack, members in _racks(rows):
        racks.append((rack, members, np.arange(start, start + len(members), dtype=np.float64)))
        start += len(members) + gap
    if per_broker:
        spans = tuple(
            _Span(x - 0.45, x + 0.45, (i,))
            for _, members, xs in racks
            for i, x in zip(members, xs, strict=True)
        )
    else:
        spans = tuple(_Span(xs[0] - 0.5, xs[-1] + 0.5, members) for _, members, xs in racks)
    return _Layout(per_broker, spans, tuple(racks))


def _value(row: BrokerRow, column: int, after: bool) -> float:
    if column < REPLICAS:
        return (row.after_percent if after else row.before_percent)[column]
    load = row.after if after else row.before
    return float(load.replicas if column == REPLICAS else load.leaders)


def _span_value(values: Sequence[float], span: _Span) -> float:
    # A rack's band is its median broker's: warming-up or draining brokers have their own, narrower one.
    return float(np.median([values[i] for i in span.brokers]))


def _draw_distribution(ax: Axes, band: GoalBandView, layout: _Layout) -> None:
    boxes = [
        [(s.x0, lo), (s.x1, lo), (s.x1, hi), (s.x0, hi)]
        for s in layout.spans
        for lo, hi in ((_span_value(band.lo, s), _span_value(band.hi, s)),)
    ]
    # A band the goal does not enforce (mean utilisation below its threshold) is outlined, not filled.
    boxes_artist = PolyCollection(boxes, zorder=1, edgecolors=BAND_COLOUR)
    if band.enforced:
        boxes_artist.set(facecolor=BAND_COLOUR, alpha=BAND_ALPHA, linewidth=0)
    else:
        boxes_artist.set(facecolor="none", hatch="//", linewidth=0.5)
    boxes_artist.set_gid(band_gid(band))
    ax.add_collection(boxes_artist, autolim=False)


def _draw_limit_on_panel(ax: Axes, band: GoalBandView, layout: _Layout) -> None:
    spans = layout.spans
    ax.hlines(
        [_span_value(band.hi, s) for s in spans],
        [s.x0 for s in spans],
        [s.x1 for s in spans],
        colors=LIMIT_COLOUR,
        linestyles="--",
        linewidth=1.4,
        zorder=4,
        gid=band_gid(band),
    )


def _draw_gauge(ax: Axes, limits: Sequence[GoalBandView], view_top: float) -> None:
    """A narrow scale right of the panel, from 0 to past the limit: the panel's range shaded, each
    limit dashed at its true height, so the headroom left is visible without squashing the bars."""
    gauge = ax.inset_axes((1.008, 0.0, 0.018, 1.0))
    highest = max(max(band.hi) for band in limits)
    gauge.set_ylim(0.0, 1.08 * highest)
    gauge.set_xlim(0.0, 1.0)
    gauge.axhspan(0.0, view_top, color="0.75", linewidth=0)
    for band in limits:
        gauge.axhline(max(band.hi), color=LIMIT_COLOUR, linestyle="--", linewidth=2.5, gid=band_gid(band))
    gauge.set_xticks([])
    gauge.yaxis.tick_right()
    gauge.tick_params(axis="y", labelsize=7, length=2, pad=1)


def _limit_text(band: GoalBandView) -> str:
    value = max(band.hi)
    return f"{value:.4g}%" if band.column < REPLICAS else f"{value:.0f}"


def _tick(row: BrokerRow) -> str:
    if row.state != "active":
        return f"{row.id}↓"
    return f"{row.id}↑" if row.warm_up_share < 1.0 else str(row.id)


def _draw_bars(ax: Axes, data: ReportData, column: int, layout: _Layout) -> float:
    x = np.concatenate([xs for _, _, xs in layout.racks])
    order = [i for _, members, _ in layout.racks for i in members]
    before = [_value(data.brokers[i], column, after=False) for i in order]
    after = [_value(data.brokers[i], column, after=True) for i in order]
    ax.bar(x - BAR_WIDTH / 2, before, BAR_WIDTH, color=BEFORE_COLOUR, zorder=3)
    ax.bar(x + BAR_WIDTH / 2, after, BAR_WIDTH, color=AFTER_COLOUR, zorder=3)
    many = len(order) > 24
    ax.set_xticks(
        x, [_tick(data.brokers[i]) for i in order], fontsize=6 if many else 8, rotation=90 if many else 0
    )
    # Rack names are minor ticks under the broker ids; a rack centred on a broker must keep its label.
    ax.xaxis.remove_overlapping_locs = False
    longest = max(len(_tick(row)) for row in data.brokers)
    ax.set_xticks(
        [float(np.mean(xs)) for _, _, xs in layout.racks],
        [f"rack {rack}" for rack, _, _ in layout.racks],
        minor=True,
    )
    ax.tick_params(axis="x", which="minor", length=0, pad=6 + (4.5 * longest if many else 12), labelsize=9)
    return max([*before, *after])


def _draw_profiles(ax: Axes, data: ReportData, column: int, layout: _Layout) -> float:
    top = 0.0
    for _, members, xs in layout.racks:
        for after, colour in ((False, BEFORE_COLOUR), (True, AFTER_COLOUR)):
            values = sorted((_value(data.brokers[i], column, after) for i in members), reverse=True)
            ax.step(xs, values, where="mid", color=colour, linewidth=1.8, zorder=3)
            top = max(top, values[0])
    labels = []
    for rack, members, _ in layout.racks:
        rows = [data.brokers[i] for i in members]
        draining = sum(row.state == "draining" for row in rows)
        failed = sum(row.state == "failed" for row in rows)
        warming = sum(row.state == "active" and row.warm_up_share < 1.0 for row in rows)
        counts = ((draining, "draining"), (failed, "failed"), (warming, "warming up"))
        extra = "".join(f"\n{n} {what}" for n, what in counts if n)
        labels.append(f"rack {rack}\n{len(rows)} brokers{extra}")
    ax.set_xticks([float(np.mean(xs)) for _, _, xs in layout.racks], labels, fontsize=9)
    ax.tick_params(axis="x", length=0)
    return top


def _panel(ax: Axes, data: ReportData, column: int, layout: _Layout) -> None:
    top = max(
        (_draw_bars if layout.per_broker else _draw_profiles)(ax, data, column, layout),
        1e-9,
    )
    bands = [band for band in data.bands if band.column == column]
    names = []
    for band in bands:
        if band.kind is BandKind.DISTRIBUTION:
            _draw_distribution(ax, band, layout)
            names.append(f"band {band.label}" + ("" if band.enforced else " (not enforced)"))
    view_top = 1.1 * max([top, *(max(b.hi) for b in bands if b.kind is BandKind.DISTRIBUTION)])
    limits = [band for band in bands if band.kind is BandKind.CAPACITY]
    on_panel = [band for band in limits if max(band.hi) <= ON_PANEL_LIMIT_REACH * top]
    for band in on_panel:
        _draw_limit_on_panel(ax, band, layout)
        names.append(f"limit {band.label} {_limit_text(band)}")
        view_top = max(view_top, 1.08 * max(band.hi))
    beside = [band for band in limits if band not in on_panel]
    if beside:
        _draw_gauge(ax, beside, view_top)
        names += [f"limit {band.label} {_limit_text(band)} (scale at right)" for band in beside]
    for (_, _, left), (_, _, right) in itertools.pairwise(layout.racks):
        ax.axvline((left[-1] + right[0]) / 2.0, color="0.6", linestyle=":", linewidth=0.8)
    ax.set_xlim(layout.spans[0].x0 - 0.6, layout.spans[-1].x1 + 0.6)
    ax.set_ylim(0.0, view_top)
    ax.set_axisbelow(True)
    ax.grid(axis="y", color="0.9")
    ax.set_title("\n".join([PANEL_TITLES[column], *(["; ".join(names)] if names else [])]), fontsize=10)


def drawing_note(data: ReportData) -> str:
    """How the picture draws the brokers: its subtitle, and the HTML page's caption."""
    if len(data.brokers) <= PER_BROKER_UP_TO:
        return "one pair of bars per broker, by id within each rack (↓ draining, ↑ warming up)"
    return (
        f"{len(data.brokers)} brokers, too many for a bar each: each rack's brokers sorted by load, "
        "highest first, before and after sorted separately (flat: balanced); "
        "each rack's band is its median broker's"
    )


def figure(data: ReportData) -> Figure:
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    layout = _layout(data.brokers)
    for column, ax in zip(range(N_QUANTITIES), fig.subplots(3, 2).flat, strict=True):
        _panel(ax, data, column, layout)
    handles = [
        Patch(color=BEFORE_COLOUR, label="before"),
        Patch(color=AFTER_COLOUR, label="after the plan"),
        Patch(color=BAND_COLOUR, alpha=BAND_ALPHA, label="distribution goal band"),
        Line2D([], [], color=LIMIT_COLOUR, linestyle="--", label="capacity goal limit"),
    ]
    if any(band.kind is BandKind.DISTRIBUTION and not band.enforced for band in data.bands):
        handles.insert(
            3, Patch(facecolor="none", edgecolor=BAND_COLOUR, hatch="//", label="band not enforced")
        )
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), frameon=False)
    if any(goal.type == GoalType.TOPIC_REPLICA_DISTRIBUTION.value for goal in data.goals):
        fig.text(0.005, 0.005, "TopicReplicaDistribution is per topic: not drawn", fontsize=9, color="0.3")
    fig.suptitle(
        f"kafka-balancer plan: {data.summary.line()}\n{data.cluster.line()}\n{drawing_note(data)}",
        fontsize=12,
    )
    return fig


def png_bytes(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    return out.getvalue()


def render_png(data: ReportData) -> bytes:
    return png_bytes(figure(data))
