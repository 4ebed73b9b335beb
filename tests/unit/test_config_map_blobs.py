"""What ``k8s/blobs.py`` refuses to write or read, against the in-memory Kubernetes; the round trips
through the real apiserver are tests/integration/test_config_map_blobs.py."""

from __future__ import annotations

import hashlib
import random

import pytest

from kafka_balancer.errors import ConfigMapTooLarge, UnreadableConfigMap
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.port import PoolId
from tests.unit.kube_fake import FakeKube

POOL = PoolId("kafka", "main", "uid-main")


def test_fields_that_leave_too_little_room_for_the_document_are_refused_before_any_write() -> None:
    kube = FakeKube()

    with pytest.raises(ConfigMapTooLarge, match="ConfigMap kafka/main-loads: its fields take"):
        blobs.store(
            kube, "kafka", "main-loads", POOL, {"report.txt": "x" * 40_000}, "k", b"{}", limit=100_000
        )
    assert kube.config_maps == {}


def test_the_fields_beside_a_document_count_against_each_chunk() -> None:
    kube = FakeKube()
    fields = {"report.txt": "x" * 20_000}
    payload = random.Random(4).randbytes(150_000)  # incompressible: two chunks of the 80 kB left

    blobs.store(kube, "kafka", "doc", POOL, fields, "k", payload, limit=100_000)

    head = kube.config_maps[("kafka", "doc")]
    whole = sum(len(k) + len(v) for k, v in head.data.items()) + len(head.binary["k.gz"])
    assert whole <= 100_000 and head.data["chunks"] == "2"
    read, document = blobs.load(kube, "kafka", "doc", POOL, "k") or ({}, b"")
    assert document == payload and read["report.txt"] == fields["report.txt"]


@pytest.mark.parametrize(
    ("chunks", "said"), [("many", "its chunks or sha256 field was edited"), ("1", "is not gzip")]
)
def test_a_head_edited_into_nonsense_is_unreadable_not_a_crash(chunks: str, said: str) -> None:
    kube = FakeKube()
    # The checksum sits beside the chunks: whoever edits one can make it agree.
    head = {"chunks": chunks, "sha256": hashlib.sha256(b"not gzip").hexdigest()}
    kube.write_config_map("kafka", "doc", POOL, head, {"k.gz": b"not gzip"})

    with pytest.raises(UnreadableConfigMap, match=said):
        blobs.load(kube, "kafka", "doc", POOL, "k")
