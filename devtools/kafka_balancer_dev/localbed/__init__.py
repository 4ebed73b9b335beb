"""The local test bed: real Apache Kafka (and later Kubernetes) processes on 127.0.0.1.

Used by the integration and end-to-end tests and by ``kafka-balancer demo``; never by the operator itself.
"""
