"""Moving a partition's replicas a few at a time: the reassignment steps from its replicas to the plan's.

Kafka copies every added replica of a reassignment at once, so a partition moving all of its
replicas has its leader send it RF times over and its size on RF new disks at the same moment.
Step by step, each reassignment swaps at most ``at_a_time`` replicas for new ones, in place, so
the replica count never grows by more than that. Followers are swapped first and the leader last,
into the slot of the plan's preferred leader: leadership moves once, in the last step.
"""

from __future__ import annotations


def next_step(current: tuple[int, ...], final: tuple[int, ...], at_a_time: int) -> tuple[int, ...]:
    """The replicas of the next reassignment from ``current`` towards ``final``: ``final`` itself when
    it adds at most ``at_a_time`` replicas (or ``at_a_time`` is 0: all at once), else ``current`` with
    its last ``at_a_time`` leaving replicas replaced by the last ``at_a_time`` arriving ones."""
    arriving = [b for b in final if b not in current]
    if at_a_time <= 0 or len(arriving) <= at_a_time:
        return final
    leaving = [b for b in current if b not in final]
    swaps = dict(list(zip(reversed(leaving), reversed(arriving), strict=False))[:at_a_time])
    return tuple(swaps.get(b, b) for b in current)
