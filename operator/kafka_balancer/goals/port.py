"""What a goal calls on the search while it optimises, as a protocol.

Goals decide which moves would help; the planner's search decides whether a move is allowed (vetoes)
and applies it. Typing the goals against this port rather than against ``planner.search.Search``
keeps goals/ below planner/: the planner's search satisfies it structurally. How wide a search
looks (``MAX_SOURCES``, ``SWAP_PARTNERS``) is here too, as the planner's search and the goals' own
tactics look as wide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from kafka_balancer.goals.bands import BandGoal
    from kafka_balancer.goals.base import Goal
    from kafka_balancer.model.candidates import Candidates
    from kafka_balancer.model.math import BoolArray

# How wide a search looks, the planner's and a goal's own alike: brokers asked as the source of
# a move onto an under-filled broker before giving up on it ...
MAX_SOURCES = 8
# ... and brokers asked to exchange with one when a one-way move does not fit.
SWAP_PARTNERS = 4


class SearchPort(Protocol):
    def place(
        self, goal: Goal | None, cands: Candidates, dest: int | None = None, *, in_rack: bool = False
    ) -> int | None:
        """Apply the first acceptable candidate (in the given order) at its best destination (of
        its own rack, ``in_rack``), or at ``dest``; the partition it changed, or None when no
        candidate is acceptable. Without a goal, acceptable is within the rules and vetoes."""
        ...

    def place_apart(
        self, goal: Goal, cands: Candidates, in_rack: BoolArray | None = None
    ) -> tuple[int, BoolArray]:
        """Apply, in order, each candidate free move acceptable at its best destination (for the
        ``in_rack`` ones, in its own rack), skipping those whose partition or source a move of
        the call touched, or whose every best destination one did; how many were applied, and
        which candidates no broker would have taken."""
        ...

    def shed_apart(self, goal: BandGoal, brokers: list[int]) -> bool:
        """Move replicas off the over brokers ``brokers`` in rounds of moves judged together, as
        far as their first choices go; whether anything moved."""
        ...

    def shed(self, goal: BandGoal, broker: int) -> bool:
        """Move load off ``broker`` until it is inside ``goal``'s target band or nothing more can go;
        whether anything moved."""
        ...

    def fill(self, goal: BandGoal, broker: int) -> bool:
        """Move load onto ``broker`` until it is inside ``goal``'s target band or nothing more can
        come; whether anything moved."""
        ...

    def exchange(
        self, goal: Goal, give: Candidates, take: Candidates, x: int, y: int, across: bool = False
    ) -> bool:
        """Apply the acceptable pair (``give[i]`` moves from x to y and ``take[j]`` from y to x)
        that improves ``goal`` the most per byte moved (``across``: per byte moved and byte
        copied across racks); whether there was one."""
        ...

    def compound(self, actions: Callable[[], bool]) -> bool:
        """Apply ``actions`` (which say whether what they did is to be kept) as one: kept whole
        or undone whole; whether kept."""
        ...
