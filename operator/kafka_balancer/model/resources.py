"""The four balanced resources, in the fixed order every load array uses."""

from __future__ import annotations

import enum


class Resource(enum.IntEnum):
    """Index of a resource in every ``[..., 4]`` load array; ``.key`` is the snapshot field name."""

    DISK = 0
    NETWORK_IN = 1
    NETWORK_OUT = 2
    CPU = 3

    @property
    def key(self) -> str:
        return _KEYS[self]


_KEYS = {
    Resource.DISK: "disk",
    Resource.NETWORK_IN: "networkIn",
    Resource.NETWORK_OUT: "networkOut",
    Resource.CPU: "cpu",
}

RESOURCES: tuple[Resource, ...] = tuple(Resource)
