"""kafka-balancer: keeps Apache Kafka clusters balanced.

Layers, inner to outer (an inner layer never imports an outer one; ``lint-imports`` checks it):
``model`` ← ``goals`` ← ``planner`` (pure) ← ``scoring`` (PySpark) | ``kafka`` (collector,
executor) | ``reconcile`` ← ``k8s`` (kopf handlers) ← ``cli``.
"""

__version__ = "0.1.0"
