"""``kafka-balancer report``: snapshot + plan (+ goals) → PNG or HTML picture, table on stdout."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from kafka_balancer.errors import InputError
from kafka_balancer.formats.goals_file import read_goals
from kafka_balancer.formats.plan_file import read_plan
from kafka_balancer.formats.snapshot import read_snapshot
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.model.reassign import apply_reassignments
from kafka_balancer.report.build import build_report
from kafka_balancer.report.html import render_html
from kafka_balancer.report.png import render_png
from kafka_balancer.report.table import goal_lines, text_table

SUFFIXES = (".png", ".html")


def run_report(snapshot: Path, plan: Path, goals: Path | None, output: Path) -> int:
    if output.suffix.lower() not in SUFFIXES:
        raise InputError(f"--output {output}: must end in .png or .html")
    # No output file on failure: an old picture must not be taken for this plan's.
    if output.is_file():
        output.unlink()
    cluster = read_snapshot(snapshot)
    specs = read_goals(goals) if goals is not None else default_goal_set()
    after = apply_reassignments(cluster, read_plan(plan))
    data = build_report(cluster, after, specs)
    png = render_png(data)
    content = png if output.suffix.lower() == ".png" else render_html(data, png).encode("utf-8")
    _write_atomically(output, content)
    _print(
        f"plan: {data.summary.line()}\n"
        + text_table(data.brokers)
        + "".join(f"{line}\n" for line in goal_lines(data.bands))
    )
    return 0


def _print(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader that stopped early (``| head``) is no error; point stdout at /dev/null so
        # that Python's flush at exit does not complain about the closed pipe again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _write_atomically(path: Path, content: bytes) -> None:
    """Via a temporary file and a rename, so a reader never sees half a picture."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {exc.filename or path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
