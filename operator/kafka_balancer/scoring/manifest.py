"""The job's ``manifest.json``: what was read, which windows were used, what was written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """The windows a run uses, newest first: window i is ``(end − (i+1)·length, end − i·length]``."""

    length_ms: int
    newest_ms: int
    requested: int
    complete: int  # windows fully covered by sample history

    @property
    def used(self) -> int:
        return min(self.requested, self.complete)

    def bounds(self) -> list[dict[str, int]]:
        return [
            {
                "index": i,
                "startMs": self.newest_ms - (i + 1) * self.length_ms,
                "endMs": self.newest_ms - i * self.length_ms,
            }
            for i in range(self.used)
        ]


def window_plan(length_ms: int, requested: int, newest_ms: int, oldest_start_ms: int) -> WindowPlan:
    """``oldest_start_ms``: where the oldest sample's interval began (its ``ts_ms − interval_ms``)."""
    return WindowPlan(length_ms, newest_ms, requested, max((newest_ms - oldest_start_ms) // length_ms, 0))


def manifest_document(
    *,
    windows: WindowPlan,
    min_samples: int,
    rows: dict[str, int],
    incomplete: list[str],
    complete: int,
    cpu_source: str,
    follower_cpu_fraction: float,
    inputs: dict[str, str],
    outputs: dict[str, str],
    seconds: float,
) -> dict[str, Any]:
    return {
        "version": 1,
        "inputs": inputs,
        "windows": {
            "lengthMs": windows.length_ms,
            "requested": windows.requested,
            "used": windows.used,
            "newestSampleMs": windows.newest_ms,
            "windows": windows.bounds(),
        },
        "completeness": {
            "minSamplesPerWindow": min_samples,
            "completePartitions": complete,
            "incompleteCount": len(incomplete),
            "incompletePartitions": incomplete,
        },
        "loadModel": {"cpuSource": cpu_source, "followerCpuFraction": follower_cpu_fraction},
        "rows": rows,
        "outputs": outputs,
        "durationSeconds": round(seconds, 3),
    }
