"""The JSON text of the documents we write (snapshot, plan): a line per top-level key, and a line
per element of a top-level list, so that a cluster's file stays readable, greppable and diffable
at any size.

Every element is written by the json module's C encoder: an ``indent`` would make json fall back
to its pure-Python encoder, several times slower on the largest snapshots.
"""

from __future__ import annotations

import json
from typing import Any


def document_text(document: dict[str, Any]) -> str:
    """``document`` as JSON; NaN and infinities, which JSON has no words for, raise ValueError."""
    members = []
    for key, value in document.items():
        name = json.dumps(key)
        if isinstance(value, list) and value:
            elements = ",\n  ".join(json.dumps(element, allow_nan=False) for element in value)
            members.append(f" {name}: [\n  {elements}\n ]")
        else:
            members.append(f" {name}: {json.dumps(value, allow_nan=False)}")
    return "{\n" + ",\n".join(members) + "\n}\n"
