"""Documents larger than one ConfigMap (1 MiB): gzip, split over ``<name>``, ``<name>-1``, ….

A plan of a large cluster (tens of thousands of moves) and, above all, its execution state outgrow
a ConfigMap. Small documents stay plain text under ``key`` so ``kubectl get cm`` shows them as they
are; larger ones go gzipped into ``binaryData`` (``<key>.gz``), chunked, with the chunk count and a
SHA-256 of the whole in the first ConfigMap, so a half-written set is detected, not trusted.

A document rewritten often but changed a little at a time (a large execution state) is stored in
parts instead (``store_parts``): each part in a ConfigMap named by its checksum, the head naming
them in order, so a change rewrites the head and the parts it changed.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_balancer.errors import ConfigMapTooLarge, UnreadableConfigMap
from kafka_balancer.k8s.port import KubePort, PoolId, check_owned

# Below the apiserver's 1 MiB per ConfigMap, with room for the other keys and the metadata.
LIMIT = 900 * 1024
CHUNKS, DIGEST = "chunks", "sha256"
# Conditionally written documents name their chunk set: see store_if.
CHUNK_SET = "chunk-set"
# Parts are named by this many hex digits of their SHA-256 (128 bits: no two parts ever share one).
DIGEST_HEX = 32
PARTS = "parts"
# What the head of a chunked document adds to its fields: key names, a count, a SHA-256, a set name.
HEAD_BYTES = 160
# The least a chunk holds: below, a document would take ever more ConfigMaps of ever smaller chunks.
MIN_ROOM = 64 * 1024
# The most a stored document may expand to when read: far above what the operator writes (the state
# of the largest plans the planner makes), far below what would exhaust its memory.
MAX_DOCUMENT = 256 * 2**20
INFLATE_STEP = 16 * 2**20


@dataclass(frozen=True)
class Version:
    """What a conditional writer read: the head's resourceVersion (None: no head yet), the chunk
    set the head names (empty: none, or the unconditional naming) and the parts it names."""

    resource_version: str | None
    chunk_set: str = ""
    chunks: int = 0
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Part:
    """One gzipped piece of a document stored in parts (:func:`store_parts`), named by its content."""

    digest: str
    data: bytes


def pack_part(payload: bytes) -> Part:
    data = gzip.compress(payload, mtime=0)
    return Part(hashlib.sha256(data).hexdigest()[:DIGEST_HEX], data)


def part_name(name: str, digest: str) -> str:
    return f"{name}-part-{digest}"


ABSENT = Version(None)


def chunk_name(name: str, index: int) -> str:
    return name if index == 0 else f"{name}-{index}"


def pack(payload: bytes, limit: int = LIMIT) -> list[bytes]:
    compressed = gzip.compress(payload, mtime=0)
    return [compressed[i : i + limit] for i in range(0, len(compressed), limit)] or [b""]


def unpack(chunks: list[bytes], digest: str) -> bytes:
    joined = b"".join(chunks)
    if hashlib.sha256(joined).hexdigest() != digest:
        raise UnreadableConfigMap("a chunked ConfigMap document is incomplete (its checksum differs)")
    # The checksum sits in the same ConfigMap: whoever can edit one can make both agree.
    return gunzip(joined, MAX_DOCUMENT, "a chunked ConfigMap document")


def gunzip(data: bytes, limit: int, what: str) -> bytes:
    """``data`` un-gzipped, refused (UnreadableConfigMap naming ``what``) when it is not gzip or
    would expand past ``limit`` bytes: whoever can edit a ConfigMap can put a few hundred kB there
    that expand to gigabytes, and inflating it whole would take the operator's memory."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    expanded = bytearray()
    pending = data
    # A step at a time, so that what is refused never takes more than the limit and a step.
    while pending:
        try:
            expanded += inflater.decompress(pending, INFLATE_STEP)
        except zlib.error as err:
            raise UnreadableConfigMap(f"{what} is not gzip ({err})") from None
        if len(expanded) > limit:
            raise UnreadableConfigMap(
                f"{what} expands past {limit // 2**20} MiB: the operator never wrote it"
            )
        pending = inflater.unconsumed_tail
    if not inflater.eof or inflater.unused_data:
        raise UnreadableConfigMap(f"{what} is not gzip (it is cut short or has data after its end)")
    return bytes(expanded)


def room(namespace: str, name: str, fields: Mapping[str, str], limit: int) -> int:
    """What is left of ``limit`` for the document once the ``fields`` beside it are counted: the
    apiserver's limit is on the whole ConfigMap, so large fields would tip a chunk over it."""
    used = sum(len(k.encode()) + len(v.encode()) for k, v in fields.items()) + HEAD_BYTES
    if limit - used < MIN_ROOM:
        raise ConfigMapTooLarge(
            f"ConfigMap {namespace}/{name}: its fields take {used} bytes, which leaves less than "
            f"{MIN_ROOM} of the {limit} a ConfigMap holds for its document"
        )
    return limit - used


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
    """Write ``payload`` under ``key`` (plain when it fits) next to the small ``fields``
    (ConfigMapTooLarge when they leave less than MIN_ROOM of ``limit``)."""
    limit = room(namespace, name, fields, limit)
    if len(payload) <= limit:
        kube.write_config_map(namespace, name, owner, {**fields, key: payload.decode()})
        return
    chunks = pack(payload, limit)
    # The later chunks first: the first ConfigMap, which names the count and checksum, is the commit.
    for index in range(len(chunks) - 1, 0, -1):
        kube.write_config_map(namespace, chunk_name(name, index), owner, {}, {f"{key}.gz": chunks[index]})
    head = {**fields, CHUNKS: str(len(chunks)), DIGEST: hashlib.sha256(b"".join(chunks)).hexdigest()}
    kube.write_config_map(namespace, name, owner, head, {f"{key}.gz": chunks[0]})


def store_if(
    kube: KubePort,
    namespace: str,
    name: str,
    owner: PoolId,
    fields: Mapping[str, str],
    key: str,
    payload: bytes,
    expected: Version,
    limit: int = LIMIT,
) -> Version:
    """``store``, but only if the head ConfigMap is still at ``expected`` (else WriteConflict).

    The head is the commit point, so it is the one conditional write. A chunked document's chunks
    go first, under names made from their checksum (``<name>-<set>-<i>``): a stale writer's chunks
    can never overwrite the chunks the current head names (same names mean the same bytes), and its
    head write then fails. The previous set is deleted once the new head names another; a refused
    writer's chunks stay orphaned until the pool (their owner) is deleted.
    """
    limit = room(namespace, name, fields, limit)
    if len(payload) <= limit:
        version = kube.write_config_map_if(
            namespace, name, owner, {**fields, key: payload.decode()}, None, expected.resource_version
        )
        written = Version(version)
    else:
        chunks = pack(payload, limit)
        digest = hashlib.sha256(b"".join(chunks)).hexdigest()
        chunk_set = digest[:12]
        for index in range(1, len(chunks)):
            part = _set_chunk_name(name, chunk_set, index)
            kube.write_config_map(namespace, part, owner, {}, {f"{key}.gz": chunks[index]})
        head = {**fields, CHUNKS: str(len(chunks)), DIGEST: digest, CHUNK_SET: chunk_set}
        version = kube.write_config_map_if(
            namespace, name, owner, head, {f"{key}.gz": chunks[0]}, expected.resource_version
        )
        written = Version(version, chunk_set, len(chunks))
    _delete_replaced(kube, namespace, name, expected, written)
    return written


def store_parts(
    kube: KubePort,
    namespace: str,
    name: str,
    owner: PoolId,
    fields: Mapping[str, str],
    key: str,
    head: bytes,
    parts: Sequence[Part],
    expected: Version,
) -> Version:
    """A document too large to rewrite whole on every change: a small ``head`` under ``key`` in the
    head ConfigMap, and ``parts`` in ConfigMaps of their own (``<name>-part-<digest>``), named by
    their content and written only when the head last written (``expected``) did not name them. The
    head is written conditionally as in :func:`store_if`, and is the commit: a stale writer's parts
    never overwrite a current one (a name is its content), and the parts no head names any more are
    deleted once it is written."""
    digests = tuple(p.digest for p in parts)
    named = {**fields, PARTS: " ".join(digests)}
    limit = room(namespace, name, named, LIMIT)
    if len(head) > limit:
        raise ConfigMapTooLarge(
            f"ConfigMap {namespace}/{name}: the head of its document takes {len(head)} bytes"
        )
    present = set(expected.parts)
    for part in parts:
        if part.digest not in present:
            kube.write_config_map(
                namespace, part_name(name, part.digest), owner, {}, {f"{key}.gz": part.data}
            )
            present.add(part.digest)
    version = kube.write_config_map_if(
        namespace, name, owner, {**named, key: head.decode()}, None, expected.resource_version
    )
    written = Version(version, parts=digests)
    _delete_replaced(kube, namespace, name, expected, written)
    return written


def _delete_replaced(kube: KubePort, namespace: str, name: str, expected: Version, written: Version) -> None:
    """The chunks and parts the head named before ``written`` and names no more."""
    if expected.chunk_set and expected.chunk_set != written.chunk_set:
        for index in range(1, expected.chunks):
            kube.delete_config_map(namespace, _set_chunk_name(name, expected.chunk_set, index))
    for digest in sorted(set(expected.parts) - set(written.parts)):
        kube.delete_config_map(namespace, part_name(name, digest))


def _set_chunk_name(name: str, chunk_set: str, index: int) -> str:
    return f"{name}-{chunk_set}-{index}"


def load(
    kube: KubePort, namespace: str, name: str, owner: PoolId, key: str
) -> tuple[dict[str, str], bytes] | None:
    """The fields and the document ``store`` wrote; None when absent (UnreadableConfigMap if torn or
    edited, ForeignConfigMap if not the pool's own)."""
    found = load_versioned(kube, namespace, name, owner, key)
    return None if found is None else (found[0], found[1])


def load_versioned(
    kube: KubePort, namespace: str, name: str, owner: PoolId, key: str
) -> tuple[dict[str, str], bytes, Version] | None:
    """``load`` with the version a conditional writer (``store_if``) starts from."""
    found = kube.read_config_map(namespace, name)
    if found is None:
        return None
    check_owned(found, namespace, name, owner)
    fields, binary = dict(found.data), found.binary
    if key in fields:
        return fields, fields.pop(key).encode(), Version(found.resource_version)
    if f"{key}.gz" not in binary or CHUNKS not in fields:
        return None
    chunk_set = fields.pop(CHUNK_SET, "")
    if not (fields[CHUNKS].isascii() and fields[CHUNKS].isdigit()) or DIGEST not in fields:
        raise UnreadableConfigMap(f"ConfigMap {namespace}/{name}: its {CHUNKS} or {DIGEST} field was edited")
    count = int(fields[CHUNKS])
    chunks = [binary[f"{key}.gz"]]
    for index in range(1, count):
        part_name = _set_chunk_name(name, chunk_set, index) if chunk_set else chunk_name(name, index)
        part = kube.read_config_map(namespace, part_name)
        if part is None or f"{key}.gz" not in part.binary:
            raise UnreadableConfigMap(f"ConfigMap {namespace}/{part_name} is missing")
        check_owned(part, namespace, part_name, owner)
        chunks.append(part.binary[f"{key}.gz"])
    return fields, unpack(chunks, fields[DIGEST]), Version(found.resource_version, chunk_set, count)


def load_parts(
    kube: KubePort, namespace: str, name: str, owner: PoolId, key: str
) -> tuple[dict[str, str], bytes, list[tuple[Part, bytes]], Version] | None:
    """The fields, head and parts (each with its payload) :func:`store_parts` wrote, with the
    version to write on from; None when the head is absent or was not written in parts
    (UnreadableConfigMap if a part is missing or not the one named, ForeignConfigMap if not the
    pool's own)."""
    found = kube.read_config_map(namespace, name)
    if found is None:
        return None
    check_owned(found, namespace, name, owner)
    fields = dict(found.data)
    if PARTS not in fields or key not in fields:
        return None
    digests = _named_parts(namespace, name, fields)
    head = fields.pop(key).encode()
    fields.pop(PARTS)
    payloads = []
    budget = MAX_DOCUMENT  # for the parts together
    for digest in digests:
        part_map = part_name(name, digest)
        part = kube.read_config_map(namespace, part_map)
        if part is None or f"{key}.gz" not in part.binary:
            raise UnreadableConfigMap(f"ConfigMap {namespace}/{part_map} is missing")
        check_owned(part, namespace, part_map, owner)
        data = part.binary[f"{key}.gz"]
        if hashlib.sha256(data).hexdigest()[:DIGEST_HEX] != digest:
            raise UnreadableConfigMap(f"ConfigMap {namespace}/{part_map} is not the part its name says")
        payload = gunzip(data, budget, f"ConfigMap {namespace}/{part_map}")
        budget -= len(payload)
        payloads.append((Part(digest, data), payload))
    return fields, head, payloads, Version(found.resource_version, parts=digests)


def _named_parts(namespace: str, name: str, fields: Mapping[str, str]) -> tuple[str, ...]:
    digests = tuple(fields[PARTS].split())
    if not all(len(d) == DIGEST_HEX and all(c in "0123456789abcdef" for c in d) for d in digests):
        raise UnreadableConfigMap(f"ConfigMap {namespace}/{name}: its {PARTS} field was edited")
    return digests
