"""One small local SparkSession for the whole pytest session (the machine is shared)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from kafka_balancer.scoring.session import local_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_session("local[2]", app_name="kafka-balancer-tests")
    yield session
    session.stop()
