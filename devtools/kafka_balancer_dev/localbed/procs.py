"""Generic process helpers of the local bed: start with logs to a file, wait with a deadline, stop by PID.

Every process is started in its own session, so signals reach only it, and is stopped by its PID
(SIGTERM, then SIGKILL after a grace period) — never by name: other people's processes share the machine.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from kafka_balancer_dev.errors import BedError

T = TypeVar("T")

# A line saying why a process died: a Java throwable with its message, the JVM's own refusal, a Go
# program's fatal log or panic.
_CAUSE = re.compile(r"(?:Exception|Error)\b:|Error occurred|\bfatal\b|\bpanic\b", re.IGNORECASE)
_CAUSE_TAIL_BYTES = 256 * 1024
_CAUSE_CHARS = 300


class ManagedProcess:
    """A child process of the bed whose stdout and stderr go to ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            try:
                self._popen = subprocess.Popen(
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=cwd,
                    env=None if env is None else dict(env),
                    start_new_session=True,
                )
            except OSError as err:
                raise BedError(f"{name}: cannot start {argv[0]}: {err}") from err

    @property
    def pid(self) -> int:
        return self._popen.pid

    def exit_code(self) -> int | None:
        """The exit code, or None while it runs."""
        return self._popen.poll()

    def ensure_running(self, hint: Path | None = None) -> None:
        """Raise :class:`BedError` naming the process, why it died (the last such line of its logs:
        ``hint``, then its output) and where to read more, if it exited."""
        code = self.exit_code()
        if code is not None:
            paths = [p for p in (hint, self.log_path) if p is not None]
            logs = " and ".join(str(p) for p in paths)
            cause = last_cause(paths)
            said = f" ({cause})" if cause else ""
            raise BedError(f"{self.name} exited with code {code} while starting{said}; see {logs}")

    def stop(self, grace_s: float = 30.0) -> None:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL; reaps the child."""
        if self._popen.poll() is not None:
            return
        self._popen.send_signal(signal.SIGTERM)
        try:
            self._popen.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()

    def kill(self) -> None:
        """SIGKILL at once, no shutdown of its own; reaps the child."""
        if self._popen.poll() is None:
            self._popen.kill()
        self._popen.wait()

    def signal_stop(self) -> None:
        """Send SIGTERM without waiting (to stop several processes in parallel)."""
        if self._popen.poll() is None:
            self._popen.send_signal(signal.SIGTERM)


def last_cause(logs: Sequence[Path]) -> str | None:
    """The last line of the first log that has one saying why a process died (see ``_CAUSE``), cut
    to a few hundred characters; a stack frame never counts."""
    for log in logs:
        try:
            with log.open("rb") as file:
                file.seek(max(0, file.seek(0, os.SEEK_END) - _CAUSE_TAIL_BYTES))
                lines = file.read().decode(errors="replace").splitlines()
        except OSError:
            continue
        for line in reversed(lines):
            text = line.strip()
            if _CAUSE.search(text) and not text.startswith("at "):
                return text[:_CAUSE_CHARS]
    return None


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state letter follows the parenthesised command name, which may itself contain spaces.
    return stat.rpartition(")")[2].split()[0] != "Z"


def pid_matches(pid: int, marker: str) -> bool:
    """Whether live ``pid``'s command line contains ``marker`` (guards against a reused PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline and pid_alive(pid)


def stop_pid(pid: int, marker: str, grace_s: float = 30.0) -> bool:
    """Stop a process known only by PID (e.g. from a state file), if it is still the one we started.

    ``marker`` must occur in its command line. Returns whether a process was stopped.
    """
    if not pid_matches(pid, marker):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while pid_alive(pid):
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace_s
        time.sleep(0.1)
    return True


def wait_until(check: Callable[[], T | None], *, timeout_s: float, what: str, interval_s: float = 0.25) -> T:
    """Poll ``check`` until it returns something other than None (or False), or raise at the deadline.

    ``check`` may itself raise :class:`BedError` to fail fast (for example when a process died).
    ``what`` names the awaited condition and where to look, for the error message.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result is not None and result is not False:
            return result
        if time.monotonic() > deadline:
            raise BedError(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)
