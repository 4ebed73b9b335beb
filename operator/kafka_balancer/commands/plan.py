"""``kafka-balancer plan``: snapshot + goals → Kafka reassignment JSON (+ report)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from kafka_balancer.errors import InputError
from kafka_balancer.formats.goals_file import read_goals
from kafka_balancer.formats.plan_file import plan_document, write_json_atomically
from kafka_balancer.formats.report import report_document
from kafka_balancer.formats.snapshot import read_snapshot
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.planner.plan import Plan


def run_plan(snapshot: Path, goals: Path, output: Path, report: Path | None) -> int:
    outputs = [p for p in (output, report) if p is not None]
    # No output file on failure: a stale plan from an earlier run must not be taken for this one.
    for path in outputs:
        if path.is_file():
            path.unlink()
    cluster = read_snapshot(snapshot)
    specs = read_goals(goals)
    plan = make_plan(cluster, specs)
    try:
        if report is not None:
            write_json_atomically(report, report_document(cluster, plan))
        write_json_atomically(output, plan_document(plan.reassignments))
    except OSError as exc:
        for path in outputs:
            with contextlib.suppress(OSError):
                path.unlink()
        raise InputError(f"cannot write {exc.filename or output}: {exc.strerror}") from None
    print(summary(plan), file=sys.stderr)
    return 0


def summary(plan: Plan) -> str:
    f = plan.figures
    unmet = [g.label for g in plan.goals if not g.after.satisfied]
    goals = "all goals satisfied" if not unmet else f"not satisfied: {', '.join(unmet)}"
    kept = ""
    if plan.led_by_demoted:
        shown = ", ".join(plan.led_by_demoted[:5]) + (", ..." if len(plan.led_by_demoted) > 5 else "")
        kept = (
            f"; {len(plan.led_by_demoted)} partition(s) keep a demoted leader "
            f"(every replica demoted): {shown}"
        )
    if plan.stranded:
        shown = ", ".join(plan.stranded[:5]) + (", ..." if len(plan.stranded) > 5 else "")
        kept += (
            f"; {len(plan.stranded)} partition(s) have no readable replica and stay as they are "
            f"(lost unless a failed broker or log dir returns): {shown}"
        )
    intra = f", {f.intra_broker_bytes:.4g} bytes between log dirs" if f.intra_broker_bytes else ""
    return (
        f"plan: {len(plan.reassignments)} partition(s) changed, {f.replica_moves} replica move(s), "
        f"{f.leader_changes} leader change(s), {f.bytes_moved:.4g} bytes moved "
        f"(lower bound {f.bytes_moved_lower_bound:.4g}), {f.cross_rack_bytes:.4g} across racks "
        f"(lower bound {f.cross_rack_lower_bound:.4g}){intra}; {goals}{kept}; {plan.seconds:.2f} s"
    )
