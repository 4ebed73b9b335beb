"""The operator's service layer: pure decisions between the kopf handlers and the kafka/planner layers.

No kopf, no Kubernetes or Kafka client here; time comes in as an argument.
"""
