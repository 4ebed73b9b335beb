"""Planner benchmark: clusters of other shapes than ``bench_planner.py``'s sizes.

    .venv/bin/python bench/bench_planner_shapes.py [--seeds 11,12]

``bench_planner.py`` measures time and memory on a few large clusters, all of one seed and shape,
which the planner's choices were tuned on. This one asks whether those choices hold elsewhere:
4 shapes (30 to 60 brokers, 3 to 6 racks, replication factor 2 or 3, disks 30 to 50 % full),
each as generated and with 4 changes a user makes (a broker more in every rack, every fifth broker
at twice the capacity, two brokers draining, the two last brokers warming up at 30 %), per seed.

Per cluster it prints a JSON line: CPU seconds, the bands missed (with the worst deviation),
how many reassignments the planned state replans to, bytes moved ÷ the plan's lower bound,
(bytes moved + bytes across racks) ÷ the rack-local bound, and the leaders' worst deviation. A
plan that keeps replicas in their racks moves more bytes than the first bound allows where the
racks are unevenly loaded (each byte kept in its rack costs one byte moved, ``planner/bound.py``
fact 6), so the second figure is the one such a plan is judged by. Then a summary line: the
medians and the worst of both, and the leaders' worst deviation where every band is met.

``--edges`` plans instead clusters at the edges of what the planner was built for, one per name
in ``EDGES`` and seed: one rack, two racks at replication factor 3, uneven racks, replication
factors 1 and 4 and a mix, excluded topics, a new rack (at once or warming up), a whole rack
draining, a failed broker, and a few large partitions per broker (whose network and leader bands
no plan can meet).

``--small`` plans instead the 4 shapes of ``SMALL`` (6 to 12 brokers, 2 to 4 racks), with the same
changes, per seed: a rack there is a broker or three, and one replica more or less across racks
is a large share of what a plan copies. A drain no plan can make (no broker may take a replica of
the draining one) prints the planner's refusal instead of a row.

``--random`` plans instead one cluster drawn at random per seed (``drawn``): 9 to 200 brokers, 5
to 800 replicas a broker, 1 to 8 racks, replication factor 1 to 4, one topic to one per 20
partitions, hot and empty brokers or none, and one of the changes. It is the nearest this
benchmark comes to the clusters the planner will meet and was not tuned on. A cluster no plan
can make (a partition larger than any broker may hold, a drain with nowhere to go) prints the
planner's refusal instead of a row.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_balancer.model.cluster import Cluster

# brokers, partitions, racks, replication factor, how full the disks are on average
SHAPES = ((40, 3000, 4, 3, 0.35), (60, 5000, 3, 3, 0.5), (30, 2500, 5, 2, 0.3), (50, 4000, 6, 3, 0.45))
CHANGES = ("none", "grown", "hetero", "drain", "warm")
SMALL = ((6, 300, 3, 2, 0.4), (9, 600, 3, 3, 0.4), (12, 800, 4, 2, 0.35), (8, 400, 2, 2, 0.45))


@dataclass(frozen=True, slots=True)
class Outcome:
    brokers: int
    partitions: int
    racks: int
    replication_factor: int
    fill: float
    change: str
    seed: int
    cpu_seconds: float
    bands_missed: dict[str, float]
    replans_to: int
    moved_over_bound: float
    moved_and_across_over_rack_local_bound: float
    cross_rack_bytes: float
    cross_rack_lower_bound: float
    # LeaderDistribution's worst deviation after the plan, % of the mean.
    leaders_off: float


def changed(cluster: Cluster, change: str, seed: int) -> Cluster:
    from kafka_balancer.model.cluster import BrokerState
    from kafka_balancer_dev.synthetic import scaled

    brokers = list(cluster.brokers)
    ids = [b.id for b in brokers]
    if change == "grown":
        top = max(ids)
        racks = sorted({b.rack for b in brokers})
        model = {r: next(b for b in brokers if b.rack == r) for r in racks}
        brokers += [replace(model[r], id=top + 1 + i) for i, r in enumerate(racks)]
    elif change == "hetero":
        brokers = list(scaled(cluster, 2.0, lambda b: b.id % 5 == 0).brokers)
    elif change == "drain":
        leaving = {ids[seed % len(ids)], ids[(seed * 7) % len(ids)]}
        brokers = [replace(b, state=BrokerState.DRAINING) if b.id in leaving else b for b in brokers]
    elif change == "warm":
        brokers = [replace(b, warm_up_share=0.3) if b.id in ids[-2:] else b for b in brokers]
    return replace(cluster, brokers=tuple(brokers))


def shaped(
    shape: tuple[int, int, int, int, float], change: str, seed: int, drawn: dict[str, float] | None = None
) -> Cluster:
    """The cluster of one shape, change and seed; ``drawn``: the generator's other fields (topics,
    hot and empty brokers), else one hot broker in 20 and one empty in 25."""
    from kafka_balancer_dev.synthetic import SyntheticSpec, generate

    brokers, partitions, racks, rf, fill = shape
    fields = drawn or {"hot_brokers": max(1, brokers // 20), "empty_brokers": max(1, brokers // 25)}
    spec = SyntheticSpec.filled(
        brokers, partitions, fill=fill, racks=racks, replication_factor=rf, seed=seed, **fields
    )
    return changed(generate(spec), change, seed)


# name: the shape it starts from, and what is changed
EDGES: dict[str, tuple[tuple[int, int, int, int, float], str]] = {
    "one-rack": ((24, 2000, 1, 3, 0.4), "none"),
    "two-racks-rf3": ((24, 2000, 2, 3, 0.4), "none"),
    "uneven-racks": ((31, 2500, 4, 3, 0.4), "none"),
    "rf1": ((20, 1500, 3, 1, 0.4), "none"),
    "rf4": ((30, 2000, 3, 4, 0.4), "none"),
    "mixed-rf": ((30, 2000, 3, 3, 0.4), "odd topics at replication factor 2"),
    "excluded-topics": ((30, 2000, 3, 3, 0.4), "every seventh topic excluded"),
    "new-rack": ((30, 2000, 3, 3, 0.4), "4 brokers in a new rack"),
    "new-rack-warming": ((30, 2000, 3, 3, 0.4), "4 brokers in a new rack, warming up at 50 %"),
    "rack-draining": ((32, 2500, 4, 3, 0.4), "every broker of the last rack draining"),
    "failed": ((30, 2000, 3, 3, 0.4), "broker 7 failed"),
    "few-partitions": ((20, 200, 4, 3, 0.5), "none"),
}


def edge(name: str, seed: int) -> Cluster:
    """The cluster of one edge case and seed."""
    from kafka_balancer.model.cluster import BrokerState

    shape, _ = EDGES[name]
    cluster = shaped(shape, "none", seed)
    brokers, parts = list(cluster.brokers), list(cluster.partitions)
    if name == "mixed-rf":
        parts = [replace(p, replicas=p.replicas[:2]) if int(p.topic[-5:]) % 2 else p for p in parts]
        parts = [p if p.leader in p.replicas else replace(p, leader=p.replicas[0]) for p in parts]
    elif name == "excluded-topics":
        parts = [replace(p, movable=False) if int(p.topic[-5:]) % 7 == 0 else p for p in parts]
    elif name.startswith("new-rack"):
        share = 0.5 if name == "new-rack-warming" else 1.0
        top = len(brokers)
        brokers += [replace(brokers[0], id=top + i, rack="new", warm_up_share=share) for i in range(4)]
    elif name == "rack-draining":
        last = brokers[-1].rack
        brokers = [replace(b, state=BrokerState.DRAINING) if b.rack == last else b for b in brokers]
    elif name == "failed":
        brokers = [replace(b, state=BrokerState.FAILED) if b.id == 7 else b for b in brokers]
    return replace(cluster, brokers=tuple(brokers), partitions=tuple(parts))


def drawn(seed: int) -> tuple[tuple[int, int, int, int, float], str, dict[str, float]]:
    """What ``--random`` plans for ``seed``: a shape, a change and the rest of the generator's
    fields (``shaped`` builds the cluster)."""
    rng = random.Random(1000 + seed)
    brokers = rng.choice([9, 15, 24, 40, 64, 100, 150, 200])
    per_broker = rng.choice([5, 15, 40, 100, 300, 800])
    rf = min(rng.choice([1, 2, 3, 3, 3, 4]), brokers)
    racks = rng.choice([1, 2, 3, 3, 4, 5, 6, 8])
    partitions = max(10, brokers * per_broker // rf)
    topics = rng.choice([0, 0, 1, 3, max(1, partitions // 20)])
    fill = rng.choice([0.2, 0.35, 0.5, 0.65])
    hot = rng.choice([0, 1, max(1, brokers // 10)])
    hot_weight = rng.choice([2.0, 3.0, 6.0])
    empty = rng.choice([0, 1, max(1, brokers // 8)])
    change = rng.choice(CHANGES)
    rest = {"topics": topics, "hot_brokers": hot, "hot_weight": hot_weight, "empty_brokers": empty}
    return (brokers, partitions, racks, rf, fill), change, rest


def run(shape: tuple[int, int, int, int, float], change: str, seed: int) -> Outcome:
    return judged(shape, change, seed, shaped(shape, change, seed))


def judged(shape: tuple[int, int, int, int, float], change: str, seed: int, cluster: Cluster) -> Outcome:
    """The plan of ``cluster`` (the one of ``shape``, ``change`` and ``seed``), measured."""
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.model.reassign import apply_reassignments
    from kafka_balancer.planner.optimizer import plan

    brokers, partitions, racks, rf, fill = shape
    goals = default_goal_set()
    cpu_started = time.process_time()
    result = plan(cluster, goals)
    cpu_seconds = time.process_time() - cpu_started
    again = plan(apply_reassignments(cluster, result.reassignments), goals)
    f = result.figures
    return Outcome(
        brokers=brokers,
        partitions=partitions,
        racks=racks,
        replication_factor=rf,
        fill=fill,
        change=change,
        seed=seed,
        cpu_seconds=round(cpu_seconds, 2),
        bands_missed={
            g.label: round(g.after.worst_deviation, 1) for g in result.goals if not g.after.satisfied
        },
        replans_to=len(again.reassignments),
        moved_over_bound=round(f.bytes_moved / f.bytes_moved_lower_bound, 3),
        moved_and_across_over_rack_local_bound=round(
            (f.bytes_moved + f.cross_rack_bytes) / f.rack_local_lower_bound, 3
        ),
        cross_rack_bytes=f.cross_rack_bytes,
        cross_rack_lower_bound=f.cross_rack_lower_bound,
        leaders_off=round(
            next(g.after.worst_deviation for g in result.goals if g.type == "LeaderDistribution"), 2
        ),
    )


def _clusters(
    args: argparse.Namespace, seeds: list[int]
) -> list[tuple[int, tuple[int, int, int, int, float], str, dict[str, float]]]:
    """(seed, shape, change, the generator's other fields drawn) of each cluster to plan."""
    if args.random:
        return [(seed, *drawn(seed)) for seed in seeds]
    if args.edges:
        return [(seed, EDGES[name][0], name, {}) for name, seed in itertools.product(EDGES, seeds)]
    return [
        (seed, shape, change, {})
        for shape, change, seed in itertools.product(SMALL if args.small else SHAPES, CHANGES, seeds)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="11,12")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--edges", action="store_true", help="plan the clusters of EDGES instead")
    kind.add_argument("--small", action="store_true", help="plan the clusters of SMALL instead")
    kind.add_argument("--random", action="store_true", help="plan one cluster drawn per seed instead")
    args = parser.parse_args()
    from kafka_balancer.errors import InfeasibleError

    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    for seed, shape, change, rest in _clusters(args, seeds):
        try:
            if args.random:
                row = judged(shape, change, seed, shaped(shape, change, seed, rest))
            elif args.edges:
                row = judged(shape, change, seed, edge(change, seed))
            else:
                row = run(shape, change, seed)
        except InfeasibleError as refused:
            refusal = {"shape": shape, "change": change, "seed": seed, **rest, "refused": str(refused)}
            print(json.dumps(refusal), flush=True)
            continue
        rows.append(row)
        print(json.dumps({**asdict(row), **rest}), flush=True)
    if not rows:
        return
    moved = [r.moved_over_bound for r in rows]
    local = [r.moved_and_across_over_rack_local_bound for r in rows]
    print(
        json.dumps(
            {
                "clusters": len(rows),
                "with_bands_missed": sum(bool(r.bands_missed) for r in rows),
                "replanning_to_moves": sum(r.replans_to != 0 for r in rows),
                "moved_over_bound_median": round(statistics.median(moved), 3),
                "moved_over_bound_max": max(moved),
                "moved_and_across_over_rack_local_bound_median": round(statistics.median(local), 3),
                "moved_and_across_over_rack_local_bound_max": max(local),
                "over_1_10_by_both": sum(min(m, r) > 1.10 for m, r in zip(moved, local, strict=True)),
                "leaders_off_max_where_every_band_met": max(
                    (r.leaders_off for r in rows if not r.bands_missed), default=None
                ),
                "cpu_seconds": round(sum(r.cpu_seconds for r in rows), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
