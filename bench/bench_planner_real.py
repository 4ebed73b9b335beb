"""Planner benchmark: clusters of real shape (issue 62), ``kafka_balancer_dev.real_shape``.

    .venv/bin/python bench/bench_planner_real.py [--sizes small,mid,base,xlarge]
        [--variants none,scale-out,decommission] [--profile N | --steps N]

``bench_planner.py``'s clusters have one topic per 200 partitions, equal racks and a random
placement. These have thousands of topics of 1 to 200 partitions with Zipf throughput and their
own retention, racks of unequal size, an RF 3 / RF 2 mix, hot brokers and a placement left by
history (early topics only on early brokers), and two generations of brokers at ``xlarge``.
Sizes: ``small`` (48 brokers, ~24,000 partitions, ~65,000 replicas), ``mid`` (base's brokers and
racks with a fifth of its topics, ~260,000 replicas), ``base`` (the issue's 240 brokers in racks of
70/70/50/50, ~1.3 M replicas), ``xlarge`` (360 brokers in 3 zones, ~2.8 M);
variants: as generated, a scale-out (new empty brokers) and a decommission (the oldest brokers
draining). ``mid`` takes minutes, ``base`` and ``xlarge`` far more: none is in the default sizes.

Per size and variant, in a fresh child process (so peak RSS is that cluster's alone), it prints a
JSON line: CPU and wall seconds, peak RSS, bytes moved ÷ the plan's lower bound
(``planner/bound.py``), bytes across racks with their bound and (moved + across) ÷ the rack-local
bound, topic × broker cells out of TopicReplicaDistribution's band before and after, the bands
missed with the planner's reason (each goal's detail), and the leaders' worst deviation. The goal
set is the full default one, as in ``bench_planner.py``. ``--profile N`` instead runs the plan
under cProfile in this process and prints the top N entries by cumulative and by own time;
``--steps N`` times each step of the band goals' shed and fill ladders instead.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import time
from queue import Empty
from typing import Any

from bench_planner import _topic_cells_out

VARIANTS = ("none", "scale-out", "decommission")


def run_one(size: str, variant: str, out: Any) -> None:
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.planner.optimizer import plan
    from kafka_balancer_dev.real_shape import generate, sized

    spec = sized(size, variant)
    started = time.process_time()
    cluster = generate(spec)
    generate_cpu = time.process_time() - started
    started, cpu_started = time.perf_counter(), time.process_time()
    result = plan(cluster, default_goal_set())
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    # Read before the cells are counted below, which build two more working models.
    peak_rss_mib = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    f = result.figures
    out.put(
        {
            "size": size,
            "variant": variant,
            "brokers": len(cluster.brokers),
            "racks": sorted({b.rack for b in cluster.brokers}),
            "topics": len({p.topic for p in cluster.partitions}),
            "partitions": len(cluster.partitions),
            "replicas": sum(len(p.replicas) for p in cluster.partitions),
            "generate_cpu_seconds": round(generate_cpu, 2),
            # CPU time is what a busy machine cannot inflate; wall time is what a user waits.
            "cpu_seconds": round(cpu_seconds, 2),
            "seconds": round(seconds, 2),
            "peak_rss_mib": peak_rss_mib,
            "bytes_moved": f.bytes_moved,
            "lower_bound": f.bytes_moved_lower_bound,
            "moved_over_bound": (
                round(f.bytes_moved / f.bytes_moved_lower_bound, 3) if f.bytes_moved_lower_bound else None
            ),
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
            "leaders_off": round(
                next(g.after.worst_deviation for g in result.goals if g.type == "LeaderDistribution"), 1
            ),
            "bands_missed": {
                g.label: {"off": round(g.after.worst_deviation, 1), "reason": g.after.detail}
                for g in result.goals
                if not g.after.satisfied
            },
        }
    )


def profile(size: str, variant: str, top: int) -> None:
    """The plan of one cluster under cProfile: the ``top`` entries by cumulative and by own time."""
    import cProfile
    import pstats

    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.planner.optimizer import plan
    from kafka_balancer_dev.real_shape import generate, sized

    cluster = generate(sized(size, variant))
    goals = default_goal_set()
    profiler = cProfile.Profile()
    profiler.runcall(plan, cluster, goals)
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def steps(size: str, variant: str, top: int) -> None:
    """The plan of one cluster with each step of the band goals' shed and fill ladders timed: the
    ``top`` (goal, step) pairs by CPU seconds, with how often each was tried and how often it
    changed something. Which rung a shed fails on is what a profile by function does not show."""
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.planner import ladder
    from kafka_balancer.planner.optimizer import plan
    from kafka_balancer_dev.real_shape import generate, sized

    timed: dict[tuple[str, str], list[float]] = {}

    def timer(name: str, step: Any) -> Any:
        def take(turn: Any) -> Any:
            started = time.process_time()
            outcome = step.take(turn)
            row = timed.setdefault((turn.goal.spec.label, f"{name}: {step.name}"), [0.0, 0, 0])
            row[0] += time.process_time() - started
            row[1] += 1
            row[2] += outcome is not None
            return outcome

        return ladder.Step(step.name, take)

    ladder.SHED_LADDER = tuple(timer("shed", step) for step in ladder.SHED_LADDER)
    ladder.FILL_LADDER = tuple(timer("fill", step) for step in ladder.FILL_LADDER)
    cluster = generate(sized(size, variant))
    started = time.process_time()
    plan(cluster, default_goal_set())
    print(f"plan: {time.process_time() - started:.1f} CPU s")
    for (goal, step), (cpu, tried, changed) in sorted(timed.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{goal:28s} {step:42s} {cpu:8.2f} CPU s  tried {tried:7d}  changed {changed:7d}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="small")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--profile", type=int, default=0, help="profile the first size and variant instead")
    parser.add_argument("--steps", type=int, default=0, help="time the ladders' steps of the first instead")
    args = parser.parse_args()
    sizes, variants = args.sizes.split(","), args.variants.split(",")
    if args.profile:
        profile(sizes[0], variants[0], args.profile)
        return
    if args.steps:
        steps(sizes[0], variants[0], args.steps)
        return
    ctx = multiprocessing.get_context("spawn")
    for size in sizes:
        for variant in variants:
            queue = ctx.Queue()
            child = ctx.Process(target=run_one, args=(size, variant, queue))
            child.start()
            while True:
                try:
                    print(json.dumps(queue.get(timeout=5)), flush=True)
                    break
                except Empty:
                    if not child.is_alive():
                        error = {"size": size, "variant": variant, "error": f"exit code {child.exitcode}"}
                        print(json.dumps(error), flush=True)
                        break
            child.join()


if __name__ == "__main__":
    main()
