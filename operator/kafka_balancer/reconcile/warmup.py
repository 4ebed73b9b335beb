"""The warm-up schedule: a new broker's share of a full broker rises in equal steps over the duration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WarmUpPoint:
    step: int  # 1..steps while warming; steps when done
    steps: int
    share: float  # step / steps
    done: bool


def warm_up_point(first_seen: float, now: float, duration_s: int, steps: int) -> WarmUpPoint:
    """Where a broker first seen at ``first_seen`` stands at ``now``.

    Step k (1-based) starts at (k - 1) x duration / steps, so with 4 steps over 30 min the share is
    25 % from the start, 50 % after 7.5 min, 75 % after 15 min, 100 % after 22.5 min, and the broker
    counts as fully warm (Active) at 30 min.
    """
    elapsed = max(0.0, now - first_seen)
    if duration_s <= 0 or elapsed >= duration_s:
        return WarmUpPoint(steps, steps, 1.0, True)
    step = min(steps, int(elapsed * steps // duration_s) + 1)
    return WarmUpPoint(step, steps, step / steps, False)
