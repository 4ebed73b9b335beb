"""Documents larger than one ConfigMap (1 MiB): gzip, split over ``<name>``, ``<name>-1``, ….

A plan of a large cluster (tens of thousands of moves) and, above all, its execution state outgrow
a ConfigMap. Small documents stay plain text under ``key`` so ``kubectl get cm`` shows them as they
are; larger ones go gzipped into ``binaryData`` (``<key>.gz``), chunked, with the chunk count and a
SHA-256 of the whole in the first ConfigMap, so a half-written set is detected, not trusted.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Mapping

from kafka_balancer.errors import KubernetesError
from kafka_balancer.k8s.port import KubePort, PoolId

# Below the apiserver's 1 MiB per ConfigMap, with room for the other keys and the metadata.
LIMIT = 900 * 1024
CHUNKS, DIGEST = "chunks", "sha256"


def chunk_name(name: str, index: int) -> str:
    return name if index == 0 else f"{name}-{index}"


def pack(payload: bytes, limit: int = LIMIT) -> list[bytes]:
    compressed = gzip.compress(payload, mtime=0)
    return [compressed[i : i + limit] for i in range(0, len(compressed), limit)] or [b""]


def unpack(chunks: list[bytes], digest: str) -> bytes:
    joined = b"".join(chunks)
    if hashlib.sha256(joined).hexdigest() != digest:
        raise KubernetesError("a chunked ConfigMap document is incomplete (its checksum differs)")
    return gzip.decompress(joined)


def store(
    kube: KubePort,
    namespace: str,
    name: str,
    owner: PoolId,
    fields: Mapping[str, str],
    key: str,
    payload: bytes,
    limit: int = LIMIT,
) -> None:
    """Write ``payload`` under ``key`` (plain when it fits) next to the small ``fields``."""
    if len(payload) <= limit:
        kube.write_config_map(namespace, name, owner, {**fields, key: payload.decode()})
        return
    chunks = pack(payload, limit)
    # The later chunks first: the first ConfigMap, which names the count and checksum, is the commit.
    for index in range(len(chunks) - 1, 0, -1):
        kube.write_config_map(namespace, chunk_name(name, index), owner, {}, {f"{key}.gz": chunks[index]})
    head = {**fields, CHUNKS: str(len(chunks)), DIGEST: hashlib.sha256(b"".join(chunks)).hexdigest()}
    kube.write_config_map(namespace, name, owner, head, {f"{key}.gz": chunks[0]})


def load(kube: KubePort, namespace: str, name: str, key: str) -> tuple[dict[str, str], bytes] | None:
    """The fields and the document ``store`` wrote; None when absent (KubernetesError if torn)."""
    found = kube.read_config_map(namespace, name)
    if found is None:
        return None
    fields, binary = dict(found.data), found.binary
    if key in fields:
        return fields, fields.pop(key).encode()
    if f"{key}.gz" not in binary or CHUNKS not in fields:
        return None
    chunks = [binary[f"{key}.gz"]]
    for index in range(1, int(fields[CHUNKS])):
        part = kube.read_config_map(namespace, chunk_name(name, index))
        if part is None or f"{key}.gz" not in part.binary:
            raise KubernetesError(f"ConfigMap {namespace}/{chunk_name(name, index)} is missing")
        chunks.append(part.binary[f"{key}.gz"])
    return fields, unpack(chunks, fields[DIGEST])
