"""The one error tree of kafka-balancer.

Every error the project raises on purpose derives from :class:`KafkaBalancerError`.
The CLI maps the two user-facing families to its documented exit codes:

* :class:`InputError` — bad input (snapshot, goals, plan, flags): exit 2, one line.
* :class:`InfeasibleError` — hard goals cannot be satisfied: exit 3, says which and why.

Everything else is an operational failure (Kafka, Prometheus, Kubernetes, Spark).
"""

from __future__ import annotations


class KafkaBalancerError(Exception):
    """Base of every error kafka-balancer raises on purpose."""


class InputError(KafkaBalancerError):
    """A user-supplied file, manifest or flag is invalid. ``str()`` is one line naming the field."""


class InfeasibleError(KafkaBalancerError):
    """Hard goals cannot all hold; ``str()`` names the goal (and partition or broker) and why."""


class KafkaOperationError(KafkaBalancerError):
    """Talking to Kafka failed, or Kafka refused or did not complete an operation."""


class KafkaUnavailableError(KafkaOperationError):
    """Kafka did not answer in time: a broker that hangs or left, or the controller (requests brokers
    forward to it). Worth riding out: the executor retries its round, as its state is committed before
    every change. ``str()`` names the operation and, for the controller's requests, the controller."""


class ExecutionError(KafkaOperationError):
    """A plan's execution was refused, stalled or could not be verified."""


class MetricsSourceError(KafkaBalancerError):
    """The optional Prometheus source of broker cpu and network failed or answered unusably."""


class ScoringError(KafkaBalancerError):
    """The Spark scoring job failed or produced unusable output."""


class KubernetesError(KafkaBalancerError):
    """A Kubernetes API operation of the operator failed."""
