"""Free TCP ports on the loopback interface, and whether something answers on one."""

from __future__ import annotations

import socket
import ssl
import urllib.request
from contextlib import ExitStack

LOOPBACK = "127.0.0.1"


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """Return ``count`` distinct ports that were free on ``host`` a moment ago.

    All sockets stay bound until every port is chosen, so the ports are distinct; another process
    can still take one before the caller binds it, which callers detect as a failed start.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(int(sock.getsockname()[1]))
        return ports


def free_port(host: str = LOOPBACK) -> int:
    """Return one port that was free on ``host`` a moment ago."""
    return free_ports(1, host)[0]


def accepts_connections(port: int, host: str = LOOPBACK, timeout_s: float = 0.5) -> bool:
    """Whether something listens on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def answers_ok(url: str, timeout_s: float = 2.0, context: ssl.SSLContext | None = None) -> bool:
    """Whether an HTTP GET of ``url`` answers 200 (a liveness or readiness endpoint); ``context``
    trusts an https server's CA."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as response:
            return int(response.status) == 200
    except OSError:
        return False
