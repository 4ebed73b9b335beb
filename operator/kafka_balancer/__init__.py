"""kafka-balancer: keeps Apache Kafka clusters balanced.

Layers, inner to outer (an inner layer never imports an outer one; ``lint-imports`` checks it):
``model`` ← ``goals`` ← ``planner`` (pure) ← ``scoring`` (PySpark) | ``kafka`` (collector,
executor) | ``reconcile`` ← ``k8s`` (kopf handlers) ← ``cli``.

``__version__`` is the installed distribution's version (pyproject.toml's, through its metadata), so
``--version``, the operator's first log line and its ``kafka_balancer_build_info`` metric never drift
from what was installed.
"""

import os
from importlib.metadata import PackageNotFoundError, version

# The planner's array operations are many and small: OpenBLAS's worker threads spin between them
# and burn a core for nothing. Only takes effect before numpy's first import, and only where the
# user chose nothing.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

try:
    __version__ = version("kafka-balancer")
except PackageNotFoundError:
    # Sources on the path without an install (no metadata): say so rather than guess a number.
    __version__ = "unknown (not installed)"
