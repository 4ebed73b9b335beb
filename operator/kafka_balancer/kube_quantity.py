"""Kubernetes quantities (``2Ti``, ``125M``, ``7500m``, ``8``) as the CRDs accept them.

The CR models (api.py) validate them and reconcile/ and k8s/ read their values, so this module sits
below all of them and imports nothing of the project.
"""

from __future__ import annotations

import re
from decimal import Decimal

# Same pattern as the CRDs' quantity fields (no sign but "+": a capacity or a throttle is never negative).
QUANTITY_PATTERN = (
    r"^(\+)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[mkMGTPE]|([eE](\+)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY = re.compile(QUANTITY_PATTERN)
_NUMBER = re.compile(r"^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))")

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def is_quantity(value: int | str) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return _QUANTITY.match(value) is not None


def parse_quantity(value: int | str) -> float:
    """The quantity's value in base units (bytes, bytes/s, cores); ValueError if it is not one."""
    if not is_quantity(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 2Ti, 125M, 7500m, 8)")
    if isinstance(value, int):
        return float(value)
    number = _NUMBER.match(value)
    assert number is not None  # guaranteed by is_quantity
    mantissa = Decimal(number.group(0).lstrip("+"))
    suffix = value[number.end() :]
    if suffix[:1] in ("e", "E"):
        return float(mantissa * Decimal(10) ** Decimal(suffix[1:].lstrip("+")))
    return float(mantissa * _SUFFIXES[suffix])


_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def binary_quantity(count: int) -> str:
    """Bytes as a short binary quantity for people (``kubectl get``): ``0``, ``512``, ``1.5Gi``, ``12Mi``;
    one decimal below 10 of a unit, none above (a column, not an accounting)."""
    value, suffix = float(count), ""
    for unit in _BINARY:
        if value < 1024:
            break
        value, suffix = value / 1024, unit
    text = f"{value:.1f}" if suffix and value < 10 else f"{value:.0f}"
    return text.removesuffix(".0") + suffix
