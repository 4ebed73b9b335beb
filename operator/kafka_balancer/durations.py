"""Durations as people write and read them: the CRs' grammar (``90s``, ``10m``, ``1h30m``) and
kubectl's way of printing an age (``2m5s``, ``3h4m``, ``5d2h``).

The CR models (api.py) validate with the grammar, the command line parses its flags with it, and
everything that shows a duration to a person prints it with ``age_text``; so this module sits below
all of them and imports nothing of the project.
"""

from __future__ import annotations

import re

# Same pattern as the CRDs' duration fields (spec.warmUp.duration): whole hours, minutes, seconds.
DURATION_PATTERN = r"^([0-9]+h)?([0-9]+m)?([0-9]+s)?$"
_DURATION = re.compile(DURATION_PATTERN)
_UNIT_S = {"h": 3600, "m": 60, "s": 1}
EXAMPLES = "e.g. 90s, 10m, 1h30m"


def parse_duration(text: str, *, bare_seconds: bool = False) -> int:
    """Seconds of ``1h30m``-style text; with ``bare_seconds`` a plain count of seconds (``600``) too,
    as the command line's flags took before they took units. ValueError if it is neither."""
    if bare_seconds and text.isascii() and text.isdigit():
        return int(text)
    if not text or _DURATION.match(text) is None:
        raise ValueError(f"{text!r} is not a duration ({EXAMPLES})")
    return sum(int(n) * _UNIT_S[u] for n, u in re.findall(r"([0-9]+)([hms])", text))


def age_text(seconds: float) -> str:
    """Seconds as kubectl prints an age (k8s.io/apimachinery's HumanDuration): exact while short,
    then only the two largest units that matter (``45s``, ``2m5s``, ``12m``, ``3h4m``, ``5d2h``, ``1y3d``)."""
    whole = int(seconds)
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m{whole % 60}s" if whole % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"
