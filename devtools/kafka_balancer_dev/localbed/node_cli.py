"""``python -m kafka_balancer.localbed node up|down``: start or stop the machine's single-node Kubernetes.

``up`` provisions (cached), builds the operator image (cached), starts the node with the image loaded,
prints the kubeconfig path on stdout and leaves the node running; ``down`` undoes everything the node
did on this machine, also after a crash, and is harmless when nothing runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kafka_balancer_dev.localbed import kube, node
from kafka_balancer_dev.localbed.node_host import HostJournal


def _up(args: argparse.Namespace) -> int:
    kube_binaries = kube.provision()
    binaries = node.provision()
    image = node.build_operator_image()
    started = time.monotonic()
    bed = node.NodeBed(kube_binaries, binaries, args.run_dir, images=[image.archive])
    bed.start()
    print(
        f"node {node.NODE_NAME} Ready in {time.monotonic() - started:.1f}s at {bed.api.server} with image "
        f"{image.name}; kubectl is {kube_binaries.kubectl}, helm is {kube_binaries.helm}",
        file=sys.stderr,
    )
    print(bed.api.kubeconfig)
    return 0


def _down(args: argparse.Namespace) -> int:
    undone = HostJournal().undo()
    print(f"undone: {'; '.join(undone) if undone else 'nothing'}", file=sys.stderr)
    return 0


def add_parser(
    components: argparse._SubParsersAction[argparse.ArgumentParser], default_run_dir: Path
) -> None:
    """Add the ``node`` component to the ``components`` subparsers of the localbed CLI."""
    parser = components.add_parser("node", help="a single-node Kubernetes (needs root; one per machine)")
    actions = parser.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="provision, build the image, start the node, print its kubeconfig")
    up.add_argument("--run-dir", type=Path, default=default_run_dir)
    up.set_defaults(handler=_up)
    down = actions.add_parser("down", help="undo everything the node did on this machine")
    down.set_defaults(handler=_down)
