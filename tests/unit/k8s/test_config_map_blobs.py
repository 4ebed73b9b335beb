"""What ``k8s/blobs.py`` refuses to write or read, against the in-memory Kubernetes; the round trips
through the real apiserver are tests/integration/test_config_map_blobs.py."""

from __future__ import annotations

import gzip
import hashlib
import random
import resource
import zlib

import pytest

from kafka_balancer.errors import ConfigMapTooLarge, UnreadableConfigMap
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.port import PoolId
from tests.unit.k8s.kube_fake import FakeKube

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


def test_a_gzip_bomb_in_an_edited_config_map_is_refused_without_inflating_it() -> None:
    kube = FakeKube()
    # 1 GiB of zeros in about 1 MB: what anyone who may edit ConfigMaps can plant, checksum and all.
    bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    data = b"".join(bomb.compress(bytes(2**20)) for _ in range(1024)) + bomb.flush()
    assert len(data) < blobs.LIMIT * 2
    head = {"chunks": "1", "sha256": hashlib.sha256(data).hexdigest()}
    kube.write_config_map("kafka", "doc", POOL, head, {"k.gz": data})

    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(UnreadableConfigMap, match="expands past 256 MiB: the operator never wrote it"):
        blobs.load(kube, "kafka", "doc", POOL, "k")
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kib < 384 * 1024, f"the peak grew by {grown_kib} KiB, not the 1 GiB it holds"


def test_a_document_cut_short_is_not_gzip() -> None:
    whole = gzip.compress(b"{}" * 1000)
    with pytest.raises(UnreadableConfigMap, match="cut short"):
        blobs.gunzip(whole[:-8], blobs.MAX_DOCUMENT, "doc")
    assert blobs.gunzip(whole, blobs.MAX_DOCUMENT, "doc") == b"{}" * 1000
