"""``kafka-balancer report``: what a plan does to each broker, as a PNG, an HTML page and a table.

Pure rendering: ``build`` turns a snapshot's cluster and the cluster after the plan into
``ReportData``; ``png``, ``html`` and ``table`` each render it one way.
"""
