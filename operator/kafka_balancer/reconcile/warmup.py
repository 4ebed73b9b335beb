"""The warm-up schedule: a new broker's share of a full broker rises in equal steps over the duration."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WarmUpPoint:
    step: int  # 1..steps while warming; steps when done
    steps: int
    share: float  # step / steps
    done: bool


def warm_up_point(
    first_seen: float, now: float, duration_s: int, steps: int, shown: int | None = None
) -> WarmUpPoint:
    """Where a broker first seen at ``first_seen`` stands at ``now``.

    Step k (1-based) starts at (k - 1) x duration / steps, so with 4 steps over 30 min the share is
    25 % from the start, 50 % after 7.5 min, 75 % after 15 min, 100 % after 22.5 min, and the broker
    counts as fully warm (Active) at 30 min.

    ``shown`` is the step status last showed for the broker (None: it was not warming). A step's
    window can pass without a reconcile (a slow or busy operator), and a step skipped is a plan
    skipped: so the broker goes at most one step past ``shown``, and is warm only once its last step
    has shown.
    """
    if duration_s <= 0:
        return WarmUpPoint(steps, steps, 1.0, True)
    elapsed = max(0.0, now - first_seen)
    # steps + 1: past the last step, warm.
    step = steps + 1 if elapsed >= duration_s else min(steps, int(elapsed * steps // duration_s) + 1)
    if shown is not None:
        step = min(step, shown + 1)
    if step > steps:
        return WarmUpPoint(steps, steps, 1.0, True)
    return WarmUpPoint(step, steps, step / steps, False)


def next_step_at(first_seen: float, duration_s: int, steps: int, shown: int) -> float:
    """When a warming broker first seen at ``first_seen`` whose status shows step ``shown`` goes
    further: its next step starts, or after its last step it is warm.

    As a broker goes at most one step past what status shows (see ``warm_up_point``), this is the
    start of step ``shown + 1``, or the end of the warm-up after the last; a time already past (a
    broker behind its schedule) means its next pass moves it on.
    """
    return first_seen + shown * duration_s / steps
