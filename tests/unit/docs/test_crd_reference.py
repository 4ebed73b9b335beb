"""docs/crd-reference.md is the CRDs' own reference: generated from crds/*.yaml, every field in it, and
never behind a change to a CRD."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from kafka_balancer_dev.crd_reference import crd_files, render
from tests.support.readme import ROOT

PAGE = ROOT / "docs" / "crd-reference.md"


def fields(path: str, schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    items = schema.get("items", {})
    for name, child in (schema.get("properties") or items.get("properties") or {}).items():
        child_path = f"{path}[].{name}" if "properties" in items else f"{path}.{name}" if path else name
        yield child_path, child
        yield from fields(child_path, child)


def test_the_committed_page_is_what_the_crds_generate() -> None:
    assert PAGE.read_text() == render(crd_files(ROOT)), (
        "docs/crd-reference.md differs from crds/*.yaml: run python -m kafka_balancer_dev.crd_reference"
    )


def test_every_field_of_every_crd_is_on_the_page_with_its_default_and_values() -> None:
    page = render(crd_files(ROOT))
    paths = crd_files(ROOT)
    assert [path.name for path in paths] == ["balancergoals.yaml", "brokerpools.yaml"]
    for path in paths:
        crd = yaml.safe_load(path.read_text())
        section = page.split(f"\n## {crd['spec']['names']['kind']}\n", 1)[1].split("\n## ", 1)[0]
        (version,) = crd["spec"]["versions"]
        for field, schema in fields("", version["schema"]["openAPIV3Schema"]):
            entry = section.split(f"- **`{field}`**:", 1)[1].split("\n\n", 1)[0]
            if "default" in schema and isinstance(schema["default"], str):
                assert f"default `{schema['default']}`" in entry, field
            for value in schema.get("enum", []):
                assert f"`{value}`" in entry, field
            for bound in ("minimum", "maximum"):
                if bound in schema:
                    assert str(schema[bound]) in entry, field
            for rule in schema.get("x-kubernetes-validations", []):
                assert " ".join(rule["message"].split()) in " ".join(entry.split()), field
