"""Per-broker goal scores and candidate actions over pandas frames, on the job's driver.

Every band, violation and deviation comes from :mod:`kafka_balancer.model.math`, the module
the planner uses, so the job and the planner cannot disagree. Rack awareness and topic
spread are per-partition/per-topic goals and are not scored per broker here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from kafka_balancer.goals.band import GoalBand, goal_band, goal_column
from kafka_balancer.goals.spec import GoalSpec, GoalType
from kafka_balancer.model import math
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray
from kafka_balancer.model.quantities import LEADERS, REPLICAS
from kafka_balancer.model.resources import RESOURCES

# Quantity columns of a broker: the four resources (``Resource`` order), then counts.
LOAD_COLUMNS = tuple(f"load_{r.key}" for r in RESOURCES)
CAPACITY_COLUMNS = tuple(f"cap_{r.key}" for r in RESOURCES)
_NOT_PER_BROKER = {GoalType.RACK_AWARE, GoalType.TOPIC_REPLICA_DISTRIBUTION}
# A candidate must improve its goal by more than this (violation units) to be listed.
MIN_IMPROVEMENT = 1e-12

# The Parquet outputs' columns (broker_scores/, candidates/).
SCORE_SCHEMA = pa.schema(
    [
        ("goal", pa.string()),
        ("goal_type", pa.string()),
        ("hard", pa.bool_()),
        ("priority", pa.int32()),
        ("broker", pa.int32()),
        ("active", pa.bool_()),
        *((name, pa.float64()) for name in ("quantity", "utilisation", "lo", "hi", "scale")),
        *((name, pa.float64()) for name in ("violation", "deviation", "mean")),
    ]
)
CANDIDATE_SCHEMA = pa.schema(
    [
        ("goal", pa.string()),
        ("goal_type", pa.string()),
        ("source_broker", pa.int32()),
        ("source_violation", pa.float64()),
        ("action", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("target_broker", pa.int32()),
        ("improvement", pa.float64()),
        ("bytes", pa.float64()),
    ]
)


def per_broker_goals(goals: Sequence[GoalSpec]) -> tuple[GoalSpec, ...]:
    # The intra-broker goals score log dirs, which the scoring job's broker frames do not carry.
    return tuple(g for g in goals if g.type not in _NOT_PER_BROKER and not g.type.intra_broker)


@dataclass(frozen=True, slots=True)
class Band:
    """A goal's band over the brokers of a frame, with the figures the job reports."""

    quantity: FloatArray
    figures: GoalBand
    active: BoolArray

    @property
    def lo(self) -> FloatArray:
        return self.figures.lo

    @property
    def hi(self) -> FloatArray:
        return self.figures.hi

    @property
    def scale(self) -> FloatArray:
        return self.figures.scale

    @property
    def mean(self) -> float:
        return self.figures.mean

    @property
    def enforced(self) -> bool:
        return self.figures.enforced

    @property
    def violation(self) -> FloatArray:
        return self.figures.violation(self.quantity)

    @property
    def utilisation(self) -> FloatArray:
        """Share of capacity (capacity goals) or utilisation (resource distribution goals);
        NaN for count distribution goals, which have none."""
        if self.figures.column >= REPLICAS and not np.isnan(self.mean):
            return np.full(len(self.quantity), np.nan)
        return self.figures.utilisation(self.quantity)

    @property
    def deviation(self) -> FloatArray:
        """Distribution goals: |utilisation − mean| ÷ mean on active brokers; NaN otherwise."""
        if np.isnan(self.mean):
            return np.full(len(self.quantity), np.nan)
        return np.where(self.active, self.figures.deviation(self.quantity), np.nan)


def band(goal: GoalSpec, brokers: pd.DataFrame) -> Band:
    """The band of ``goal`` for every broker of ``brokers`` (one row per broker, sorted by id)."""
    col = goal_column(goal.type)
    names = (*LOAD_COLUMNS, "replicas", "leaders")
    q = brokers[names[col]].to_numpy(np.float64)
    capacity = brokers[CAPACITY_COLUMNS[col]].to_numpy(np.float64) if col < REPLICAS else None
    active = brokers["active"].to_numpy(bool)
    figures = goal_band(goal, q, capacity, brokers["share"].to_numpy(np.float64), active)
    return Band(q, figures, active)


def score_brokers(brokers: pd.DataFrame, goals: Sequence[GoalSpec]) -> pd.DataFrame:
    """One row per broker per per-broker goal: quantity, band, violation, deviation."""
    brokers = brokers.sort_values("broker", kind="stable").reset_index(drop=True)
    frames = []
    for goal in per_broker_goals(goals):
        b = band(goal, brokers)
        frames.append(
            pd.DataFrame(
                {
                    "goal": goal.label,
                    "goal_type": goal.type.value,
                    "hard": goal.hard,
                    "priority": np.int32(goal.priority),
                    "broker": brokers["broker"].to_numpy(np.int32),
                    "active": brokers["active"].to_numpy(bool),
                    "quantity": b.quantity,
                    "utilisation": b.utilisation,
                    "lo": b.lo,
                    "hi": b.hi,
                    "scale": b.scale,
                    "violation": b.violation,
                    "deviation": b.deviation,
                    "mean": b.mean,
                }
            )
        )
    if not frames:
        return _empty(SCORE_SCHEMA)
    return pd.concat(frames, ignore_index=True)


def _empty(schema: pa.Schema) -> pd.DataFrame:
    return pd.DataFrame({name: [] for name in schema.names})


def _contributions(replicas: pd.DataFrame, leader: bool) -> FloatArray:
    """What each replica row would add to its broker as leader (True) or as follower."""
    return math.replica_contribution(
        replicas["disk"].to_numpy(np.float64),
        replicas["network_in"].to_numpy(np.float64),
        replicas["network_out"].to_numpy(np.float64),
        replicas["cpu"].to_numpy(np.float64),
        replicas["follower_cpu"].to_numpy(np.float64),
        replicas["rf"].to_numpy(np.float64),
        np.full(len(replicas), leader),
    ).reshape(len(replicas), 4)


def _deltas(replicas: pd.DataFrame, col: int) -> tuple[FloatArray, FloatArray]:
    """Goal-quantity change of (moving the replica, handing its leadership to a follower)."""
    is_leader = replicas["is_leader"].to_numpy(bool)
    if col == REPLICAS:
        return np.ones(len(replicas)), np.zeros(len(replicas))
    if col == LEADERS:
        return is_leader.astype(np.float64), is_leader.astype(np.float64)
    as_leader = _contributions(replicas, True)[:, col]
    as_follower = _contributions(replicas, False)[:, col]
    move = np.where(is_leader, as_leader, as_follower)
    return move, np.where(is_leader, as_leader - as_follower, 0.0)


def _improvement(b: Band, src: int, dst: FloatArray, delta: FloatArray) -> FloatArray:
    """Fall of the goal's violation (source plus target) when ``delta`` moves src → dst."""
    idx = dst.astype(np.int64)
    q, lo, hi, scale = b.quantity, b.lo, b.hi, b.scale
    src_gain = math.outside_band(q[src], lo[src], hi[src]) - math.outside_band(
        q[src] - delta, lo[src], hi[src]
    )
    dst_gain = math.outside_band(q[idx], lo[idx], hi[idx]) - math.outside_band(
        q[idx] + delta, lo[idx], hi[idx]
    )
    return np.asarray(src_gain / scale[src] + dst_gain / scale[idx], dtype=np.float64)


def candidates_for_broker(
    replicas: pd.DataFrame, brokers: pd.DataFrame, goals: Sequence[GoalSpec], top: int
) -> pd.DataFrame:
    """Best actions that shed load from one broker (all ``replicas`` rows sit on it) for every
    goal it is above the band of: move a replica to the least-loaded eligible broker (active,
    not holding the partition), or hand the leadership to the least-loaded follower."""
    brokers = brokers.sort_values("broker", kind="stable").reset_index(drop=True)
    ids = brokers["broker"].to_numpy(np.int64)
    position = {int(b): i for i, b in enumerate(ids)}
    src_id = int(replicas["broker"].iloc[0])
    src = position[src_id]
    active = brokers["active"].to_numpy(bool)
    # holds[k, j]: broker j already holds a replica of row k's partition.
    members, rf = _flat(replicas["replicas"])
    rows = np.repeat(np.arange(len(rf)), rf)
    known = np.isin(members, ids)
    holds = np.zeros((len(replicas), len(ids)), dtype=bool)
    holds[rows[known], np.searchsorted(ids, members[known])] = True
    is_leader = replicas["is_leader"].to_numpy(bool)
    # Per action: where a row may go (never to its own broker) and what it costs; the same for every goal.
    actions = []
    for action, eligible, cost in (
        ("move", active[None, :] & ~holds, replicas["disk"].to_numpy(np.float64)),
        ("leader", active[None, :] & holds & is_leader[:, None], np.zeros(len(replicas))),
    ):
        eligible[:, src] = False
        actions.append((action, eligible, eligible.any(axis=1), cost))
    topics = replicas["topic"].to_numpy()
    partitions = replicas["partition"].to_numpy(np.int32)
    # Per goal label, each action's rows as columns; the best ``top`` of a label are kept before
    # any frame is built: a broker far above a band has thousands of candidates.
    found: dict[str, list[dict[str, npt.NDArray[Any]]]] = {}
    for goal in per_broker_goals(goals):
        b = band(goal, brokers)
        if not b.enforced or b.quantity[src] <= b.hi[src] or b.violation[src] <= 0:
            continue
        relative = b.quantity / b.scale
        deltas = _deltas(replicas, goal_column(goal.type))
        for (action, eligible, any_eligible, cost), delta in zip(actions, deltas, strict=True):
            ok = any_eligible & (delta > 0)
            if not ok.any():
                continue
            target = np.argmin(np.where(eligible, relative[None, :], np.inf), axis=1)
            gain = _improvement(b, src, target.astype(np.float64), delta)
            keep = np.flatnonzero(ok & (gain > MIN_IMPROVEMENT))
            found.setdefault(goal.label, []).append(
                {
                    "goal": np.full(len(keep), goal.label, dtype=object),
                    "goal_type": np.full(len(keep), goal.type.value, dtype=object),
                    "source_broker": np.full(len(keep), src_id, np.int32),
                    "source_violation": np.full(len(keep), float(b.violation[src])),
                    "action": np.full(len(keep), action, dtype=object),
                    "topic": topics[keep],
                    "partition": partitions[keep],
                    "target_broker": ids[target[keep]].astype(np.int32),
                    "improvement": gain[keep],
                    "bytes": cost[keep],
                }
            )
    if not found:
        return _empty(CANDIDATE_SCHEMA)
    best = [_best(found[label], top) for label in sorted(found)]
    columns = {name: np.concatenate([rows[name] for rows in best]) for name in CANDIDATE_SCHEMA.names}
    return pd.DataFrame(columns)


def _best(parts: list[dict[str, npt.NDArray[Any]]], top: int) -> dict[str, npt.NDArray[Any]]:
    """The ``top`` rows of one goal's ``parts`` by improvement, then fewest bytes, then the
    order they were found in."""
    rows = {name: np.concatenate([part[name] for part in parts]) for name in CANDIDATE_SCHEMA.names}
    order = np.lexsort((rows["bytes"], -rows["improvement"]))[:top]
    return {name: values[order] for name, values in rows.items()}


def replicas_on(model: pd.DataFrame, brokers: Sequence[int]) -> pd.DataFrame:
    """One row per replica of ``model`` (one row per partition: its ``replicas`` and ``leader``)
    held by one of ``brokers``: the partition's columns plus ``broker``, ``rf`` and ``is_leader``,
    in the model's order."""
    broker, rf = _flat(model["replicas"])
    row = np.repeat(np.arange(len(model)), rf)
    keep = np.isin(broker, np.asarray(brokers, np.int64))
    on = model.iloc[row[keep]].reset_index(drop=True)
    on["rf"] = rf[row[keep]]
    on["broker"] = broker[keep]
    on["is_leader"] = on["broker"].to_numpy() == on["leader"].to_numpy()
    return on


def _flat(lists: pd.Series) -> tuple[IntArray, IntArray]:
    """A column of broker id lists as one array of ids and each list's length. Read as Python
    ints in one pass: an array a list cost most of the candidates' time on a large cluster."""
    lengths = np.fromiter(map(len, lists), np.int64, len(lists))
    ids = np.fromiter(chain.from_iterable(lists), np.int64, int(lengths.sum()))
    return ids, lengths


def candidates(
    model: pd.DataFrame, brokers: pd.DataFrame, goals: Sequence[GoalSpec], top: int, violating: Sequence[int]
) -> pd.DataFrame:
    """Best ``top`` actions per goal for each broker in ``violating`` (:func:`candidates_for_broker`),
    brokers in id order."""
    on = replicas_on(model, violating)
    frames = [candidates_for_broker(rows, brokers, goals, top) for _, rows in on.groupby("broker", sort=True)]
    found = [frame for frame in frames if len(frame)]
    return pd.concat(found, ignore_index=True) if found else _empty(CANDIDATE_SCHEMA)
