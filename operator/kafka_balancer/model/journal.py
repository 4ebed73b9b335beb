"""The journal of a working model's actions: how many were applied, the latest few, and those a
compound action may still take back."""

from __future__ import annotations

from collections import deque
from itertools import islice

# Actions remembered for whoever keeps what they touched up to date (an exchange applies two, a
# round of sheds apart up to one per two brokers).
JOURNAL = 256

Change = tuple[int, int, int]
"""(partition, source, destination) of one action."""


class Journal:
    """Every action applied to a working model, recorded as it is applied."""

    def __init__(self) -> None:
        # Bumped by every applied action, so goals can cache per-broker figures between actions.
        self.version = 0
        # The latest actions, oldest first: what was built a few actions ago is brought up to
        # date from them instead of rebuilt.
        self._latest: deque[Change] = deque(maxlen=JOURNAL)
        # Every action since ``begin`` while a compound action may still be undone.
        self._since_begin: list[Change] | None = None

    def record(self, part: int, src: int, dest: int) -> None:
        self.version += 1
        self._latest.append((part, src, dest))
        if self._since_begin is not None:
            self._since_begin.append((part, src, dest))

    def changes_since(self, version: int | None) -> list[Change] | None:
        """Every action applied since ``version``, oldest first; None when that is too far back
        to tell (or ``version`` is None)."""
        if version is None or not 0 <= self.version - version <= len(self._latest):
            return None
        latest = list(islice(reversed(self._latest), self.version - version))
        latest.reverse()
        return latest

    def begin(self) -> None:
        """Start recording actions, so that the working model's ``undo`` can take them back."""
        self._since_begin = []

    def commit(self) -> None:
        """Keep the actions since ``begin``."""
        self._since_begin = None

    def end(self) -> list[Change]:
        """Stop recording: the actions since ``begin``, oldest first, for ``undo`` to take back."""
        changes, self._since_begin = self._since_begin or [], None
        return changes
