"""``python -m kafka_balancer_dev.localbed kube up|down``: start or stop a long-lived Kubernetes API bed.

``up`` provisions the binaries (cached), starts etcd and kube-apiserver, prints the kubeconfig path on
stdout and leaves the processes running, recorded in the run directory's state file; ``down`` stops
exactly those processes by PID.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kafka_balancer_dev.localbed import kube


def _up(args: argparse.Namespace) -> int:
    binaries = kube.provision()
    started = time.monotonic()
    bed = kube.KubeBed(binaries, args.run_dir)
    bed.start()
    elapsed = time.monotonic() - started
    print(
        f"Kubernetes API bed up in {elapsed:.1f}s at {bed.server} "
        f"(contexts: {kube.ADMIN}, {kube.DEVELOPER}); kubectl is {binaries.kubectl}, helm is {binaries.helm}",
        file=sys.stderr,
    )
    print(bed.kubeconfig)
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = kube.STATE.stop_recorded(args.run_dir)
    print(f"stopped {', '.join(stopped) if stopped else 'nothing'} in {args.run_dir}", file=sys.stderr)
    return 0


def add_parser(
    components: argparse._SubParsersAction[argparse.ArgumentParser], default_run_dir: Path
) -> None:
    """Add the ``kube`` component to the ``components`` subparsers of the localbed CLI."""
    parser = components.add_parser("kube", help="the local Kubernetes API (etcd + kube-apiserver)")
    actions = parser.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="provision and start the API bed, print its kubeconfig path")
    up.set_defaults(handler=_up)
    down = actions.add_parser("down", help="stop the bed recorded in the run directory")
    down.set_defaults(handler=_down)
    for sub in (up, down):
        sub.add_argument("--run-dir", type=Path, default=default_run_dir)
