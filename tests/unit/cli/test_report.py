"""``kafka-balancer report``: the picture, the HTML page and the table of a real plan.

The snapshot is a skewed synthetic cluster (two hot brokers, one empty); the plan comes from the
real planner through the CLI. Expected figures come from ``checker`` (an independent load model).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from kafka_balancer.cli import main
from kafka_balancer.formats.plan_file import parse_plan
from kafka_balancer.formats.report import report_document
from kafka_balancer.formats.snapshot import cluster_to_snapshot, parse_snapshot
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.report.build import build_report
from kafka_balancer.report.document import report_text
from kafka_balancer.report.png import AFTER_COLOUR, BEFORE_COLOUR, DPI, FIGSIZE, figure, png_bytes
from kafka_balancer_dev.synthetic import SyntheticSpec, generate
from tests.unit import checker

SPEC = SyntheticSpec(brokers=9, partitions=240, hot_brokers=2, empty_brokers=1, seed=7)
WIDTH, HEIGHT = int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI)


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run(*args: str) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Run(code, out.getvalue(), err.getvalue())


@dataclass(frozen=True)
class Case:
    dir: Path
    snapshot: dict[str, Any]
    plan: dict[str, Any]
    png: Path
    html: Path
    report: Run


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    d = tmp_path_factory.mktemp("report")
    snapshot = cluster_to_snapshot(generate(SPEC))
    (d / "snapshot.json").write_text(json.dumps(snapshot))
    (d / "goals.yaml").write_text("")  # no goal: the default set
    planned = run("plan", "--snapshot", str(d / "snapshot.json"), "--goals", str(d / "goals.yaml"),
                  "--output", str(d / "plan.json"))  # fmt: skip
    assert planned.code == 0, planned.err
    plan = json.loads((d / "plan.json").read_text())
    assert plan["partitions"], "a skewed cluster must need moves"
    common = ("report", "--snapshot", str(d / "snapshot.json"), "--plan", str(d / "plan.json"))
    report = run(*common, "--output", str(d / "report.png"))
    assert report.code == 0, report.err
    html = run(*common, "--goals", str(d / "goals.yaml"), "--output", str(d / "report.html"))
    assert html.code == 0, html.err
    return Case(d, snapshot, plan, d / "report.png", d / "report.html", report)


def _by_rack(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(snapshot["brokers"], key=lambda b: (b["rack"], b["id"]))


def _percent(snapshot: dict[str, Any], resource: str) -> list[float]:
    loads = checker.broker_loads(snapshot)
    return [100.0 * loads[b["id"]][resource] / b["capacity"][resource] for b in _by_rack(snapshot)]


def test_png_is_a_picture_of_the_fixed_size(case: Case) -> None:
    with Image.open(case.png) as image:
        assert image.format == "PNG"
        assert image.size == (WIDTH, HEIGHT)
        image.load()


def _bar_heights(pixels: np.ndarray, colour: str) -> list[int]:
    """Height in pixels of each bar of one exact colour, left to right (a bar: adjacent columns)."""
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    per_column = (pixels[:, :, :3] == rgb).all(axis=2).sum(axis=0)
    heights, current = [], 0
    for count in [*per_column.tolist(), 0]:
        if count:
            current = max(current, count)
        elif current:
            heights.append(current)
            current = 0
    return heights


def test_disk_bars_show_the_loads_before_and_after_the_plan(case: Case) -> None:
    """The disk panel's bars, measured in the PNG file, are proportional to the independently
    computed utilisation before and after: drawing the after bars from the before data fails."""
    cluster = parse_snapshot(case.snapshot)
    after = apply_reassignments(cluster, parse_plan(case.plan))
    fig = figure(build_report(cluster, after, default_goal_set()))
    # The file is exactly this figure, so the disk panel's pixel box is where it is drawn here.
    assert png_bytes(fig) == case.png.read_bytes()
    box = fig.axes[0].get_window_extent()
    with Image.open(case.png) as image:
        pixels = np.asarray(image.convert("RGB"))
    panel = pixels[HEIGHT - int(box.y1) : HEIGHT - int(box.y0), int(box.x0) : int(box.x1)]

    expected_before = _percent(case.snapshot, "disk")
    expected_after = _percent(checker.apply_plan(case.snapshot, case.plan), "disk")
    before = _bar_heights(panel, BEFORE_COLOUR)
    after_heights = _bar_heights(panel, AFTER_COLOUR)
    # The empty broker has no before bar; every other broker has both.
    assert len(before) == sum(v > 0 for v in expected_before) == len(expected_before) - 1
    assert len(after_heights) == len(expected_after)
    scale = max(before) / max(expected_before)  # pixels per percent, shared by both sets of bars
    for measured, expected in (
        (before, [v for v in expected_before if v > 0]),
        (after_heights, expected_after),
    ):
        assert np.allclose(np.array(measured) / scale, expected, atol=0.6), (measured, expected)
    # Skewed before, balanced after: the tallest before bar stands well above every after bar.
    assert max(before) > 1.3 * max(after_heights)


def _table(stdout: str) -> dict[int, list[str]]:
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("broker"))
    rows = {}
    for line in lines[header + 1 :]:
        if not re.match(r"\d+\s", line):
            break
        cells = line.split()
        rows[int(cells[0])] = cells
    return rows


def test_table_equals_independent_loads(case: Case) -> None:
    after_snapshot = checker.apply_plan(case.snapshot, case.plan)
    before, after = checker.broker_loads(case.snapshot), checker.broker_loads(after_snapshot)
    rows = _table(case.report.out)
    assert sorted(rows) == sorted(b["id"] for b in case.snapshot["brokers"])
    # Grouped by rack, in the order the picture draws them.
    assert list(rows) == [b["id"] for b in _by_rack(case.snapshot)]
    for b in case.snapshot["brokers"]:
        cells = rows[b["id"]]
        assert cells[1:3] == [b["rack"], "active"]
        for resource, cell in zip(checker.RESOURCES, cells[3:7], strict=True):
            shown = [float(v) for v in cell.split("→")]
            cap = b["capacity"][resource]
            expected = [100.0 * before[b["id"]][resource] / cap, 100.0 * after[b["id"]][resource] / cap]
            assert np.allclose(shown, expected, atol=0.05 + 1e-9), (b["id"], resource, cell, expected)
        assert cells[7] == f"{before[b['id']]['replicas']:.0f}→{after[b['id']]['replicas']:.0f}"
        assert cells[8] == f"{before[b['id']]['leaders']:.0f}→{after[b['id']]['leaders']:.0f}"
    moves = sum(
        len(set(p["replicas"]) - set(q["replicas"]))
        for p, q in zip(after_snapshot["partitions"], case.snapshot["partitions"], strict=True)
    )
    assert f"{len(case.plan['partitions'])} partition(s) changed, {moves} replica move(s)" in case.report.out
    assert "DiskDistribution: " in case.report.out and "outside the band before, 0 after" in case.report.out


def test_operator_text_report_equals_the_cli_table(case: Case) -> None:
    """The pool's ``report.txt`` (from the planner's report document) shows the same table as
    ``kafka-balancer report`` computes from the snapshot and the plan file."""
    cluster = parse_snapshot(case.snapshot)
    text = report_text(report_document(cluster, make_plan(cluster, default_goal_set())))
    assert _table(text) == _table(case.report.out)
    assert text.splitlines()[0] == case.report.out.splitlines()[0]  # the plan's figures
    assert "DiskDistribution: not satisfied before, satisfied after" in text


class _Page(HTMLParser):
    """The parts of the page a reader sees: headings, tables (rows of cell texts) and images, and
    every address the page would load or link."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.images: list[str] = []
        self.addresses: list[str] = []
        self.text: list[str] = []
        self._heading: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.addresses += [v or "" for k, v in attrs if k in {"src", "href", "srcset", "action", "data"}]
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        elif tag in {"h1", "h2"}:
            self._heading = []
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in {"h1", "h2"} and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None
        elif tag in {"td", "th"} and self._cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for part in (self._heading, self._cell):
            if part is not None:
                part.append(data)


def _table_headed(page: _Page, first: str) -> list[list[str]]:
    """The body rows of the table whose first header cell is ``first``."""
    (table,) = [t for t in page.tables if t[0][0] == first]
    return table[1:]


def test_html_page_is_self_contained_and_readable_alone(case: Case) -> None:
    page = _Page()
    text = case.html.read_text(encoding="utf-8")
    page.feed(text)
    # Nothing loaded from elsewhere: the picture is inlined and decodes at the picture's size.
    assert all(a.startswith("data:") for a in page.addresses), page.addresses
    assert "url(" not in text and "@import" not in text
    (image,) = page.images
    assert image.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(image.split(",", 1)[1]))) as picture:
        assert picture.size == (WIDTH, HEIGHT)
    assert page.headings[0] == "kafka-balancer plan report"
    words = " ".join("".join(page.text).split())
    brokers, partitions = len(case.snapshot["brokers"]), len(case.snapshot["partitions"])
    assert f"{brokers} broker(s) in 3 rack(s)" in words and f"{partitions} partition(s)" in words
    assert f"{len(case.plan['partitions'])} partition(s) changed" in words

    # A row per goal, in priority order, saying what the planner says of it before and after.
    cluster = parse_snapshot(case.snapshot)
    outcomes = make_plan(cluster, default_goal_set()).goals
    goals = _table_headed(page, "goal")
    assert [row[0] for row in goals] == [g.label for g in outcomes]
    for row, outcome in zip(goals, outcomes, strict=True):
        for cell, status in ((row[3], outcome.before), (row[4], outcome.after)):
            assert cell.startswith("satisfied" if status.satisfied else "not satisfied"), (row, status)
    assert any(row[3].startswith("not satisfied") for row in goals)  # the skew shows

    # The biggest moves: the partitions copying the most data, biggest first.
    moves = _table_headed(page, "partition")
    sizes = {f"{p['topic']}-{p['partition']}": p["load"]["disk"] for p in case.snapshot["partitions"]}
    old = {f"{p['topic']}-{p['partition']}": p["replicas"] for p in case.snapshot["partitions"]}
    copied = {
        f"{p['topic']}-{p['partition']}": sizes[f"{p['topic']}-{p['partition']}"]
        * len(set(p["replicas"]) - set(old[f"{p['topic']}-{p['partition']}"]))
        for p in case.plan["partitions"]
    }
    expected = sorted(copied, key=lambda name: -copied[name])[: len(moves)]
    assert len(moves) == min(10, len(copied))
    assert [row[0] for row in moves] == expected
    for row in moves:
        assert row[1] == ", ".join(str(b) for b in old[row[0]])

    # The per-broker table: a row per broker, the hot one among them.
    table = _table_headed(page, "broker")
    assert len(table) == brokers
    hot = max(case.snapshot["brokers"], key=lambda b: checker.broker_loads(case.snapshot)[b["id"]]["disk"])
    assert str(hot["id"]) in [row[0] for row in table]


BAD = [
    ("output suffix", {"output": "report.jpg"}, "--output"),
    ("missing snapshot", {"snapshot": "missing.json"}, "missing.json"),
    ("unknown partition", {"plan": [{"topic": "nope", "partition": 0, "replicas": [0, 1, 2]}]}, "nope-0"),
    ("unknown broker", {"plan": [{"topic": "topic-00000", "partition": 0, "replicas": [0, 1, 99]}]}, "99"),
    ("rf change", {"plan": [{"topic": "topic-00000", "partition": 0, "replicas": [0, 1]}]}, "replication"),
    ("plan not json", {"plan_text": "{nope"}, "not JSON"),
    ("plan not text", {"plan_bytes": b"\xff\xfe\x00"}, "UTF-8"),
    (
        "bad goals",
        {"goals": "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancerGoal\nspec: {type: Nope}\n"},
        "spec",
    ),
]


@pytest.mark.parametrize(("name", "change", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_exits_2_with_one_line_and_no_picture(
    case: Case, name: str, change: dict[str, Any], needle: str
) -> None:
    output = case.dir / change.get("output", f"{name}.png")
    output.write_bytes(b"stale")
    args = ["report", "--snapshot", str(case.dir / change.get("snapshot", "snapshot.json"))]
    plan = case.dir / f"{name}.plan.json"
    if "plan" in change:
        plan.write_text(json.dumps({"version": 1, "partitions": change["plan"]}))
    elif "plan_text" in change:
        plan.write_text(change["plan_text"])
    elif "plan_bytes" in change:
        plan.write_bytes(change["plan_bytes"])
    else:
        plan = case.dir / "plan.json"
    args += ["--plan", str(plan), "--output", str(output)]
    if "goals" in change:
        goals = case.dir / f"{name}.goals.yaml"
        goals.write_text(change["goals"])
        args += ["--goals", str(goals)]
    result = run(*args)
    assert result.code == 2, result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.err
    assert "Traceback" not in result.err and result.out == ""
    # A stale picture is removed rather than left to be taken for this plan's (suffix errors aside:
    # that file is not one the report writes).
    assert not output.exists() or name == "output suffix"
