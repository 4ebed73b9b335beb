"""Where the Kafka clients' own log lines go: Python logging, never straight to the terminal.

librdkafka (under confluent-kafka) writes lines such as ``%4|…|GETPID|…`` and ``%3|…|FAIL|…`` to
stderr by itself unless the client is given a Python logger (its ``logger`` setting); an AdminClient
then hands them over only when it is polled, so the clients here poll before each call. kafka-python
logs through ``logging`` already (logger ``kafka``). The operator's log takes both; a CLI command
writes them to a file (``--kafka-log``), so the terminal keeps only the command's own lines.

librdkafka repeats a failing connection every few milliseconds (against a closed port, on stderr or
here alike): :class:`Repeats` lets one of each through per minute.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

CLIENT_LOG = logging.getLogger("kafka_balancer.librdkafka")
# Durations ("after 0ms in state CONNECT") differ between otherwise identical lines.
_DURATIONS = re.compile(r"\d+(?:\.\d+)?ms\b")


class Repeats(logging.Filter):
    """One line per distinct message (durations aside) per ``every_s``; the next one let through says
    how many were left out meanwhile."""

    def __init__(self, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.every_s = every_s
        self.clock = clock
        self._seen: dict[str, tuple[float, int]] = {}  # message → (when let through, left out since)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        key = _DURATIONS.sub("#ms", text)
        now = self.clock()
        shown, left_out = self._seen.get(key, (None, 0))
        if shown is not None and now - shown < self.every_s:
            self._seen[key] = (shown, left_out + 1)
            return False
        if left_out:
            record.msg, record.args = (
                f"{text} ({left_out} more like it in the last {self.every_s:.0f}s)",
                None,
            )
        self._seen[key] = (now, 0)
        return True


CLIENT_LOG.addFilter(Repeats())
# kafka-python's loggers; at INFO it logs every connection, noise even in a file.
KAFKA_PYTHON_LOG = logging.getLogger("kafka")
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def with_client_log(config: Mapping[str, Any]) -> dict[str, Any]:
    """A confluent-kafka client's settings with its log lines sent to :data:`CLIENT_LOG`."""
    return {**config, "logger": CLIENT_LOG}


def served(client: AdminClient) -> AdminClient:
    """``client``, after handing its queued log lines to the logger: an AdminClient does that only
    when polled, and the calls here poll nothing else."""
    client.poll(0)
    return client


def default_log_file() -> Path:
    """``$XDG_STATE_HOME/kafka-balancer/kafka-clients.log`` (``~/.local/state`` without the variable)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "kafka-balancer" / "kafka-clients.log"


def log_handler(path: Path | None) -> logging.Handler:
    """A handler appending to ``path`` (None: dropping the lines); OSError when it cannot be written."""
    if path is None:
        return logging.NullHandler()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    return handler


@contextmanager
def clients_logging_to(handler: logging.Handler) -> Iterator[None]:
    """While the block runs, both clients' lines go to ``handler`` instead of the root logger, whose
    last-resort handler would print their warnings on stderr."""
    levels = {CLIENT_LOG: logging.INFO, KAFKA_PYTHON_LOG: logging.WARNING}
    before = {logger: (logger.level, logger.propagate) for logger in levels}
    for logger, level in levels.items():
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, (level, propagate) in before.items():
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
        handler.close()
