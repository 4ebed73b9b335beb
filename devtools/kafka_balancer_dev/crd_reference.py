"""docs/crd-reference.md, generated from the CRDs (``crds/*.yaml``) so the reference cannot drift from them.

Run ``python -m kafka_balancer_dev.crd_reference`` after changing a CRD; a unit test fails while the
committed page differs from what this renders.
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from kafka_balancer_dev.checkout import repo_root

WIDTH = 100
_BLOCK_START = re.compile(r"([-+*>#|]|\d+[.)])(\s|$)")
HEADER = """\
# CRD reference

<!-- Generated from crds/*.yaml by `python -m kafka_balancer_dev.crd_reference`: do not edit. -->

Every field of the custom resources, as the CRDs in [`crds/`](../crds) define them: its type, default,
allowed values and limits, and its description. The API server enforces all of it, and the rules
listed under an object (CEL validations) too, with the message shown. What the fields do together:
[usage.md](usage.md); the goals: [goals.md](goals.md).
"""


def crd_files(root: Path) -> list[Path]:
    return sorted((root / "crds").glob("*.yaml"))


def render(files: Sequence[Path]) -> str:
    """The whole page for these CRD files, in their order."""
    sections = [HEADER]
    for path in files:
        sections.append("\n".join(_crd(yaml.safe_load(path.read_text()), path.name)))
    return "\n".join(sections).rstrip("\n") + "\n"


def _crd(crd: dict[str, Any], file_name: str) -> Iterator[str]:
    spec = crd["spec"]
    names = spec["names"]
    short = ", ".join(f"`{name}`" for name in names.get("shortNames", []))
    yield f"## {names['kind']}"
    yield ""
    for version in spec["versions"]:
        yield from _wrap(
            f"`{spec['group']}/{version['name']}`, {spec['scope'].lower()}; plural `{names['plural']}`, "
            f"short names {short}; from [`crds/{file_name}`](../crds/{file_name})."
        )
        yield ""
        yield from _columns(version.get("additionalPrinterColumns", []))
        yield from _fields("", version["schema"]["openAPIV3Schema"], required=False)


def _columns(columns: list[dict[str, Any]]) -> Iterator[str]:
    if not columns:
        return
    yield "Columns of `kubectl get` (`-o wide` adds those marked wide):"
    yield ""
    yield "| column | value | wide | description |"
    yield "|---|---|---|---|"
    for column in columns:
        wide = "yes" if column.get("priority", 0) > 0 else ""
        description = column.get("description", "")
        yield f"| {column['name']} | `{column['jsonPath']}` | {wide} | {description} |"
    yield ""


def _fields(path: str, schema: dict[str, Any], *, required: bool) -> Iterator[str]:
    if path:
        yield from _field(path, schema, required=required)
    items = schema.get("items", {})
    children = schema.get("properties") or items.get("properties") or {}
    child_required = set(schema.get("required") or items.get("required") or [])
    prefix = f"{path}[]." if "properties" in items else f"{path}." if path else ""
    for name, child in children.items():
        yield from _fields(prefix + name, child, required=name in child_required)


def _field(path: str, schema: dict[str, Any], *, required: bool) -> Iterator[str]:
    facts = [_type(schema), *(["required"] if required else []), *_limits(schema)]
    yield from _wrap(f"- **`{path}`**: {', '.join(facts)}.", indent="  ")
    description = schema.get("description", schema.get("items", {}).get("description"))
    if description:
        yield from _wrap(" ".join(description.split()), indent="  ", first="  ")
    validations = schema.get("x-kubernetes-validations", []) + schema.get("items", {}).get(
        "x-kubernetes-validations", []
    )
    for rule in validations:
        yield from _wrap(f"- Rule: {rule['message']} (`{rule['rule']}`)", indent="    ", first="  ")
    yield ""


def _type(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer or string"
    kind = str(schema.get("type", "any"))
    if kind == "array":
        return f"array of {schema.get('items', {}).get('type', 'any')}"
    return kind


def _limits(schema: dict[str, Any]) -> Iterator[str]:
    if "default" in schema:
        yield f"default {_literal(schema['default'])}"
    if "enum" in schema:
        yield "one of " + ", ".join(_literal(value) for value in schema["enum"])
    if "minimum" in schema and "maximum" in schema:
        yield f"{schema['minimum']} … {schema['maximum']}"
    elif "minimum" in schema:
        yield f"at least {schema['minimum']}"
    elif "maximum" in schema:
        yield f"at most {schema['maximum']}"
    if "minLength" in schema:
        yield f"at least {schema['minLength']} character(s)"
    if "maxLength" in schema:
        yield f"at most {schema['maxLength']} characters"
    if "maxItems" in schema:
        yield f"at most {schema['maxItems']} items"
    if schema.get("x-kubernetes-list-type") == "set":
        yield "no duplicates"
    if "x-kubernetes-list-map-keys" in schema:
        yield "one item per " + ", ".join(f"`{key}`" for key in schema["x-kubernetes-list-map-keys"])
    if "format" in schema:
        yield f"format {schema['format']}"
    if "pattern" in schema:
        yield f"pattern `{schema['pattern']}`"


def _literal(value: Any) -> str:
    return f"`{value if isinstance(value, str) else json.dumps(value)}`"


def _wrap(text: str, *, indent: str = "", first: str = "") -> list[str]:
    lines: list[str] = []
    for line in textwrap.wrap(
        text,
        width=WIDTH,
        initial_indent=first,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ):
        # A continuation line that opens with a list or heading marker would start a new block.
        if lines and _BLOCK_START.match(line.lstrip()):
            lines[-1] += " " + line.lstrip()
        else:
            lines.append(line)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/crd-reference.md from the checkout's crds/*.yaml."""
    root = repo_root()
    parser = argparse.ArgumentParser(
        prog="python -m kafka_balancer_dev.crd_reference", description=main.__doc__
    )
    parser.add_argument("--output", type=Path, default=root / "docs" / "crd-reference.md")
    args = parser.parse_args(argv)
    args.output.write_text(render(crd_files(root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
