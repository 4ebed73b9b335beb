"""Free TCP ports for the bed's servers, and whether something answers on one.

A port is chosen by binding it and letting go; the server that gets it binds it seconds later (a JVM
starting), and in that gap nothing else may take it. Two things did: the kernel's own choices (a
client's ``connect`` and every bind to port 0 draw from ``ip_local_port_range``, so a port the kernel
picked and released could be the next connection's source port), and this process's next choice (one
bed asks several times before its first server binds). So ports come from below the kernel's range,
where it never picks one by itself, and below Kubernetes' NodePort range (the node bed's services),
and a port is never handed out twice by one process. Test runs side by side on one machine (the
tiers that run beside each other) each take their own slice of that range, named by ``KB_BED_PORTS``
as ``slice/slices`` (``0/2`` and ``1/2``), so that neither hands out a port the other just has.
"""

from __future__ import annotations

import os
import random
import re
import socket
import ssl
import threading
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from kafka_balancer_dev.errors import BedError

LOOPBACK = "127.0.0.1"
_KERNEL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
# The kernel's default lower end, when its setting cannot be read.
_KERNEL_LOW = 32768
_NODE_PORTS = 30000
_SPAN = 16384
_LOWEST = 1024
SLICE_ENV = "KB_BED_PORTS"
_SLICE = re.compile(r"(\d+)/(\d+)")

_handed_out: set[int] = set()
_lock = threading.Lock()
_random = random.Random()


def port_pool() -> range:
    """The ports the bed's servers are given: up to 16,384 ports below the kernel's own range and
    below 30000, or this run's slice of them (``KB_BED_PORTS``)."""
    try:
        low = int(_KERNEL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = _KERNEL_LOW
    top = max(_LOWEST, min(low, _NODE_PORTS))
    pool = range(max(_LOWEST, top - _SPAN), top)
    share = os.environ.get(SLICE_ENV, "")
    if not share:
        return pool
    found = _SLICE.fullmatch(share)
    if found is None or not int(found[1]) < int(found[2]):
        raise BedError(f"{SLICE_ENV}={share!r}: expected slice/slices, as 0/2, with slice below slices")
    index, slices = int(found[1]), int(found[2])
    size = len(pool) // slices
    return range(pool.start + index * size, pool.start + (index + 1) * size)


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """Return ``count`` distinct ports free on ``host`` now, none handed out before by this process.

    Another process choosing ports on purpose could still take one before the caller binds it;
    callers detect that as a failed start, whose message names the cause from the server's log.
    """
    pool = port_pool()
    with _lock, ExitStack() as stack:
        ports: list[int] = []
        for port in _random.sample(pool, len(pool)):
            if port in _handed_out:
                continue
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                sock.bind((host, port))
            except OSError:  # something listens there, or holds it: try the next one
                continue
            ports.append(port)
            if len(ports) == count:
                _handed_out.update(ports)
                return ports
    raise BedError(f"no {count} free ports on {host} in {pool.start}-{pool.stop - 1}")


def free_port(host: str = LOOPBACK) -> int:
    """Return one port free on ``host`` now (see :func:`free_ports`)."""
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
