"""The Kubernetes Events a pass emits on its pool, as the reconcile modules make them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    """A Kubernetes Event on the pool: ``reason`` CamelCase, ``message`` a sentence (see sentence())."""

    type: str  # Normal | Warning
    reason: str
    message: str


def sentence(text: str) -> str:
    """An Event's message as ``kubectl describe`` shows it to a person: capitalised, ending in a full
    stop (messages embed error texts, which start lower-case and end bare)."""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."
