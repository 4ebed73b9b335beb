"""The names of the ConfigMaps the operator keeps for a pool: its plan, its scored loads, the record of
its execution.
"""

from __future__ import annotations


def plan_config_map(pool: str) -> str:
    return f"{pool}-plan"


def loads_config_map(pool: str) -> str:
    return f"{pool}-loads"


def execution_config_map(pool: str) -> str:
    return f"{pool}-execution"
