"""The planner's plans as digests: proof that a change to the planner's code left every plan as it was.

    PYTHONPATH=operator:devtools .venv/bin/python bench/plan_digests.py > before.txt
    (change the planner)
    PYTHONPATH=operator:devtools .venv/bin/python bench/plan_digests.py --check before.txt

It plans a fixed list of clusters with the code it imports and prints one line per cluster: its
name and the sha256 of what the planner answered, serialized canonically; then one line
``overall`` with the sha256 of those lines. What is hashed: the plan file
(``formats/plan_file.py``: every reassignment in the plan's order, its replicas, the leader first,
and its log dirs), the plan's figures (moves, leader changes, bytes moved and their bounds) and
every goal's status before and after, the brokers' loads after, the partitions led by demoted
brokers and those stranded (floats by ``repr``, so the last bit counts); or, for a cluster no
plan can be made for, the planner's refusal. Only the plan's wall time is left out.

The clusters: ``bench_planner.py``'s sizes small, mid, large (about a minute) and its three mid
variants; ``bench_planner_shapes.py``'s shapes × changes, ``--small`` shapes × changes and
``--edges`` at seed 11, and ``--random`` at seeds 1 to 10: 68 clusters, about 6 CPU minutes
(half of them mid-big-rack and large).
``--only PREFIX`` plans only the clusters whose name starts with it (e.g. ``shapes/``).

``--check FILE`` compares with a list printed before: it names every cluster whose digest differs
(or that is missing) and exits 1; it exits 0 when every plan is the same.

Print both lists on one machine with the same BLAS threads (``OPENBLAS_NUM_THREADS``, unset for
both): a dot product (``plan.diff``'s bytes moved, ``prune``'s bytes saved) sums in another order
with another number of threads, and at large, mid-grown-rack and mid-big-rack the digests of one
code with one thread and with two differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench_planner import SIZES, _big_rack, _grown, synthetic_spec
from bench_planner_shapes import CHANGES, EDGES, SHAPES, SMALL, drawn, edge, shaped

if TYPE_CHECKING:
    from kafka_balancer.model.cluster import Cluster

BENCH_SIZES = ("small", "mid", "large", "mid-grown-rack", "mid-big-rack", "mid-few-partitions")
SEED = 11
RANDOM_SEEDS = range(1, 11)


def clusters() -> Iterator[tuple[str, Callable[[], Cluster]]]:
    """(name, how to build it) of every cluster planned, in the order printed."""
    for name in BENCH_SIZES:
        yield f"sizes/{name}", partial(_sized, name)
    for kind, shapes in (("shapes", SHAPES), ("small", SMALL)):
        for shape in shapes:
            for change in CHANGES:
                yield (
                    f"{kind}/{'-'.join(map(str, shape))}/{change}/{SEED}",
                    partial(shaped, shape, change, SEED),
                )
    for name in EDGES:
        yield f"edges/{name}/{SEED}", partial(edge, name, SEED)
    for seed in RANDOM_SEEDS:
        shape, change, rest = drawn(seed)
        yield f"random/{seed}", partial(shaped, shape, change, seed, rest)


def _sized(name: str) -> Cluster:
    """``bench_planner.py``'s cluster of size ``name``."""
    from kafka_balancer_dev.synthetic import generate

    size = SIZES[name]
    grown = _grown(generate(synthetic_spec(name)), size.get("grown_by", 0))
    return _big_rack(grown, size.get("big_rack", 1))


def digest(cluster: Cluster) -> str:
    """The sha256 of the plan of ``cluster`` under the default goals, or of the planner's refusal."""
    from kafka_balancer.errors import InfeasibleError
    from kafka_balancer.formats.plan_file import plan_document
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.planner.optimizer import plan

    answer: Any
    try:
        result = plan(cluster, default_goal_set())
    except InfeasibleError as refused:
        answer = {"refused": str(refused)}
    else:
        answer = {
            "plan": plan_document(result.reassignments),
            "figures": asdict(result.figures),
            "goals": [asdict(g) for g in result.goals],
            "brokers_after": [asdict(b) for b in result.brokers_after],
            "led_by_demoted": result.led_by_demoted,
            "stranded": result.stranded,
        }
    text = json.dumps(answer, sort_keys=True, separators=(",", ":"), default=_exact)
    return hashlib.sha256(text.encode()).hexdigest()


def _exact(value: Any) -> Any:
    """numpy scalars and arrays as Python values; every float keeps its last bit through json."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot serialize {type(value).__name__}")


def read(path: Path) -> dict[str, str]:
    """The digests of a list printed before, by cluster name."""
    lines = (line.split() for line in path.read_text(encoding="utf-8").splitlines())
    return {fields[0]: fields[1] for fields in lines if len(fields) == 2}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", type=Path, help="compare with the digests in this file")
    parser.add_argument("--only", default="", help="plan only the clusters whose name starts so")
    args = parser.parse_args()
    recorded = read(args.check) if args.check else {}
    overall = hashlib.sha256()
    differ: list[str] = []
    for name, build in clusters():
        if not name.startswith(args.only):
            continue
        started = time.process_time()
        sha = digest(build())
        line = f"{name} {sha}"
        overall.update(f"{line}\n".encode())
        if args.check and recorded.get(name) != sha:
            differ.append(name)
        print(line, flush=True)
        print(f"{name}: {time.process_time() - started:.1f} CPU s", file=sys.stderr, flush=True)
    print(f"overall {overall.hexdigest()}", flush=True)
    if differ:
        print(f"{len(differ)} plans differ: {', '.join(differ)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
