"""Moving a partition's replicas a few at a time: the reassignment steps from its replicas to the plan's.

Kafka copies every added replica of a reassignment at once, so a partition moving all of its
replicas has its leader send it RF times over and its size on RF new disks at the same moment.
Step by step, each reassignment swaps at most ``at_a_time`` replicas for new ones, in place, so
the replica count never grows by more than that. Followers are swapped first and the leader last,
into the slot of the plan's preferred leader: leadership moves once, in the last step. Each swap
picks the arriving replica that keeps the step's replicas in the most racks, so a partition spread
over racks stays spread between steps wherever the plan allows.
"""

from __future__ import annotations

from collections.abc import Mapping

Racks = Mapping[int, str | None]


def next_step(
    current: tuple[int, ...], final: tuple[int, ...], at_a_time: int, racks: Racks | None = None
) -> tuple[int, ...]:
    """The replicas of the next reassignment from ``current`` towards ``final``: ``final`` itself when
    it adds at most ``at_a_time`` replicas (or ``at_a_time`` is 0: all at once), else ``current`` with
    its last ``at_a_time`` leaving replicas replaced by arriving ones, rack spread first, then the
    plan's order (the last arriving first)."""
    arriving = [b for b in final if b not in current]
    if at_a_time <= 0 or len(arriving) <= at_a_time:
        return final
    leaving = [b for b in current if b not in final]
    step = list(current)
    unplaced = list(reversed(arriving))
    for gone in list(reversed(leaving))[:at_a_time]:
        slot = step.index(gone)
        chosen = max(unplaced, key=lambda b: _rack_count([*step[:slot], b, *step[slot + 1 :]], racks or {}))
        unplaced.remove(chosen)
        step[slot] = chosen
    return tuple(step)


def _rack_count(replicas: list[int], racks: Racks) -> int:
    """Distinct racks; a broker without one counts as a rack of its own."""
    return len({("rack", rack) if (rack := racks.get(b)) is not None else ("broker", b) for b in replicas})
