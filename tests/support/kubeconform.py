"""kubeconform (hack/kubeconform/provision.sh) with JSON schemas generated from the bed's apiserver.

kubeconform's usual schemas are downloaded from GitHub, out of reach of the tests. The apiserver's
``/openapi/v2`` holds the same definitions, the CRDs it serves included: they are written as
kubeconform reads a local schema directory, one file per kind that ``$ref``s the definitions file, and
strict (an object closes its properties), as kubeconform's own generator writes them."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFINITIONS = "_definitions.json"
# kubeconform's file name for a kind: lower-case kind, then the first label of the group and the version.
SCHEMA_LOCATION = "{{ .ResourceKind }}{{ .KindSuffix }}.json"
_INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
# Maps of schemas, whose keys are names (a property may be called "format" or "oneOf"), not keywords.
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
# Manifests write a quantity as a string or a number (cpu: 1); /openapi/v2 says string.
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def _json_schema(node: Any) -> Any:
    """An OpenAPI v2 schema as JSON Schema draft 4 says it: int-or-string spelled out, objects closed."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("format") == "int-or-string" or node.get("x-kubernetes-int-or-string"):
        return {key: value for key, value in node.items() if key not in ("type", "format")} | _INT_OR_STRING
    schema = {
        key: {name: _json_schema(sub) for name, sub in value.items()}
        if key in _SCHEMA_MAPS
        else _json_schema(value)
        for key, value in node.items()
    }
    open_object = "additionalProperties" in schema or schema.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in schema and not open_object:
        schema["additionalProperties"] = False
    return schema


def write_schemas(openapi_v2: dict[str, Any], directory: Path) -> int:
    """Write ``directory`` as kubeconform's schema location; returns the number of kinds written."""
    definitions = {name: _json_schema(schema) for name, schema in openapi_v2["definitions"].items()}
    definitions[_QUANTITY] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / DEFINITIONS).write_text(json.dumps({"definitions": definitions}))
    kinds = 0
    for name, schema in openapi_v2["definitions"].items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            group = gvk["group"].split(".")[0]
            suffix = f"-{group}-{gvk['version']}" if group else f"-{gvk['version']}"
            reference = {"$ref": f"{DEFINITIONS}#/definitions/{name}"}
            (directory / f"{gvk['kind'].lower()}{suffix}.json").write_text(json.dumps(reference))
            kinds += 1
    return kinds


@dataclass(frozen=True)
class Kubeconform:
    """``binary`` validating against the schemas in ``schemas`` (written by :func:`write_schemas`)."""

    binary: Path
    schemas: Path

    def validate(self, *manifests: Path) -> subprocess.CompletedProcess[str]:
        """kubeconform of the files: a kind without a schema is an error, not skipped."""
        return subprocess.run(
            [
                str(self.binary),
                "-strict",
                "-summary",
                "-schema-location",
                str(self.schemas / SCHEMA_LOCATION),
                *map(str, manifests),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
