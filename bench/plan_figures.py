"""The planner's plans as figures, and two lists of them compared: what a change to the planner's
code did to the plans it changed.

    PYTHONPATH=operator:devtools .venv/bin/python bench/plan_figures.py > before.jsonl
    (change the planner)
    PYTHONPATH=operator:devtools .venv/bin/python bench/plan_figures.py > after.jsonl
    .venv/bin/python bench/plan_figures.py --compare before.jsonl after.jsonl

``plan_digests.py`` proves a plan unchanged; a change that does change plans must leave them no
worse in bytes or bands (issue 62). This plans the same clusters (``plan_digests.clusters()``,
``--only PREFIX`` as there) and prints one JSON line per cluster: the bytes moved and their bound,
the bytes across racks and theirs, the replica moves and leader changes, and each band missed
with its worst deviation (%); or the planner's refusal.

``--compare BEFORE AFTER`` prints, for every cluster whose figures differ, the bytes and the bytes
across racks after ÷ before and the bands missed before → after, then a summary: the geometric
means of both ratios over the clusters planned in both lists, and the clusters that moved more
bytes, more bytes across racks, or missed a band more (or a band more widely) than before. It
exits 1 when any cluster got worse in bands, else 0. Print both lists on one machine with the
same BLAS threads, as ``plan_digests.py`` says.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan_digests import clusters

if TYPE_CHECKING:
    from kafka_balancer.model.cluster import Cluster

# A band missed by this many percentage points more than before counts as missed more widely:
# less is the last digits of a deviation the figures round.
WIDER = 0.05


def figures(cluster: Cluster) -> dict[str, Any]:
    """The figures of the plan of ``cluster`` under the default goals, or the planner's refusal."""
    from kafka_balancer.errors import InfeasibleError
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.planner.optimizer import plan

    try:
        result = plan(cluster, default_goal_set())
    except InfeasibleError as refused:
        return {"refused": str(refused)}
    f = result.figures
    return {
        "bytes_moved": f.bytes_moved,
        "lower_bound": f.bytes_moved_lower_bound,
        "cross_rack_bytes": f.cross_rack_bytes,
        "cross_rack_lower_bound": f.cross_rack_lower_bound,
        "replica_moves": f.replica_moves,
        "leader_changes": f.leader_changes,
        "missed": {g.label: round(g.after.worst_deviation, 2) for g in result.goals if not g.after.satisfied},
    }


def read(path: Path) -> dict[str, dict[str, Any]]:
    """The figures of a list printed before, by cluster name."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row.pop("name"): row for row in rows}


def _ratio(after: float, before: float) -> float:
    """after ÷ before, 1 when both are 0 (no bytes either way)."""
    if before == 0:
        return 1.0 if after == 0 else math.inf
    return after / before


def _worse_bands(before: dict[str, float], after: dict[str, float]) -> list[str]:
    """The bands ``after`` misses that ``before`` met, or misses by more."""
    return [label for label, off in after.items() if label not in before or off > before[label] + WIDER]


def _missed(bands: dict[str, float]) -> str:
    return ", ".join(f"{label} {off:g} %" for label, off in sorted(bands.items())) or "none"


def compare(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> int:
    """Print what differs between two lists and the summary; 1 when a cluster got worse in
    bands, else 0."""
    moved: list[float] = []
    across: list[float] = []
    more_bytes: list[str] = []
    more_across: list[str] = []
    worse: list[str] = []
    for name in sorted(before.keys() & after.keys()):
        old, new = before[name], after[name]
        if old == new:
            moved.append(1.0)
            across.append(1.0)
            continue
        if "refused" in old or "refused" in new:
            print(f"{name}: refused before: {'refused' in old}, after: {'refused' in new}")
            continue
        ratio = _ratio(new["bytes_moved"], old["bytes_moved"])
        across_ratio = _ratio(new["cross_rack_bytes"], old["cross_rack_bytes"])
        moved.append(ratio)
        across.append(across_ratio)
        more_bytes += [name] if ratio > 1 else []
        more_across += [name] if across_ratio > 1 else []
        bands = _worse_bands(old["missed"], new["missed"])
        worse += [f"{name} ({', '.join(bands)})"] if bands else []
        print(
            f"{name}: bytes × {ratio:.4f}, across racks × {across_ratio:.4f}; "
            f"bands missed {_missed(old['missed'])} → {_missed(new['missed'])}"
        )
    for name in sorted(before.keys() ^ after.keys()):
        print(f"{name}: only in {'before' if name in before else 'after'}")
    finite = [r for r in moved if 0 < r < math.inf]
    finite_across = [r for r in across if 0 < r < math.inf]
    print(
        f"{len(moved)} clusters planned in both: bytes × {_geometric_mean(finite):.4f}, "
        f"across racks × {_geometric_mean(finite_across):.4f} (geometric means)"
    )
    listed = (("more bytes", more_bytes), ("more across racks", more_across), ("worse in bands", worse))
    for what, names in listed:
        print(f"{what}: {len(names)}" + (f" ({', '.join(sorted(names))})" if names else ""))
    return 1 if worse else 0


def _geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", default="", help="plan only the clusters whose name starts so")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(read(args.compare[0]), read(args.compare[1])))
    for name, build in clusters():
        if not name.startswith(args.only):
            continue
        started = time.process_time()
        print(json.dumps({"name": name, **figures(build())}), flush=True)
        print(f"{name}: {time.process_time() - started:.1f} CPU s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
