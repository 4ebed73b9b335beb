"""The cluster model: the frozen cluster (brokers, racks, partitions and their loads), the numeric
working model the planner mutates, the load math, and the plan. No I/O."""

from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.resources import RESOURCES, Resource

__all__ = ["RESOURCES", "Broker", "BrokerState", "Cluster", "Partition", "PartitionLoad", "Resource"]
