"""``kafka-balancer demo``: its arguments; the demo itself is :mod:`kafka_balancer_dev.demo.scenario`,
in the development package, imported only when the command runs."""

from __future__ import annotations

import argparse
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
    from kafka_balancer_dev.demo.scenario import DemoOptions, run

    return run(DemoOptions(args.work_dir, fast=args.fast))
