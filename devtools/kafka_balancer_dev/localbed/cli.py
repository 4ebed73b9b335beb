"""``python -m kafka_balancer_dev.localbed kafka up|down``: start or stop a long-lived local bed.

``up`` prints the bootstrap servers on stdout and leaves the processes running, recorded in the run
directory's state file; ``down`` stops exactly those processes by PID.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kafka, kube_cli, node_cli

LIBS_ENV = "KB_KAFKA_LIBS"


def _default_run_dir(component: str) -> Path:
    root = Path(os.environ.get("KB_ROOT", Path.cwd()))
    return root / "run" / component


def _kafka_up(args: argparse.Namespace) -> int:
    libs = args.libs or os.environ.get(LIBS_ENV)
    if not libs:
        raise BedError(f"no Kafka jars: pass --libs or set {LIBS_ENV} (hack/kafka/provision.sh prints it)")
    started = time.monotonic()
    bed = kafka.KafkaBed(Path(libs), args.run_dir, brokers=args.brokers, racks=args.racks, heap=args.heap)
    bed.start()
    racks = ", ".join(f"{broker_id}:{rack}" for broker_id, rack in sorted(bed.racks.items()))
    elapsed = time.monotonic() - started
    print(f"Kafka bed up in {elapsed:.1f}s in {bed.run_dir}, brokers (id:rack) {racks}", file=sys.stderr)
    print(bed.bootstrap_servers)
    return 0


def _kafka_down(args: argparse.Namespace) -> int:
    stopped = kafka.STATE.stop_recorded(args.run_dir)
    print(f"stopped {', '.join(stopped) if stopped else 'nothing'} in {args.run_dir}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kafka_balancer_dev.localbed", description=__doc__)
    components = parser.add_subparsers(dest="component", required=True)
    kafka_parser = components.add_parser("kafka", help="the local Apache Kafka KRaft cluster")
    actions = kafka_parser.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="format and start a cluster, print its bootstrap servers")
    up.add_argument("--libs", help=f"directory of Kafka jars (default: ${LIBS_ENV})")
    up.add_argument("--brokers", type=int, default=4)
    up.add_argument("--racks", type=int, default=3)
    up.add_argument("--heap", default=kafka.DEFAULT_HEAP, help="JVM -Xmx of each node")
    up.set_defaults(handler=_kafka_up)
    down = actions.add_parser("down", help="stop the cluster recorded in the run directory")
    down.set_defaults(handler=_kafka_down)
    for sub in (up, down):
        sub.add_argument("--run-dir", type=Path, default=_default_run_dir("kafka"))
    kube_cli.add_parser(components, _default_run_dir("kube"))
    node_cli.add_parser(components, _default_run_dir("node"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except BedError as err:
        print(f"local bed: {err}", file=sys.stderr)
        return 1
    return code
