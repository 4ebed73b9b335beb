"""The planner's search: the engine that chooses and applies moves, with the shed and fill ladders
that band goals climb.

The parts, inward to outward: ``engine`` (choosing an acceptable move among candidates and
applying it, under the rules every applied action obeys), ``pool`` (candidate pools), ``swaps``
(exchanges), ``trades`` (leadership trades, hand-overs and relays) and ``ladder`` (the shed and
fill ladders, as named steps). Goals call a search through ``goals.port.SearchPort``.
docs/how-a-plan-is-made.md says how a plan is made and names the terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_balancer.planner import ladder
from kafka_balancer.planner.engine import Engine

if TYPE_CHECKING:
    from kafka_balancer.goals.bands import BandGoal


@dataclass
class Search(Engine):
    """The engine, and the ladders a band goal sheds and fills brokers by."""

    def shed(self, goal: BandGoal, broker: int) -> bool:
        """Move load off ``broker`` until it is inside ``goal``'s target band or nothing more can
        go (``ladder.SHED_LADDER``); whether anything moved."""
        return ladder.shed(self, goal, broker)

    def fill(self, goal: BandGoal, broker: int) -> bool:
        """Move load onto ``broker`` until it is inside ``goal``'s target band or nothing more can
        come (``ladder.FILL_LADDER``); whether anything moved."""
        return ladder.fill(self, goal, broker)

    def shed_apart(self, goal: BandGoal, brokers: list[int]) -> bool:
        """Move replicas off the over brokers ``brokers`` in rounds of moves judged together, as
        far as their first choices go (``ladder.shed_apart``); whether anything moved."""
        return ladder.shed_apart(self, goal, brokers)
