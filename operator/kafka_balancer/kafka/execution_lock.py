"""One process per state file: an flock next to it (released by the kernel even on SIGKILL)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class StateLock:
    def __init__(self, state_path: Path) -> None:
        self.path = state_path.with_name(state_path.name + ".lock")
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def cancel_marker(state_path: Path) -> Path:
    """A file whose presence asks a running executor to stop submitting moves."""
    return state_path.with_name(state_path.name + ".cancel")
