"""The report's picture as a reader depends on it, at 4, 40 and 270 brokers: every rack named on
every panel, every distribution goal's band and every capacity goal's limit drawn (at the limit the
goal sets), and past ``PER_BROKER_UP_TO`` brokers one sorted line per rack instead of unreadable bars.

Checked on the matplotlib Figure the report draws (its artists, found by what they show), not on
pixels; expected figures come from ``checker`` (an independent load model) and the goal specs.
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from PIL import Image

from kafka_balancer.formats.snapshot import cluster_to_snapshot
from kafka_balancer.goals.spec import (
    DEFAULT_MAX_REPLICAS_PER_BROKER,
    GoalFamily,
    GoalSpec,
    GoalType,
    default_goal_set,
)
from kafka_balancer.model.cluster import BrokerState, Cluster
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.report.build import build_report
from kafka_balancer.report.png import (
    AFTER_COLOUR,
    BEFORE_COLOUR,
    DPI,
    FIGSIZE,
    PER_BROKER_UP_TO,
    figure,
    png_bytes,
)
from kafka_balancer_dev.synthetic import SyntheticSpec, generate
from tests.unit import checker

RESOURCE_PANELS = dict(zip(checker.RESOURCES, range(4), strict=True))

# 40 brokers in 3 racks: rack b's 13 brokers centre on one of its broker ids, where matplotlib used
# to drop the rack's name as overlapping that id. 270 brokers: past PER_BROKER_UP_TO, 5 racks.
SIZES = {
    4: SyntheticSpec(brokers=4, partitions=60, racks=2, replication_factor=2, hot_brokers=1, empty_brokers=1),
    40: SyntheticSpec(brokers=40, partitions=800, racks=3, hot_brokers=4, empty_brokers=2, seed=3),
    270: SyntheticSpec(brokers=270, partitions=2700, racks=5, hot_brokers=20, empty_brokers=5, seed=5),
}

# Every goal of the default set, plus a second disk band (two goals on one panel) and a network-in
# band its goal does not enforce (the synthetic network load is far below 50 %).
SPECS = (
    *(
        replace(spec, threshold_percent=50) if spec.type is GoalType.NETWORK_IN_DISTRIBUTION else spec
        for spec in default_goal_set()
    ),
    GoalSpec.default(GoalType.DISK_DISTRIBUTION, name="tight", range_percent=5, priority=64),
)


def _cluster(brokers: int) -> Cluster:
    return generate(SIZES[brokers])


@pytest.fixture(scope="module", params=sorted(SIZES))
def drawn(request: pytest.FixtureRequest) -> tuple[Cluster, Figure]:
    cluster = _cluster(request.param)
    # Small clusters get a real plan; at 270 brokers planning takes ~10 s, and the picture of the
    # cluster as it is (an empty plan) exercises the same drawing.
    after = (
        apply_reassignments(cluster, make_plan(cluster, SPECS).reassignments)
        if request.param <= PER_BROKER_UP_TO
        else cluster
    )
    fig = figure(build_report(cluster, after, SPECS))
    fig.canvas.draw()  # tick labels are laid out (and overlapping ones dropped) when drawn
    return cluster, fig


def _panels(fig: Figure) -> list[Axes]:
    # The six panels; gauges beside them are children of a panel, not figure axes.
    assert len(fig.axes) == 6
    return fig.axes


def _with_gid(fig: Figure, gid: str) -> list[Artist]:
    return fig.findobj(lambda artist: artist.get_gid() == gid)


def test_every_rack_is_named_under_every_panel(drawn: tuple[Cluster, Figure]) -> None:
    cluster, fig = drawn
    racks = sorted({b.rack for b in cluster.brokers})
    assert len(racks) >= 2
    for ax in _panels(fig):
        labels = [
            t.get_text() for t in [*ax.get_xticklabels(), *ax.get_xticklabels(minor=True)] if t.get_visible()
        ]
        named = {line for label in labels for line in label.splitlines() if line.startswith("rack ")}
        assert named == {f"rack {rack}" for rack in racks}, (ax.get_title(), labels)


def test_every_distribution_goal_has_one_band(drawn: tuple[Cluster, Figure]) -> None:
    _, fig = drawn
    per_broker = [s for s in SPECS if s.type.family is GoalFamily.DISTRIBUTION]
    for spec in per_broker:
        if spec.type is GoalType.TOPIC_REPLICA_DISTRIBUTION:
            continue
        artists = _with_gid(fig, f"band:{spec.label}")
        assert len(artists) == 1 and isinstance(artists[0], PolyCollection), spec.label
        assert len(artists[0].get_paths()) > 0
    # The per-topic goal has no band on a broker panel; the picture says so rather than leave it out silently.
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert any("TopicReplicaDistribution" in text and "not drawn" in text for text in texts)


def _ys(artist: Artist) -> set[float]:
    if isinstance(artist, Line2D):
        return {float(y) for y in np.asarray(artist.get_ydata())}
    assert isinstance(artist, LineCollection)
    return {float(y) for segment in artist.get_segments() for y in segment[:, 1]}


def test_every_capacity_limit_is_drawn_at_its_height(drawn: tuple[Cluster, Figure]) -> None:
    """At the goal's threshold (% of capacity) or replica limit, inside the y range of the axes it is
    drawn on: on the panel when near the bars, else on the gauge beside it."""
    _, fig = drawn
    for spec in SPECS:
        if spec.type.family is not GoalFamily.CAPACITY:
            continue
        artists = _with_gid(fig, f"limit:{spec.label}")
        assert len(artists) == 1, spec.label
        expected = (
            float(DEFAULT_MAX_REPLICAS_PER_BROKER)
            if spec.type is GoalType.REPLICA_CAPACITY
            else float(spec.threshold_percent)
        )
        ys = _ys(artists[0])
        assert max(ys) == pytest.approx(expected), spec.label
        axes = artists[0].axes
        assert axes is not None
        bottom, top = axes.get_ylim()
        assert bottom <= expected <= top, (spec.label, axes.get_ylim())


def _loaded_cluster() -> Cluster:
    """12 brokers with disks about 60 % full: the disk limit is near the bars and drawn on the panel."""
    return generate(
        SyntheticSpec(brokers=12, partitions=300, hot_brokers=1, empty_brokers=1, seed=3, disk_capacity=3e11)
    )


def test_a_limit_near_the_bars_is_drawn_across_them() -> None:
    cluster = _loaded_cluster()
    after = apply_reassignments(cluster, make_plan(cluster, default_goal_set()).reassignments)
    fig = figure(build_report(cluster, after, default_goal_set()))
    (limit,) = _with_gid(fig, "limit:DiskCapacity")
    assert limit.axes is fig.axes[0]  # the disk panel itself
    assert isinstance(limit, LineCollection)
    assert len(limit.get_segments()) == len(cluster.brokers)  # one dash over each broker's bars


def _rack_loads(snapshot: dict[str, Any], rack: str, resource: str) -> list[float]:
    loads = checker.broker_loads(snapshot)
    brokers = [b for b in snapshot["brokers"] if b["rack"] == rack]
    return [100.0 * loads[b["id"]][resource] / b["capacity"][resource] for b in brokers]


@pytest.mark.parametrize("brokers", [4, 40])
def test_up_to_the_threshold_each_broker_has_its_bars(brokers: int) -> None:
    cluster = _cluster(brokers)
    fig = figure(build_report(cluster, cluster, default_goal_set()))
    fig.canvas.draw()
    disk = fig.axes[0]
    ids = {t.get_text().rstrip("↓↑") for t in disk.get_xticklabels()}
    assert ids == {str(b.id) for b in cluster.brokers}
    bars = [p for p in disk.patches if p.get_facecolor()[:3] == pytest.approx(_rgb(BEFORE_COLOUR))]
    assert len(bars) == brokers


def _rgb(colour: str) -> tuple[float, ...]:
    return tuple(int(colour[i : i + 2], 16) / 255.0 for i in (1, 3, 5))


def test_past_the_threshold_each_rack_is_its_sorted_loads_and_the_picture_says_so() -> None:
    """At 270 brokers no bar per broker: per rack and panel one line before and one after, each the
    rack's brokers' loads from highest to lowest (so a reader sees the spread, the busiest and the
    idlest broker of each rack); the subtitle says it is drawn that way."""
    cluster = _cluster(270)
    assert len(cluster.brokers) > PER_BROKER_UP_TO
    snapshot = cluster_to_snapshot(cluster)
    fig = figure(build_report(cluster, cluster, default_goal_set()))
    racks = sorted({b.rack for b in cluster.brokers})
    for resource, column in RESOURCE_PANELS.items():
        ax = fig.axes[column]
        assert not ax.patches  # no bars
        for colour in (BEFORE_COLOUR, AFTER_COLOUR):
            lines = [line for line in ax.get_lines() if line.get_color() == colour]
            assert len(lines) == len(racks)
            for line, rack in zip(lines, racks, strict=True):
                expected = sorted(_rack_loads(snapshot, rack, resource), reverse=True)
                assert np.allclose(np.asarray(line.get_ydata()), expected, rtol=1e-9), (resource, rack)
    title = fig.get_suptitle()
    assert "270 brokers" in title and "sorted by load" in title


@pytest.mark.parametrize("brokers", sorted(SIZES))
def test_png_decodes_at_the_fixed_size(brokers: int) -> None:
    cluster = _cluster(brokers)
    png = png_bytes(figure(build_report(cluster, cluster, default_goal_set())))
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        assert image.size == (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))
        image.load()


def test_past_the_threshold_each_rack_counts_its_draining_and_failed_brokers_apart() -> None:
    cluster = _cluster(270)
    leaving = {cluster.brokers[0].id: BrokerState.DRAINING, cluster.brokers[1].id: BrokerState.FAILED}
    marked = replace(
        cluster, brokers=tuple(replace(b, state=leaving.get(b.id, b.state)) for b in cluster.brokers)
    )
    fig = figure(build_report(marked, marked, default_goal_set()))
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    for broker_id, state in leaving.items():
        rack = marked.broker(broker_id).rack
        (label,) = [text for text in labels if text.startswith(f"rack {rack}\n")]
        assert f"\n1 {state.value}" in label, label
