"""``kafka-balancer demo``: its arguments; the demo itself is :mod:`kafka_balancer_dev.demo.scenario`,
in the development package, imported only when the command runs.

The development package is not in the wheel: the demo fetches and builds its beds with ``hack/`` and
applies the chart's CRDs, which only a checkout has. From an installed wheel the command says so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEV_PACKAGE = "kafka_balancer_dev"
NEEDS_CHECKOUT = (
    "the demo runs from a checkout of the kafka-balancer repository, not from an installed package: "
    "clone the repository and run hack/demo.sh in it"
)
# The CLI's code for a command that cannot run as given (cli.EXIT_BAD_INPUT; cli imports this module).
EXIT_NEEDS_CHECKOUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path("run/demo"),
        help="logs (the operator's, and the Kafka clients' own lines in kafka-clients.log), plan and "
        "report.png (default: run/demo)",
    )
    parser.add_argument("--fast", action="store_true", help="a 60 s warm-up in 3 steps instead of 2 min in 4")


def run_demo(args: argparse.Namespace) -> int:
    try:
        from kafka_balancer_dev.demo.scenario import DemoOptions, run
    except ModuleNotFoundError as err:
        # Only the package's own absence means "no checkout"; anything missing inside it is a real fault.
        if err.name != DEV_PACKAGE:
            raise
        print(f"kafka-balancer demo: {NEEDS_CHECKOUT}", file=sys.stderr)
        return EXIT_NEEDS_CHECKOUT
    return run(DemoOptions(args.work_dir, fast=args.fast))
