"""The rules of a pool's execution lease, on a local monotonic clock given as input.

kopf's peering decides which replica syncs pools, but a replica frozen (SIGSTOP, a long GC pause, a
partitioned node) past the peering lifetime wakes up still believing it is active. The lease makes
ownership of an execution a deadline each process computes for itself:

* the holder owns the execution until ``sent + duration - margin``, where ``sent`` is when it SENT
  the request of its last successful renewal: the apiserver stored that renewal later, so no other
  process can have seen it earlier. Unreachable apiserver or not, past that deadline it owns nothing.
* another process takes a held lease only after it has seen the same record (resourceVersion) for a
  whole duration, on its own clock: it never compares its clock with the holder's timestamps. By
  then the holder's deadline has passed, so two processes never both believe they own it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka_balancer.durations import age_text

# The holder stops believing this long before its deadline: a Kafka write that passed the check
# just in time still lands before anyone else may take over.
SAFETY_MARGIN_S = 2.0


@dataclass(frozen=True)
class Observed:
    """A lease record held by another process, as first seen: its version and when (our clock)."""

    version: str
    since: float


def expired(
    previous: Observed | None, version: str, holder: str | None, now: float, duration_s: float
) -> tuple[bool, Observed]:
    """Whether a lease another process holds may be taken now; returns the observation to keep.

    A released lease (no holder) may be taken at once; a held one once ``version`` has not changed
    for ``duration_s`` since we first saw it.
    """
    if previous is None or previous.version != version:
        previous = Observed(version, now)
    return holder is None or now - previous.since >= duration_s, previous


class Ownership:
    """This process's own belief that it holds the lease, with the reason it stopped if it did."""

    def __init__(self, duration_s: float, clock: Callable[[], float]) -> None:
        self.duration_s = duration_s
        self.clock = clock
        self._deadline: float | None = None
        self.lost_because = "the lease was never acquired"
        # When (our clock) the last ownership ended: what the holder believed, to measure against.
        self.ended: float | None = None

    def renewed(self, sent: float) -> None:
        """A renewal (or acquisition) sent at ``sent`` succeeded."""
        self._deadline = sent + self.duration_s - SAFETY_MARGIN_S

    def lose(self, reason: str) -> None:
        if self._deadline is not None:
            self.lost_because = reason
            self.ended = min(self.clock(), self._deadline)
        self._deadline = None

    def remaining(self) -> float:
        """Seconds until the deadline (0 once lost)."""
        return 0.0 if self._deadline is None else max(0.0, self._deadline - self.clock())

    def owns(self) -> bool:
        if self._deadline is not None and self.clock() >= self._deadline:
            self.lose(
                f"not renewed within {age_text(self.duration_s)} (the Kubernetes API was unreachable "
                "or this process was stalled)"
            )
        return self._deadline is not None
