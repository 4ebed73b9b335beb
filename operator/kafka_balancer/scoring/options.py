"""Options of the scoring job, shared by ``kafka-balancer score`` and ``spark-submit`` (no pyspark)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

DEFAULT_WINDOW_MS = 300_000
DEFAULT_TOP = 5
# The job's JVMs (embedded, or the driver and executors on a cluster) are short-lived and small:
# their CPU goes mostly to warming up, not to the rows. The client compiler alone (C1) compiles
# Spark's code paths for a fraction of C2's CPU, and the serial collector runs no GC threads
# beside the job on a pod of a core or less.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@dataclass(frozen=True, slots=True)
class ScoreOptions:
    samples: str  # local path or s3a:// URI of a sample store
    topology: str  # local path or s3a:// URI (the run's inputs beside its outputs)
    goals: str
    out: str  # local path or s3a:// URI
    window_ms: int = DEFAULT_WINDOW_MS
    windows: int = 1
    min_samples_per_window: int = 1
    master: str | None = "local[2]"  # None: the master spark-submit configured
    top: int = DEFAULT_TOP
    seal_file: str | None = None  # where the outputs' digests go (a Spark driver's termination log)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", required=True, help="sample store (local dir or s3a:// URI)")
    parser.add_argument("--topology", required=True, help="brokers JSON (snapshot brokers): path or URI")
    parser.add_argument("--goals", required=True, help="BalancerGoal manifests (YAML or JSON): path or URI")
    parser.add_argument("--out", required=True, help="output dir (local dir or s3a:// URI)")
    parser.add_argument("--window-ms", type=_positive, default=DEFAULT_WINDOW_MS, help="window length")
    parser.add_argument("--windows", type=_positive, default=1, help="newest complete windows to use")
    parser.add_argument(
        "--min-samples-per-window",
        type=_positive,
        default=1,
        help="a partition with fewer samples in a used window is excluded",
    )
    parser.add_argument("--master", default="local[2]", help="Spark master of an embedded session")
    parser.add_argument("--top", type=_positive, default=DEFAULT_TOP, help="candidates per broker and goal")
    parser.add_argument(
        "--seal-file",
        help="write the outputs' SHA-256 digests here (the operator's Spark drivers: /dev/termination-log)",
    )


def from_args(args: argparse.Namespace) -> ScoreOptions:
    return ScoreOptions(
        samples=args.samples,
        topology=args.topology,
        goals=args.goals,
        out=args.out,
        window_ms=args.window_ms,
        windows=args.windows,
        min_samples_per_window=args.min_samples_per_window,
        master=args.master,
        top=args.top,
        seal_file=args.seal_file,
    )
