"""The chart's values.schema.json is in step with values.yaml: every value has a schema with a type and a
description, the schema names no value that values.yaml lacks, and the levels we own are closed.

helm itself (tests/integration/test_chart.py) proves that the schema refuses bad values."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.support.chart import CHART

VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
# Helm hands a subchart its umbrella's ``global`` values: the chart reads none, so values.yaml has none.
HELM_GLOBALS = "global"


def walk(values: dict[str, Any], schema: dict[str, Any], path: str = "") -> list[str]:
    """The paths of values.yaml whose schema is missing, untyped or undescribed, or whose object is open."""
    problems = []
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is not False:
        problems.append(f"{path or '<top>'}: additionalProperties is not false")
    for key in sorted(set(values) | set(properties)):
        where = f"{path}.{key}" if path else key
        if not path and key == HELM_GLOBALS:
            continue
        if key not in properties:
            problems.append(f"{where}: not in the schema")
            continue
        if key not in values:
            problems.append(f"{where}: in the schema but not in values.yaml")
            continue
        node = properties[key]
        if "type" not in node or not node.get("description"):
            problems.append(f"{where}: no type or no description")
        if "properties" in node:
            problems.extend(walk(values[key], node, where))
    return problems


def test_every_value_has_a_typed_described_schema_and_nothing_else_is_allowed() -> None:
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert walk(VALUES, SCHEMA) == []


def test_helms_globals_are_allowed_open_at_the_top_and_nowhere_else() -> None:
    assert SCHEMA["properties"][HELM_GLOBALS]["type"] == "object"
    assert "additionalProperties" not in SCHEMA["properties"][HELM_GLOBALS]
    assert HELM_GLOBALS not in VALUES
