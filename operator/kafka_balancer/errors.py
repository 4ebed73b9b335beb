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


class KafkaAccessDenied(KafkaOperationError):
    """Kafka's ACLs keep part of the cluster from the principal (topics it may not describe, consumer
    groups whose offsets it may not read): a plan made on what it sees would ignore the rest, so
    nothing is planned. ``str()`` names a few of them and how many."""


class ExecutionError(KafkaOperationError):
    """A plan's execution was refused, stalled or could not be verified."""


class ExecutionHalted(ExecutionError):
    """An execution stopped at a batch boundary because it was paused, or its mode no longer lets it
    run; ``str()`` says why. Resumable: the same plan goes on when it is allowed again."""


class ExecutionCancelled(ExecutionError):
    """An execution stopped because its plan was cancelled on request (the pool's cancel annotation):
    its moves in flight were cancelled and its throttles removed; ``str()`` says how many, as words
    that follow "cancelled" ("on request (…): 2 move(s) in flight cancelled, …"). Never resumed: the
    plan is not executed again."""


class MetricsSourceError(KafkaBalancerError):
    """The optional Prometheus source of broker cpu and network failed or answered unusably."""


class ScoringError(KafkaBalancerError):
    """The Spark scoring job failed or produced unusable output."""


class KubernetesError(KafkaBalancerError):
    """A Kubernetes API operation of the operator failed."""


class KubernetesUnavailable(KubernetesError):
    """The Kubernetes API did not answer usably (connection refused, timeout, 5xx): worth retrying."""


class ForeignConfigMap(KubernetesError):
    """A ConfigMap under one of a pool's names was not made by the operator for that pool; ``str()``
    names it and what to do."""


class UnreadableConfigMap(KubernetesError):
    """A pool's chunked ConfigMap document cannot be trusted: a part is missing, its checksum differs,
    or its fields were edited into nonsense; ``str()`` names the ConfigMap."""


class ConfigMapTooLarge(KubernetesError):
    """What is to be written beside a chunked document does not fit one ConfigMap; ``str()`` names the
    ConfigMap and the sizes."""


class WriteConflict(KubernetesError):
    """A conditional write found the object changed since it was read: another writer came first."""


class ExecutionFenced(KafkaBalancerError):
    """This process no longer owns the pool's execution: its lease ran out or another process holds
    it, or a state write found a newer writer. It must stop writing to Kafka at once."""
