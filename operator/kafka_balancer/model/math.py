"""The load model's math and every band formula, written once.

The working model, the goals, the report and the Spark scoring job all call these functions (the
job on its driver; the replica contributions it sums in Spark are tested against
``replica_contribution`` bit for bit), so they can never disagree on what a broker's load or a
goal's band is.
All functions are pure and vectorised over numpy arrays.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Planned states aim this far inside every bound, so that an independent checker's
# floating-point arithmetic never sees a planned broker a hair outside its band.
PLANNING_MARGIN = 1e-9


def replica_contribution(
    disk: npt.ArrayLike,
    network_in: npt.ArrayLike,
    network_out: npt.ArrayLike,
    cpu: npt.ArrayLike,
    follower_cpu: npt.ArrayLike,
    replication_factor: npt.ArrayLike,
    is_leader: npt.ArrayLike,
) -> FloatArray:
    """Load one replica adds to its broker, as ``[n, 4]`` (disk, networkIn, networkOut, cpu).

    Every replica adds ``disk`` and ``networkIn`` (followers fetch what the leader receives);
    the leader adds ``networkOut + networkIn × (RF − 1)`` (consumers and replication) and ``cpu``;
    a follower adds ``followerCpu``.
    """
    leader = np.asarray(is_leader, dtype=bool)
    n_in = np.asarray(network_in, dtype=np.float64)
    rf = np.asarray(replication_factor, dtype=np.float64)
    out = np.where(leader, np.asarray(network_out, dtype=np.float64) + n_in * (rf - 1.0), 0.0)
    core = np.where(leader, np.asarray(cpu, dtype=np.float64), np.asarray(follower_cpu, dtype=np.float64))
    disk_arr = np.broadcast_to(np.asarray(disk, dtype=np.float64), out.shape)
    n_in = np.broadcast_to(n_in, out.shape)
    return np.stack([disk_arr, n_in, out, core], axis=-1)


def sum_per_broker(replica_broker: IntArray, contributions: FloatArray, n_brokers: int) -> FloatArray:
    """Sum replica contributions ``[n, 4]`` into per-broker loads ``[n_brokers, 4]``."""
    loads = np.zeros((n_brokers, contributions.shape[-1]), dtype=np.float64)
    np.add.at(loads, replica_broker, contributions)
    return loads


def capacity_weighted_mean(
    total_load: FloatArray, effective_capacity: FloatArray, active: BoolArray
) -> FloatArray:
    """Mean utilisation per resource: Σ load ÷ Σ effective capacity of active brokers."""
    capacity = effective_capacity[active].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(capacity > 0, total_load / capacity, 0.0)


def distribution_bounds(
    mean_utilisation: float, range_fraction: float, effective_capacity: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Per-broker load bounds of a distribution goal: mean × (1 ± range) × effective capacity."""
    return (
        mean_utilisation * (1.0 - range_fraction) * effective_capacity,
        mean_utilisation * (1.0 + range_fraction) * effective_capacity,
    )


def expected_counts(total: float, shares: FloatArray) -> FloatArray:
    """Expected replica/leader count per broker: the total split by warm-up share."""
    weight = shares.sum()
    return total * shares / weight if weight > 0 else np.zeros_like(shares)


def count_bounds(expected: FloatArray, range_fraction: float) -> tuple[FloatArray, FloatArray]:
    """Count band: floor(expected × (1 − range)) .. ceil(expected × (1 + range))."""
    # The tiny nudge keeps floor/ceil stable when expected × (1 ± range) is an integer in
    # exact arithmetic but lands a rounding error away from it in floating point.
    lo = np.floor(expected * (1.0 - range_fraction) + 1e-9)
    hi = np.ceil(expected * (1.0 + range_fraction) - 1e-9)
    return lo, hi


def outside_band(quantity: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike) -> FloatArray:
    """How far each quantity lies outside its band (0 inside)."""
    q = np.asarray(quantity, dtype=np.float64)
    upper = np.asarray(hi, dtype=np.float64)
    lower = np.asarray(lo, dtype=np.float64)
    return np.asarray(np.maximum(q - upper, 0.0) + np.maximum(lower - q, 0.0), dtype=np.float64)


def rack_limit(replication_factor: npt.ArrayLike, n_racks: int) -> IntArray:
    """RackAware: the most replicas of one partition a single rack may hold."""
    rf = np.asarray(replication_factor, dtype=np.int64)
    return np.asarray(-(-rf // max(n_racks, 1)), dtype=np.int64)


def relative_deviation(utilisation: FloatArray, mean: float) -> FloatArray:
    """|utilisation − mean| ÷ mean, the deviation reported for distribution goals."""
    if mean <= 0:
        return np.zeros_like(utilisation)
    return np.asarray(np.abs(utilisation - mean) / mean, dtype=np.float64)
