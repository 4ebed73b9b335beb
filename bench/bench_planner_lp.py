"""Planner benchmark: bytes moved against a linear-programming lower bound, on the shapes of
``bench_planner_shapes.py``.

    .venv/bin/python bench/bench_planner_lp.py [--seeds 11,12] [--shapes 0,1,2,3] [--changes hetero,drain]
    .venv/bin/python bench/bench_planner_lp.py --edges rf4,new-rack [--seeds 11,12]

``planner/bound.py`` counts, broker by broker, the cheapest replicas each band forces to move; it
never asks whether those replicas can all be the ones that move. When it says the plan moves
1.18 × what is needed, is the plan wasteful or the bound loose? This answers with the least
bytes any fractional plan moves under the same bands (the plan's ``bound_bands``): one variable
x[p, b] in 0..1 per movable partition and active broker (a replica of p on b), each partition
its replication factor in replicas, no rack over its limit when RackAware holds, each broker's
disk and replica count and each topic cell within their bands, minimising Σ disk[p] x[p, b] over
the brokers that did not hold p. Every plan that meets those bands is one of its points, so the
optimum is a lower bound on the plan's bytes; what it leaves out (network, cpu, leaders, bans)
only lowers it further, which keeps it valid. Of docs/design.md's drain contract (a drained replica
goes to a broker of its own rack when one can take it) it keeps what the plan kept: each
partition holds at least as many replicas in a rack as it had on that rack's draining brokers,
where the plan does so; every such plan is still a point. A second LP
adds the bytes across racks and bounds moved + across, as the rack-local bound does. HiGHS solves
both (scipy, a dev dependency).

Per cluster it prints a JSON line: bytes moved and across racks, the plan's bounds, the LP
bounds, the ratios, and ``judged``: min(moved ÷ the larger bytes-moved bound, (moved + across) ÷
the larger rack-local bound). Then the medians and how many shapes are judged above 1.10.
``--edges`` takes the named clusters of ``bench_planner_shapes.EDGES`` instead.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sparse
from scipy.optimize import linprog

from bench_planner_shapes import CHANGES, EDGES, SHAPES, edge, shaped

if TYPE_CHECKING:
    from kafka_balancer.model.cluster import Cluster
    from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
    from kafka_balancer.model.working import WorkingModel
    from kafka_balancer.planner.bound import BoundBands

# Bytes are solved in GB: disk rows in bytes beside count rows in units left HiGHS stalling for
# minutes on a 100,000-variable rack that solves in a second once scaled.
GB = 1e9


@dataclass(frozen=True, slots=True)
class Outcome:
    brokers: int
    racks: int
    change: str
    seed: int
    moved_gb: float
    bound_gb: float
    lp_bound_gb: float
    moved_over_bound: float
    moved_over_lp_bound: float
    across_gb: float
    rack_local_bound_gb: float
    lp_rack_local_bound_gb: float
    moved_and_across_over_lp_rack_local_bound: float
    # min(moved ÷ the larger bytes-moved bound, (moved + across) ÷ the larger rack-local bound).
    judged: float
    lp_seconds: float


def drained_home(state: WorkingModel, after: WorkingModel, draining: BoolArray) -> IntArray:
    """``[P, racks]``: per partition and rack, how many of its replicas sat on ``draining``
    brokers of that rack, where the plan (``after``) kept at least as many in that rack; 0
    elsewhere.

    docs/design.md's drain contract sends a drained replica to a broker of its own rack when one can
    take it; the plan's bytes are judged against the plans that do the same where it did."""
    rows = state.original_replicas
    held = rows >= 0
    on = np.where(held, rows, 0)
    drained_from = held & draining[on]
    n_r = len(state.rack_names)
    drained = np.zeros((len(state.rf), n_r), dtype=np.int64)
    p_idx, s_idx = np.nonzero(drained_from)
    np.add.at(drained, (p_idx, state.rack[on[p_idx, s_idx]]), 1)
    now = np.zeros_like(drained)
    placed = after.replicas >= 0
    p_idx, s_idx = np.nonzero(placed)
    np.add.at(now, (p_idx, after.rack[after.replicas[p_idx, s_idx]]), 1)
    return np.where(now >= drained, drained, 0)


def lp_bound(
    state: WorkingModel, bands: BoundBands, across: bool, home: IntArray | None = None
) -> tuple[float, float]:
    """The least bytes of a fractional plan from ``state``'s original assignment within ``bands``
    (see the module docstring), with ``across`` the bytes it copies between racks added (per
    partition and rack, the replicas it gains there beyond those it held there, at its size: the
    plan's ``cross_rack_bytes``), and with ``home`` (``drained_home``) at least that many
    replicas of each partition in each rack; and the seconds the solve took."""
    active = np.nonzero(state.active)[0]
    parts = np.nonzero(state.movable)[0]
    n_p, n_b = len(parts), len(active)
    n = n_p * n_b
    held = np.zeros((len(state.rf), state.n_brokers), dtype=bool)
    rows = state.original_replicas
    p_idx, s_idx = np.nonzero(rows >= 0)
    held[p_idx, rows[p_idx, s_idx]] = True
    disk = state.disk[parts] / GB
    was = held[np.ix_(parts, active)]
    cost = (disk[:, None] * ~was).ravel()
    var_part = np.repeat(np.arange(n_p), n_b)
    var_broker = np.tile(np.arange(n_b), n_p)

    def summed(row_of_var: np.ndarray, weight: FloatArray, n_rows: int) -> sparse.csr_matrix:
        return sparse.csr_matrix((weight, (row_of_var, np.arange(n))), shape=(n_rows, n))

    # The replicas of partitions the plan may not move stay where they are: constants per row.
    fixed = np.setdiff1d(np.arange(len(state.rf)), parts)
    fixed_held = held[np.ix_(fixed, active)]
    ub: list[sparse.csr_matrix] = []
    ub_rhs: list[FloatArray] = []

    def within(matrix: sparse.csr_matrix, constant: FloatArray, lo: FloatArray, hi: FloatArray) -> None:
        upper = np.isfinite(hi)
        ub.extend([matrix[upper], -matrix])
        ub_rhs.extend([(hi - constant)[upper], constant - lo])

    if bands.disk is not None:
        lo, hi = bands.disk
        constant = (state.disk[fixed, None] / GB * fixed_held).sum(axis=0)
        within(summed(var_broker, np.repeat(disk, n_b), n_b), constant, lo[active] / GB, hi[active] / GB)
    if bands.replicas is not None:
        lo, hi = bands.replicas
        counted = fixed_held.sum(axis=0).astype(np.float64)
        within(summed(var_broker, np.ones(n), n_b), counted, lo[active], hi[active])
    if bands.topic is not None:
        lo, hi = bands.topic
        cells = np.zeros((state.n_topics, n_b))
        np.add.at(cells, state.topic[fixed], fixed_held)
        within(
            summed(state.topic[parts][var_part] * n_b + var_broker, np.ones(n), state.n_topics * n_b),
            cells.ravel(),
            lo[:, active].ravel(),
            hi[:, active].ravel(),
        )
    racks = state.rack[active]
    in_rack = []
    for r in np.unique(racks).tolist():
        inside = racks[var_broker] == r
        in_rack.append(summed(np.where(inside, var_part, 0), inside.astype(np.float64), n_p))
        if bands.rack_aware:
            ub.append(in_rack[-1])
            ub_rhs.append(state.rack_limit[parts].astype(np.float64))
        if home is not None:
            ub.append(-in_rack[-1])
            ub_rhs.append(-home[parts, r].astype(np.float64))
    a_ub, a_eq = sparse.vstack(ub, format="csr"), summed(var_part, np.ones(n), n_p)
    if across:
        # y[p, r] ≥ the replicas p holds in rack r beyond those it held there, at p's size.
        n_r = len(in_rack)
        originally = held[parts]
        y = sparse.identity(n_p * n_r, format="csr")
        gains = [sparse.hstack([matrix, -y[k::n_r]], format="csr") for k, matrix in enumerate(in_rack)]
        a_ub = sparse.vstack(
            [sparse.hstack([a_ub, sparse.csr_matrix((a_ub.shape[0], n_p * n_r))], format="csr"), *gains],
            format="csr",
        )
        # Held there before on any broker of the rack, a draining one too.
        ub_rhs.extend(
            originally[:, state.rack == r].sum(axis=1).astype(np.float64) for r in np.unique(racks).tolist()
        )
        a_eq = sparse.hstack([a_eq, sparse.csr_matrix((n_p, n_p * n_r))], format="csr")
        cost = np.concatenate([cost, np.repeat(disk, n_r)])
    started = time.perf_counter()
    result = linprog(
        cost,
        # scipy-stubs type the matrices as dense arrays; HiGHS takes them sparse (a dense
        # 300,000-column matrix would not fit in memory).
        A_ub=cast("Any", a_ub),
        b_ub=np.concatenate(ub_rhs),
        A_eq=cast("Any", a_eq),
        b_eq=state.rf[parts].astype(np.float64),
        bounds=(0.0, 1.0),
        method="highs-ipm",
    )
    if result.status != 0 or result.fun is None:
        raise RuntimeError(f"the LP did not solve: {result.message}")
    return float(result.fun) * GB, time.perf_counter() - started


def run(shape: tuple[int, int, int, int, float], change: str, seed: int, cluster: Cluster) -> Outcome:
    """The plan of ``cluster`` (the one of ``shape``, ``change`` and ``seed``) against both LPs."""
    from kafka_balancer.goals.spec import default_goal_set
    from kafka_balancer.model.cluster import BrokerState
    from kafka_balancer.model.reassign import apply_reassignments
    from kafka_balancer.model.working import WorkingModel
    from kafka_balancer.planner.optimizer import plan

    brokers, _, racks, _, _ = shape
    result = plan(cluster, default_goal_set())
    state = WorkingModel(cluster)
    after = WorkingModel(apply_reassignments(cluster, result.reassignments))
    home = drained_home(state, after, np.array([b.state is BrokerState.DRAINING for b in cluster.brokers]))
    lp, seconds = lp_bound(state, result.bound_bands, False, home)
    lp_local, more = lp_bound(state, result.bound_bands, True, home)
    f = result.figures
    both = f.bytes_moved + f.cross_rack_bytes
    return Outcome(
        brokers=brokers,
        racks=racks,
        change=change,
        seed=seed,
        moved_gb=round(f.bytes_moved / GB, 1),
        bound_gb=round(f.bytes_moved_lower_bound / GB, 1),
        lp_bound_gb=round(lp / GB, 1),
        moved_over_bound=round(f.bytes_moved / f.bytes_moved_lower_bound, 3),
        moved_over_lp_bound=round(f.bytes_moved / lp, 3),
        across_gb=round(f.cross_rack_bytes / GB, 1),
        rack_local_bound_gb=round(f.rack_local_lower_bound / GB, 1),
        lp_rack_local_bound_gb=round(lp_local / GB, 1),
        moved_and_across_over_lp_rack_local_bound=round(both / lp_local, 3),
        judged=round(
            min(
                f.bytes_moved / max(f.bytes_moved_lower_bound, lp),
                both / max(f.rack_local_lower_bound, lp_local),
            ),
            3,
        ),
        lp_seconds=round(seconds + more, 1),
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="11,12")
    parser.add_argument("--shapes", default=",".join(str(i) for i in range(len(SHAPES))))
    parser.add_argument("--changes", default=",".join(CHANGES))
    parser.add_argument("--edges", default="", help="names of bench_planner_shapes.EDGES, instead")
    args = parser.parse_args()
    shapes = [SHAPES[int(i)] for i in args.shapes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    clusters = (
        (
            (EDGES[name][0], name, seed, edge(name, seed))
            for name, seed in itertools.product(args.edges.split(","), seeds)
        )
        if args.edges
        else (
            (shape, change, seed, shaped(shape, change, seed))
            for shape, change, seed in itertools.product(shapes, args.changes.split(","), seeds)
        )
    )
    for shape, change, seed, cluster in clusters:
        row = run(shape, change, seed, cluster)
        rows.append(row)
        print(json.dumps(asdict(row)), flush=True)
    over_lp = [r.moved_over_lp_bound for r in rows]
    print(
        json.dumps(
            {
                "clusters": len(rows),
                "moved_over_bound_median": round(statistics.median(r.moved_over_bound for r in rows), 3),
                "moved_over_lp_bound_median": round(statistics.median(over_lp), 3),
                "judged_median": statistics.median(r.judged for r in rows),
                "judged_max": max(r.judged for r in rows),
                "judged_over_1_10": sum(r.judged > 1.10 for r in rows),
                "lp_seconds": round(sum(r.lp_seconds for r in rows), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
