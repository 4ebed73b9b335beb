"""The cluster model: brokers, racks, partitions, replicas and their loads. Frozen, no I/O."""

from kafka_balancer.model.cluster import Broker, BrokerState, Cluster, Partition, PartitionLoad
from kafka_balancer.model.resources import RESOURCES, Resource

__all__ = ["RESOURCES", "Broker", "BrokerState", "Cluster", "Partition", "PartitionLoad", "Resource"]
