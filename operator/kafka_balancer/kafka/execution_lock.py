"""One process per state file, and a cancel's request to stop: flocks next to the state file, which
the kernel releases even on SIGKILL, so neither outlives the process that holds it."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
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


class CancelMarker:
    """``<state>.cancel``: a running ``cancel`` asks the executor of that state file to stop
    submitting moves.

    The file is a request only while the cancel that made it lives: that cancel holds an flock on it,
    which the kernel releases however the process ends. A marker nobody holds was left by a cancel
    that failed or was killed; the executor ignores it and removes it, so it blocks no later run.
    """

    def __init__(self, state_path: Path) -> None:
        self.path = state_path.with_name(state_path.name + ".cancel")
        self._fd: int | None = None

    def hold(self) -> None:
        """Place the marker, locked before it is visible (an executor never sees it unheld)."""
        self.release()
        draft = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.replace(draft, self.path)
        self._fd = fd

    def keep(self) -> None:
        """Place the marker again if it is gone: an executor may have removed a stale one just as
        this one replaced it."""
        if self._fd is not None and not self._is_ours():
            self.hold()

    def release(self) -> None:
        """Remove the marker (if it is still ours) and drop the lock."""
        if self._fd is None:
            return
        if self._is_ours():
            self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def requested(self, log: Callable[[str], None]) -> bool:
        """Whether a live cancel holds the marker; a stale one is removed, with one line saying why."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            if _same_file(fd, self.path):
                self.path.unlink(missing_ok=True)
                log(f"ignored and removed {self.path}: no running cancel holds it (one failed or was killed)")
            return False
        finally:
            os.close(fd)

    def _is_ours(self) -> bool:
        return self._fd is not None and _same_file(self._fd, self.path)


def _same_file(fd: int, path: Path) -> bool:
    try:
        found, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino)
