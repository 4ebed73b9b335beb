"""Turning a pydantic validation failure into the one-line message the CLI prints."""

from __future__ import annotations

import re

from pydantic import ValidationError


def location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def one_line(error: ValidationError, prefix: str = "") -> str:
    first = error.errors(include_url=False)[0]
    loc = location(tuple(p for p in first["loc"] if not str(p).startswith("function-after")))
    where = ".".join(p for p in (prefix, loc) if p)
    value = first.get("input")
    shown = "" if isinstance(value, dict | list) or value is None else f" (got {_redacted(value)!r})"
    return f"{where}: {first['msg']}{shown}"


# A user and password in a URL (scheme://user:password@host): never shown back, in status or a log.
_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def _redacted(value: object) -> object:
    return _USERINFO.sub("***@", value) if isinstance(value, str) else value
