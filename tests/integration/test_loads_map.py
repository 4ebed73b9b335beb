"""A pool's ``<pool>-loads`` ConfigMap through the real apiserver, at a size one ConfigMap cannot hold."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Iterator
from typing import Any

import pytest

from kafka_balancer.formats.report import report_document
from kafka_balancer.goals.spec import default_goal_set
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.loads_map import PARTITIONS_KEY, store_loads, stored_partition_counts
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.planner.optimizer import plan as make_plan
from kafka_balancer.report.document import report_text
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.synthetic import SyntheticSpec, generate

NAMESPACE = "kb-test-loads"
POOL = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-000000000057")
# Kafka's longest topic name.
MAX_TOPIC = 249


@pytest.fixture(scope="module")
def client(kube_bed: kube.KubeBed) -> Iterator[Kube]:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield Kube(str(kube_bed.kubeconfig))
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    cluster = generate(SyntheticSpec(brokers=6, partitions=120, hot_brokers=1, seed=3))
    return report_document(cluster, make_plan(cluster, default_goal_set()))


def long_topics(count: int, seed: int) -> dict[str, int]:
    """``count`` topics named up to Kafka's 249 characters, with 1 to 12 partitions each."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "._-"
    counts = {}
    for i in range(count):
        head = f"t{i:05d}."
        length = rng.randint(MAX_TOPIC - 20, MAX_TOPIC)
        counts[head + "".join(rng.choices(alphabet, k=length - len(head)))] = rng.randint(1, 12)
    return counts


def test_4500_long_topic_names_round_trip_and_the_report_stays_readable_text(
    kube_bed: kube.KubeBed, client: Kube, report: dict[str, Any]
) -> None:
    counts = long_topics(4_500, seed=57)
    assert max(map(len, counts)) == MAX_TOPIC
    assert len(json.dumps(counts)) > 1024 * 1024  # more than one ConfigMap holds

    store_loads(client, POOL, report, counts)

    assert stored_partition_counts(client, POOL) == counts
    got = json.loads(kube_bed.kubectl("get", "cm", "main-loads", "-n", NAMESPACE, "-o", "json").stdout)
    assert got["data"]["report.txt"] == report_text(report)
    assert json.loads(got["data"]["report.json"]) == report


def test_the_next_plan_replaces_them_whether_it_grew_or_shrank(client: Kube, report: dict[str, Any]) -> None:
    grown = long_topics(6_000, seed=58)
    store_loads(client, POOL, report, grown)
    assert stored_partition_counts(client, POOL) == grown

    few = {"orders": 12, "payments": 6}
    store_loads(client, POOL, report, few)
    assert stored_partition_counts(client, POOL) == few


def test_counts_an_earlier_version_wrote_in_one_config_map_still_read(client: Kube) -> None:
    pool = PoolId(NAMESPACE, "older", POOL.uid)
    counts = {"orders": 12, "payments": 6}
    client.write_config_map(NAMESPACE, "older-loads", pool, {PARTITIONS_KEY: json.dumps(counts)})

    assert stored_partition_counts(client, pool) == counts


@pytest.mark.parametrize(
    "edited", ['{"orders": -1}', '{"orders": 1.5}', '{"orders": "12"}', '["orders"]', "not json"]
)
def test_counts_edited_into_anything_but_counts_are_taken_as_none(client: Kube, edited: str) -> None:
    pool = PoolId(NAMESPACE, "edited", POOL.uid)
    client.write_config_map(NAMESPACE, "edited-loads", pool, {PARTITIONS_KEY: edited})

    assert stored_partition_counts(client, pool) is None


def test_a_torn_chunk_set_is_taken_as_none(client: Kube, report: dict[str, Any]) -> None:
    pool = PoolId(NAMESPACE, "torn", POOL.uid)
    store_loads(client, pool, report, long_topics(9_000, seed=59))
    head = client.read_config_map(NAMESPACE, "torn-loads")
    assert head is not None and int(head.data["chunks"]) >= 2
    client.delete_config_map(NAMESPACE, "torn-loads-1")

    assert stored_partition_counts(client, pool) is None
