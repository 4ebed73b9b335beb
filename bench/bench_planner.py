"""Planner benchmark: seeded synthetic clusters of increasing size.

    .venv/bin/python bench/bench_planner.py [--sizes small,mid,large,xlarge] [--goals default|no-topic]

Per size it prints wall and CPU time, peak RSS of a fresh child process, bytes moved ÷ the plan's
lower bound (``planner/bound.py``: the disk, replica count and topic cell bands the plan met) and
÷ the disk bands' part alone (max(Σ disk above each active broker's DiskDistribution band + Σ disk
on draining brokers, Σ disk missing below each band), the bound before issue 16), the bytes moved
between brokers of different racks, the worst
deviation of every distribution goal before and after, and how many topic × broker cells are
outside TopicReplicaDistribution's band. The default goal set is the full default set, the one a
pool without goals gets. Each size runs in its own process so peak memory is that size's alone.
``xlarge`` (2.8 M replicas) is not in the default sizes: it takes minutes and most of a GiB just
to generate. Nor is ``mid-grown-rack``: mid's 200 brokers and 40 k partitions over 3 racks, then 40
new empty brokers in the first broker's rack, whose share of every partition (one replica in each
rack) no plan that keeps RackAware can change, so no band can be met there. Nor is ``mid-big-rack``:
mid with the brokers of its second rack (one in six) at twice the capacity of the others, so the
other racks shed a share of their load to it across racks. Nor is ``mid-few-partitions``: mid's
200 brokers with 1,000 partitions (15 replicas a broker), the heaviest of which carry more
network out than a broker's band is wide: the plan misses the network-out, cpu, topic and leader
bands, and the search tries every broker it cannot fix through its exchanges and compounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from queue import Empty
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kafka_balancer.model.cluster import Cluster
    from kafka_balancer.model.plan import Reassignment
    from kafka_balancer_dev.synthetic import SyntheticSpec

SIZES = {
    "small": {"brokers": 12, "partitions": 900, "racks": 3},
    "mid": {"brokers": 200, "partitions": 40_000, "racks": 6},
    "large": {"brokers": 270, "partitions": 430_000, "racks": 6},
    "xlarge": {"brokers": 400, "partitions": 930_000, "racks": 6},
    "mid-grown-rack": {"brokers": 200, "partitions": 40_000, "racks": 3, "grown_by": 40},
    "mid-big-rack": {"brokers": 200, "partitions": 40_000, "racks": 6, "big_rack": 2},
    "mid-few-partitions": {"brokers": 200, "partitions": 1_000, "racks": 6},
}


def synthetic_spec(name: str) -> SyntheticSpec:
    """The seeded cluster of a size; every benchmark that compares plans uses this one."""
    from kafka_balancer_dev.synthetic import SyntheticSpec

    size = SIZES[name]
    # Partition sizes chosen so that the cluster is about 40 % full on average.
    return SyntheticSpec.filled(
        size["brokers"],
        size["partitions"],
        racks=size["racks"],
        hot_brokers=max(1, size["brokers"] // 20),
        empty_brokers=max(1, size["brokers"] // 25),
        seed=7,
    )


def run_size(name: str, goal_set: str, out: Any) -> None:
    from kafka_balancer.goals.spec import GoalType, default_goal_set
    from kafka_balancer.planner.optimizer import plan
    from kafka_balancer_dev.synthetic import generate

    size = SIZES[name]
    spec = synthetic_spec(name)
    cluster = _big_rack(_grown(generate(spec), size.get("grown_by", 0)), size.get("big_rack", 1))
    goals = default_goal_set()
    if goal_set == "no-topic":
        goals = tuple(g for g in goals if g.type is not GoalType.TOPIC_REPLICA_DISTRIBUTION)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = plan(cluster, goals)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    # Read before the cells are counted below, which build two more working models.
    peak_rss_mib = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    f = result.figures
    bound = f.bytes_moved_lower_bound
    disk_bound = _disk_bound(cluster)
    out.put(
        {
            "size": name,
            **size,
            "replicas": size["partitions"] * spec.replication_factor,
            "seconds": round(seconds, 2),
            # CPU time is what a busy machine cannot inflate; wall time is what a user waits.
            "cpu_seconds": round(cpu_seconds, 2),
            "peak_rss_mib": peak_rss_mib,
            "bytes_moved": f.bytes_moved,
            "lower_bound": f.bytes_moved_lower_bound,
            "moved_over_bound": round(f.bytes_moved / bound, 3) if bound else None,
            "moved_over_disk_bound": round(f.bytes_moved / disk_bound, 3) if disk_bound else None,
            "cross_rack_bytes": f.cross_rack_bytes,
            "cross_rack_lower_bound": f.cross_rack_lower_bound,
            "rack_local_lower_bound": f.rack_local_lower_bound,
            "moved_and_across_over_rack_local_bound": (
                round((f.bytes_moved + f.cross_rack_bytes) / f.rack_local_lower_bound, 3)
                if f.rack_local_lower_bound
                else None
            ),
            "replica_moves": f.replica_moves,
            "leader_changes": f.leader_changes,
            "topic_cells_out_before": _topic_cells_out(cluster, ()),
            "topic_cells_out_after": _topic_cells_out(cluster, result.reassignments),
            "goals": {
                g.label: {
                    "before": round(g.before.worst_deviation, 1),
                    "after": round(g.after.worst_deviation, 1),
                    "satisfied": g.after.satisfied,
                }
                for g in result.goals
                if g.type.endswith("Distribution")
            },
        }
    )


def _grown(cluster: Cluster, brokers: int) -> Cluster:
    """``cluster`` with ``brokers`` new empty brokers in its first broker's rack, of its capacity."""
    from dataclasses import replace

    first, top = cluster.brokers[0], max(b.id for b in cluster.brokers)
    added = tuple(replace(first, id=top + 1 + i) for i in range(brokers))
    return replace(cluster, brokers=cluster.brokers + added)


def _big_rack(cluster: Cluster, factor: int) -> Cluster:
    """``cluster`` with the brokers of its second broker's rack at ``factor`` times the capacity."""
    from kafka_balancer_dev.synthetic import scaled

    if factor == 1:
        return cluster
    rack = cluster.brokers[1].rack
    return scaled(cluster, factor, lambda b: b.rack == rack)


def _disk_bound(cluster: Cluster) -> float:
    """The lower bound from DiskDistribution's band and the drains alone."""
    from kafka_balancer.goals.registry import build_goal
    from kafka_balancer.goals.spec import GoalSpec, GoalType
    from kafka_balancer.model.working import WorkingModel
    from kafka_balancer.planner.bound import bound_bands, bytes_moved_lower_bound

    state = WorkingModel(cluster)
    goal = build_goal(GoalSpec.default(GoalType.DISK_DISTRIBUTION), state)
    return bytes_moved_lower_bound(state, bound_bands([goal]))


def _topic_cells_out(cluster: Cluster, reassignments: Iterable[Reassignment]) -> int:
    """Topic × broker cells outside TopicReplicaDistribution's default band once the
    reassignments are applied (the band depends only on topic sizes and brokers' shares)."""
    from dataclasses import replace

    from kafka_balancer.goals.base import EPSILON
    from kafka_balancer.goals.spec import GoalSpec, GoalType
    from kafka_balancer.goals.topic import TopicReplicaDistributionGoal
    from kafka_balancer.model.working import WorkingModel

    new = {(r.topic, r.partition): r.replicas for r in reassignments}
    parts = tuple(
        replace(p, replicas=new[(p.topic, p.partition)], leader=new[(p.topic, p.partition)][0])
        if (p.topic, p.partition) in new
        else p
        for p in cluster.partitions
    )
    state = WorkingModel(replace(cluster, partitions=parts))
    goal = TopicReplicaDistributionGoal(GoalSpec.default(GoalType.TOPIC_REPLICA_DISTRIBUTION), state)
    return int((goal.contract_cells(state) > EPSILON).sum())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="small,mid,large")
    parser.add_argument("--goals", choices=["default", "no-topic"], default="default")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    for name in args.sizes.split(","):
        queue = ctx.Queue()
        child = ctx.Process(target=run_size, args=(name, args.goals, queue))
        child.start()
        while True:
            try:
                print(json.dumps(queue.get(timeout=5)), flush=True)
                break
            except Empty:
                if not child.is_alive():
                    print(json.dumps({"size": name, "error": f"exit code {child.exitcode}"}), flush=True)
                    break
        child.join()


if __name__ == "__main__":
    main()
