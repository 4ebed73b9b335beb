"""Starting the operator: kopf settings (peering, annotation storage, events), login, metrics, run."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
from kubernetes import client, config

from kafka_balancer.k8s import handlers, metrics

ANNOTATION_PREFIX = "kafkabalancer.io"


@dataclass(frozen=True)
class OperatorOptions:
    kubeconfig: Path | None
    namespaces: tuple[str, ...] = ()
    peering: str = "kafka-balancer"
    standalone: bool = False
    # None: the start time in ms. Equal priorities make kopf freeze every replica, and a dead
    # replica's peering record lingers for its lifetime, so a fresh process must outrank it.
    priority: int | None = None
    liveness: str | None = None
    metrics_port: int | None = None
    state_dir: Path = field(default_factory=lambda: Path("/tmp/kafka-balancer"))


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    # Handler progress in our annotations, not in status (the status schema is ours and pruned).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, key="last-handled-configuration"
    )
    # Only our own Events (plan ready, execution, drain) and kopf's warnings reach users.
    settings.posting.level = logging.WARNING
    # Without the peering objects two replicas would both act: refuse to run unpeered.
    settings.peering.mandatory = True
    settings.watching.server_timeout = 300


class _Login:
    kubeconfig: Path | None = None


@kopf.on.login()
def login(logger: kopf.Logger, **kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's client login, from ``--kubeconfig`` when given (kopf alone reads only the default path)."""
    if _Login.kubeconfig is None:
        return kopf.login_via_client(logger=logger, **kwargs)
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(_Login.kubeconfig), client_configuration=cfg)  # type: ignore[no-untyped-call]
    header = cfg.get_api_key_with_prefix("BearerToken") or cfg.get_api_key_with_prefix("authorization")
    scheme, _, token = (header or "").partition(" ")
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        scheme=scheme or None,
        token=token or None,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
    )


def run_operator(options: OperatorOptions) -> None:
    """Blocks until the operator is stopped (SIGINT/SIGTERM)."""
    _Login.kubeconfig = options.kubeconfig
    kopf.configure(verbose=False)
    # kafka-python logs every connection at INFO and aiohttp every probe: noise that buries ours.
    for noisy in ("kafka", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    handlers.setup(str(options.kubeconfig) if options.kubeconfig else None, options.state_dir)
    if options.metrics_port is not None:
        metrics.serve(options.metrics_port)
    kopf.run(
        clusterwide=not options.namespaces,
        namespaces=list(options.namespaces),
        peering_name=options.peering,
        standalone=options.standalone,
        priority=options.priority if options.priority is not None else time.time_ns() // 1_000_000,
        liveness_endpoint=options.liveness,
    )
