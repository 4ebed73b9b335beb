"""``kafka-balancer demo``: the local beds, the operator and a skewed cluster, balanced before your eyes."""
