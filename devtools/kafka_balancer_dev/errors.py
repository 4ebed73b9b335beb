"""The development package's own error, outside the product's error tree (``kafka_balancer.errors``).

The operator never starts a bed, so nothing in the product catches or maps it: the bed's command line
and ``kafka-balancer demo`` each turn it into one line and exit 1.
"""

from __future__ import annotations


class BedError(Exception):
    """A component of the local bed or the demo could not be provisioned, started or checked."""
