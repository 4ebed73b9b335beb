"""Plans and execution states larger than a ConfigMap round-trip through the real apiserver."""

from __future__ import annotations

import gzip
import json
import math
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest

from kafka_balancer.errors import ForeignConfigMap, KubernetesError, WriteConflict
from kafka_balancer.k8s import blobs
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.state_mirror import PART_MOVES, StateMirror
from kafka_balancer.kafka.execution_state import ExecutionState, Move, MoveStatus
from kafka_balancer_dev.localbed import kube

NAMESPACE = "kb-test-blobs"
OWNER = PoolId(NAMESPACE, "main", "0b1c9a52-5a53-4c4e-9d1c-000000000001")


@pytest.fixture(scope="module")
def client(kube_bed: kube.KubeBed) -> Iterator[Kube]:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield Kube(str(kube_bed.kubeconfig))
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def big_plan(moves: int) -> bytes:
    """A reassignment document of ``moves`` partitions, the size a large drain produces."""
    rng = random.Random(5)
    partitions = [
        {"topic": f"topic-{p // 50}", "partition": p % 50, "replicas": rng.sample(range(1, 300), 3)}
        for p in range(moves)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, indent=1).encode()


def test_a_small_document_stays_readable_text(kube_bed: kube.KubeBed, client: Kube) -> None:
    document = big_plan(10)
    blobs.store(client, NAMESPACE, "small-plan", OWNER, {"plan.id": "a"}, "plan.json", document)

    got = json.loads(kube_bed.kubectl("get", "cm", "small-plan", "-n", NAMESPACE, "-o", "json").stdout)
    assert got["data"]["plan.json"].encode() == document
    assert blobs.load(client, NAMESPACE, "small-plan", OWNER, "plan.json") == ({"plan.id": "a"}, document)


def test_a_document_over_one_mebibyte_round_trips(client: Kube) -> None:
    document = big_plan(60_000)
    assert len(document) > 3 * 1024 * 1024  # the apiserver refuses a ConfigMap over 1 MiB

    blobs.store(client, NAMESPACE, "big-plan", OWNER, {"plan.id": "b"}, "plan.json", document)

    fields, loaded = blobs.load(client, NAMESPACE, "big-plan", OWNER, "plan.json") or ({}, b"")
    assert loaded == document and fields["plan.id"] == "b"


def test_a_document_split_over_several_config_maps_round_trips_and_a_torn_set_is_refused(
    client: Kube,
) -> None:
    document = random.Random(9).randbytes(700_000)  # incompressible: several 100 kB chunks
    blobs.store(client, NAMESPACE, "split", OWNER, {"plan.id": "c"}, "state.json", document, limit=100_000)

    fields, loaded = blobs.load(client, NAMESPACE, "split", OWNER, "state.json") or ({}, b"")
    assert loaded == document
    assert int(fields["chunks"]) == math.ceil(len(gzip.compress(document)) / 100_000) == 8
    client.write_config_map(NAMESPACE, "split-3", OWNER, {}, {"state.json.gz": b"something else"})
    with pytest.raises(KubernetesError, match="incomplete"):
        blobs.load(client, NAMESPACE, "split", OWNER, "state.json")


def test_a_stale_conditional_writer_is_refused_and_cannot_tear_the_current_chunk_set(client: Kube) -> None:
    first = random.Random(1).randbytes(300_000)
    second = random.Random(2).randbytes(300_000)
    stale = random.Random(3).randbytes(300_000)
    written = blobs.store_if(
        client, NAMESPACE, "cond", OWNER, {"plan.id": "d"}, "state.json", first, blobs.ABSENT, limit=100_000
    )
    _, _, read = blobs.load_versioned(client, NAMESPACE, "cond", OWNER, "state.json") or (
        {},
        b"",
        blobs.ABSENT,
    )
    assert read == written
    # Another process read the same version and wrote first.
    blobs.store_if(
        client, NAMESPACE, "cond", OWNER, {"plan.id": "d"}, "state.json", second, read, limit=100_000
    )

    with pytest.raises(WriteConflict):
        blobs.store_if(
            client, NAMESPACE, "cond", OWNER, {"plan.id": "d"}, "state.json", stale, read, limit=100_000
        )
    fields, loaded = blobs.load(client, NAMESPACE, "cond", OWNER, "state.json") or ({}, b"")
    assert loaded == second and fields["plan.id"] == "d"
    # The first set's chunks were deleted once the head named the second.
    assert client.read_config_map(NAMESPACE, f"cond-{read.chunk_set}-1") is None


def test_a_config_map_someone_else_made_under_a_pools_name_is_neither_read_nor_overwritten(
    kube_bed: kube.KubeBed, client: Kube
) -> None:
    # Someone who may write ConfigMaps in the namespace makes the pool's plan ConfigMap first.
    planted = big_plan(3).decode()
    made = kube_bed.kubectl(
        "-n", NAMESPACE, "create", "configmap", "main-plan", "--from-literal=plan.id=a",
        f"--from-literal=plan.json={planted}",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr

    with pytest.raises(ForeignConfigMap, match="was not made by the operator for BrokerPool main"):
        blobs.load(client, NAMESPACE, "main-plan", OWNER, "plan.json")
    with pytest.raises(ForeignConfigMap, match="it is neither read nor overwritten"):
        blobs.store(client, NAMESPACE, "main-plan", OWNER, {"plan.id": "b"}, "plan.json", big_plan(5))

    got = json.loads(kube_bed.kubectl("get", "cm", "main-plan", "-n", NAMESPACE, "-o", "json").stdout)
    assert got["data"] == {"plan.id": "a", "plan.json": planted}
    assert "ownerReferences" not in got["metadata"]


def test_a_large_execution_state_resumes_exactly_from_its_parts_after_a_step(client: Kube) -> None:
    pool = PoolId(NAMESPACE, "parts", OWNER.uid)
    moves = tuple(
        Move(f"topic-{i // 50}", i % 50, (1, 2, 3), (4, 2, 3), size=10**9 + i)
        for i in range(5 * PART_MOVES + 3)
    )
    state = ExecutionState(moves, created_at=1.0, updated_at=1.0, throttle_rate=10**6)
    mirror = StateMirror(client, pool)
    mirror.load()
    mirror.write("p1", state, force=True)
    first = named_parts(client, "parts-execution")

    batch = list(state.moves)
    for i in range(2 * PART_MOVES, 2 * PART_MOVES + 50):
        batch[i] = replace(batch[i], status=MoveStatus.IN_FLIGHT, started_at=2.0)
    state = replace(state, moves=tuple(batch), updated_at=2.0)
    assert mirror.write("p1", state)

    replaced = first - named_parts(client, "parts-execution")
    assert len(replaced) == 1  # one part written anew, the one it replaced deleted
    assert client.read_config_map(NAMESPACE, blobs.part_name("parts-execution", min(replaced))) is None
    assert StateMirror(client, pool).load() == ("p1", state)


def named_parts(client: Kube, head: str) -> set[str]:
    found = client.read_config_map(NAMESPACE, head)
    assert found is not None
    return set(found.data[blobs.PARTS].split())
