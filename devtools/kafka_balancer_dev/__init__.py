"""The development companion of ``kafka_balancer``: the local beds, the demo and the synthetic clusters.

It lives outside the wheel because it only works from a checkout: it runs ``hack/*.sh`` to fetch and
build the beds' components and reads the chart's CRDs. It may import the product; the product imports
it only lazily, in ``kafka-balancer demo``, and says how to get a checkout when it is absent.
"""
