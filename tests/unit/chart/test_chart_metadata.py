"""Chart.yaml's Artifact Hub annotations say what the chart installs: its CRDs as their files define them and
its examples as examples/ ships them, so the package page cannot drift from either."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.support.chart import CHART

ROOT = CHART.parents[1]
CHART_YAML = yaml.safe_load((CHART / "Chart.yaml").read_text())
ANNOTATIONS: dict[str, Any] = CHART_YAML["annotations"]
_FIRST_SENTENCE = re.compile(r"(.*?\.)(\s|$)")


def annotation(name: str) -> Any:
    """An annotation Artifact Hub reads as YAML inside the string (Chart.yaml's annotations are strings)."""
    value = ANNOTATIONS[f"artifacthub.io/{name}"]
    assert isinstance(value, str), f"artifacthub.io/{name} is not a string"
    return yaml.safe_load(value)


def leading_comment(path: Path) -> str:
    """The first sentence of the comment a CRD file opens with: what the resource is for."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    found = _FIRST_SENTENCE.match(" ".join(lines))
    assert found, f"{path.name} opens with no comment saying what its resources are"
    return found.group(1)


def crds_in_chart() -> dict[str, dict[str, str]]:
    """Artifact Hub's entry of every CRD the chart installs (kopf's from crds/, ours from files/crds/,
    which templates/crds.yaml renders), keyed by name, from the files alone."""
    found = {}
    for path in sorted((CHART / "crds").glob("*.yaml")) + sorted((CHART / "files" / "crds").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            (storage,) = [version["name"] for version in crd["spec"]["versions"] if version["storage"]]
            found[crd["metadata"]["name"]] = {
                "kind": crd["spec"]["names"]["kind"],
                "version": storage,
                "description": leading_comment(path),
            }
    return found


def test_every_annotation_is_a_string() -> None:
    """helm and ct refuse a Chart.yaml whose annotation values are not strings ("true", not true)."""
    assert all(isinstance(value, str) for value in ANNOTATIONS.values()), ANNOTATIONS


def test_crds_list_every_crd_of_the_chart_as_its_file_defines_it() -> None:
    listed = annotation("crds")
    assert all(entry["displayName"] for entry in listed), listed
    by_name = {
        entry["name"]: {key: entry[key] for key in ("kind", "version", "description")} for entry in listed
    }
    assert len(by_name) == len(listed), "a CRD is listed twice"
    assert by_name == crds_in_chart()


def test_crds_examples_are_the_shipped_examples() -> None:
    shipped = [
        manifest
        for name in ("pool.yaml", "goals.yaml")
        for manifest in yaml.safe_load_all((ROOT / "examples" / name).read_text())
        if manifest
    ]
    assert annotation("crdsExamples") == shipped


def test_every_example_is_of_a_listed_crd() -> None:
    """Artifact Hub shows an example under the CRD of its kind: one of no listed kind is never shown."""
    kinds = {entry["kind"] for entry in annotation("crds")}
    assert {example["kind"] for example in annotation("crdsExamples")} <= kinds
