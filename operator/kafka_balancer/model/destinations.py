"""Where a candidate action may go on a working model as it stands: the brokers its rack pin
and the offline log dirs it left allow, those that already hold its partition, and how much a
drain has sent to each."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kafka_balancer.model.candidates import Candidates
from kafka_balancer.model.math import BoolArray, FloatArray, IntArray

if TYPE_CHECKING:
    from kafka_balancer.model.working import WorkingModel


def drained_share(state: WorkingModel, cands: Candidates) -> FloatArray:
    """``[K, B]``: drained bytes per unit of effective disk capacity if cands[k] went to b."""
    capacity = state.effective_capacity[:, 0]
    drained = state.drained_disk[None, :] + state.disk[cands.part][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(capacity[None, :] > 0, drained / capacity[None, :], np.inf)


def rack_allowed(state: WorkingModel, parts: IntArray, slots: IntArray) -> BoolArray:
    """``[K, B]``: may replica (parts[k], slots[k]) move to broker b, given rack pins and the
    brokers whose offline log dir the partition left?"""
    pinned = state.pinned_rack[parts, slots]
    allowed = (pinned < 0)[:, None] | (state.rack[None, :] == pinned[:, None])
    if state.any_banned:
        allowed &= ~state.banned[parts]
    return np.asarray(allowed, dtype=bool)


def rack_allowed_at(state: WorkingModel, parts: IntArray, slots: IntArray, broker: int) -> BoolArray:
    """``[K]``: ``rack_allowed``'s column ``broker``."""
    pinned = state.pinned_rack[parts, slots]
    allowed = (pinned < 0) | (pinned == state.rack[broker])
    if state.any_banned:
        allowed &= ~state.banned[parts, broker]
    return np.asarray(allowed, dtype=bool)


def holds(state: WorkingModel, parts: IntArray) -> BoolArray:
    """``[K, B]``: does broker b already hold a replica of partition parts[k]?"""
    rows = state.replicas[parts]
    out = np.zeros((len(parts), state.n_brokers + 1), dtype=bool)
    out[np.arange(len(parts))[:, None], np.where(rows >= 0, rows, state.n_brokers)] = True
    return out[:, : state.n_brokers]
