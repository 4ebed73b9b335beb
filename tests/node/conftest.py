"""The node tier's shared objects: the chart installed once with the image built here, and a Kafka bed
that pods reach on the node's bridge."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import node
from kafka_balancer_dev.localbed.kafka import KafkaBed

CHART = Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer"
OPERATOR_NAMESPACE = "kafka-balancer"
RELEASE = "kb"


@pytest.fixture(scope="session")
def operator_release(node_bed: node.NodeBed) -> float:
    """``helm install`` of the chart with its default values (its default image is the one
    hack/image/build.sh builds); returns the seconds from install to a Ready operator."""
    started = time.monotonic()
    installed = node_bed.helm(
        "install",
        RELEASE,
        str(CHART),
        "-n",
        OPERATOR_NAMESPACE,
        "--create-namespace",
        "--wait",
        "--timeout",
        "5m",
    )
    ready_after_s = time.monotonic() - started
    assert installed.returncode == 0, installed.stderr
    return ready_after_s


@pytest.fixture(scope="session")
def pod_kafka(
    node_bed: node.NodeBed, kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBed]:
    """4 brokers in racks a, b, c, a that also listen on the node's address, where pods connect."""
    bed = KafkaBed(kafka_libs, tmp_path_factory.mktemp("pod-kafka"), pod_host=node.NODE_IP)
    try:
        bed.start()
    except BedError as err:
        pytest.fail(f"the Kafka bed for pods did not start: {err}", pytrace=False)
    try:
        yield bed
    finally:
        bed.stop()
