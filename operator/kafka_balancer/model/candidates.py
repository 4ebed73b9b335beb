"""Candidate actions on the working model, as a structure of arrays the goals score in one go."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.math import FloatArray, IntArray

NO_BROKER = -1


@dataclass
class Candidates:
    """A batch of candidate actions, structure-of-arrays.

    ``dst == NO_BROKER``: move the replica in ``slot`` to any broker. Otherwise a leadership
    change: the replica in ``slot`` (on broker ``dst``) becomes the leader.
    ``delta`` is what the action takes from ``src`` and gives to its destination.
    """

    part: IntArray
    slot: IntArray
    src: IntArray
    dst: IntArray
    delta: FloatArray
    cost: FloatArray

    def __len__(self) -> int:
        return int(self.part.shape[0])

    def take(self, index: IntArray) -> Candidates:
        return Candidates(
            self.part[index],
            self.slot[index],
            self.src[index],
            self.dst[index],
            self.delta[index],
            self.cost[index],
        )

    def rows(self, start: int, stop: int) -> Candidates:
        """Rows ``start:stop`` as views: no copying for the search's batches."""
        return Candidates(
            self.part[start:stop],
            self.slot[start:stop],
            self.src[start:stop],
            self.dst[start:stop],
            self.delta[start:stop],
            self.cost[start:stop],
        )

    @staticmethod
    def concat(batches: list[Candidates]) -> Candidates:
        return Candidates(
            np.concatenate([b.part for b in batches]),
            np.concatenate([b.slot for b in batches]),
            np.concatenate([b.src for b in batches]),
            np.concatenate([b.dst for b in batches]),
            np.concatenate([b.delta for b in batches]),
            np.concatenate([b.cost for b in batches]),
        )
