"""Starting the operator: logging, then kopf with the operator's settings in its memo."""

from __future__ import annotations

import logging
import time

import kopf

from kafka_balancer import __version__

# Imported for its registrations: kopf runs the handlers the module declares.
from kafka_balancer.k8s import handlers
from kafka_balancer.k8s.settings import OperatorSettings

__all__ = ["handlers", "run_operator"]


def run_operator(settings: OperatorSettings) -> None:
    """Blocks until the operator is stopped (SIGINT/SIGTERM)."""
    json_lines = settings.log_format == "json"
    kopf.configure(
        debug=settings.log_level == "debug",
        quiet=settings.log_level == "warning",
        log_format=kopf.LogFormat.JSON if json_lines else kopf.LogFormat.FULL,
        # In JSON, the object a line is about is a field of its own, not a prefix of the message.
        log_refkey="object" if json_lines else None,
    )
    # kafka-python logs every connection at INFO and aiohttp every probe: noise that buries ours.
    for noisy in ("kafka", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    # The first line of the log: which version a bug report's log came from.
    logging.getLogger(__name__).info("kafka-balancer %s starting", __version__)
    kopf.run(
        clusterwide=not settings.namespaces,
        namespaces=list(settings.namespaces),
        peering_name=settings.peering,
        standalone=settings.standalone,
        priority=settings.priority if settings.priority is not None else time.time_ns() // 1_000_000,
        liveness_endpoint=settings.liveness,
        memo=kopf.Memo(settings=settings),
    )
