"""A small local SparkSession for the CLI, tests and benchmarks.

On a cluster (``spark-submit``, SparkApplication) the master and resources come from the
submitter, and ``getOrCreate`` returns that session with only the job's own settings added.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from kafka_balancer.scoring.options import JVM_OPTIONS

# Wherever the job runs: Arrow moves the model and the broker loads to the driver.
_JOB_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
# Embedded only, kept small on purpose: the job runs next to the operator and on shared CI
# machines. Two shuffle partitions suit the rolled-up rows (partitions × windows) on two cores;
# on a cluster the default with adaptive coalescing applies. Adaptive execution would re-plan
# every stage to coalesce two partitions it cannot shrink.
_LOCAL_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": JVM_OPTIONS,
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


def local_session(master: str | None = "local[2]", app_name: str = "kafka-balancer-score") -> SparkSession:
    """``master=None`` keeps the master and resources ``spark-submit`` configured."""
    builder = SparkSession.builder.appName(app_name)
    conf = dict(_JOB_CONF)
    if master is not None:
        # Embedded: Python workers must run this interpreter (the one that has kafka_balancer),
        # not whatever ``python3`` is first on PATH; pyspark reads the variable, not a conf.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master)
        conf |= _LOCAL_CONF
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
