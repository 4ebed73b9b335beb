"""``kafka-balancer demo``: see :mod:`kafka_balancer_dev.demo.scenario`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=Path("run/demo"),
        help="logs, plan and report.png (default: run/demo)",
    )
    parser.add_argument("--fast", action="store_true", help="a 60 s warm-up in 3 steps instead of 2 min in 4")


def run_demo(args: argparse.Namespace) -> int:
    from kafka_balancer_dev.demo.scenario import Demo, DemoOptions

    demo = Demo(DemoOptions(args.work_dir, fast=args.fast), say=lambda line: print(line, flush=True))
    try:
        demo.run()
    except BaseException:
        if not demo.interrupted:
            raise
        print("interrupted: everything the demo started is stopped", file=sys.stderr, flush=True)
        return 130
    return 0
