"""``kafka-balancer run``: the operator (kopf), against the cluster of a kubeconfig or in-cluster."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from kafka_balancer.errors import InputError

LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster config)")
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        dest="namespaces",
        help="watch only this namespace (repeatable; default: every namespace)",
    )
    parser.add_argument("--peering", default="kafka-balancer", help="kopf peering object name")
    parser.add_argument(
        "--standalone", action="store_true", help="run without peering (only for a single local run)"
    )
    parser.add_argument(
        "--priority",
        type=int,
        help="peering priority; the highest live replica acts, the others stand by "
        "(default: the start time in milliseconds, so a restarted or newer replica takes over at once)",
    )
    parser.add_argument(
        "--peering-lifetime",
        type=int,
        default=60,
        help="seconds a silent replica still counts as alive in the peering (default: 60); executions "
        "are fenced by their own lease whatever this is",
    )
    parser.add_argument(
        "--lease-namespace",
        help="namespace of the Leases that let one pool at a time execute on each Kafka cluster "
        "(default: KAFKA_BALANCER_NAMESPACE, which the chart sets to the release's, else default)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="text (default), or json: one JSON object per line, with the object a line is about",
    )
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="default: info")
    parser.add_argument("--liveness", help="liveness endpoint, e.g. http://0.0.0.0:8080/healthz")
    parser.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path("/tmp/kafka-balancer"),  # k8s/settings.py's DEFAULT_STATE_DIR
        help="where execution state files and TLS keys are kept (default: /tmp/kafka-balancer)",
    )


def run_run(args: argparse.Namespace) -> int:
    if args.peering_lifetime < 10:
        raise InputError(f"--peering-lifetime {args.peering_lifetime}: must be at least 10 seconds")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise InputError(f"--kubeconfig {args.kubeconfig}: no such file")
    from kafka_balancer.k8s.main import run_operator
    from kafka_balancer.k8s.settings import OperatorSettings

    # The environment (the chart's scoring values) first, the flags over it.
    env = OperatorSettings.from_env()
    settings = replace(
        env,
        namespace=args.lease_namespace or env.namespace,
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespaces),
        peering=args.peering,
        standalone=args.standalone,
        priority=args.priority,
        peering_lifetime_s=args.peering_lifetime,
        liveness=args.liveness,
        metrics_port=args.metrics_port,
        log_format=args.log_format,
        log_level=args.log_level,
        state_dir=args.state_dir,
    )
    run_operator(settings)
    return 0
