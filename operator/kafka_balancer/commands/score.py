"""``kafka-balancer score``: sample store → snapshot.json, broker scores, candidates, manifest.

Imported lazily by the CLI, so ``plan`` never imports pyspark.
"""

from __future__ import annotations

import argparse
import sys

from kafka_balancer.scoring import job
from kafka_balancer.scoring.options import from_args


def run_score(args: argparse.Namespace) -> int:
    manifest = job.run(from_args(args))
    print(job.summary(manifest), file=sys.stderr)
    return 0
