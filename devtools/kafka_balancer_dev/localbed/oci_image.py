"""Packing a root filesystem's layers into an OCI image archive, so the node bed runs images built here.

The machine has no Docker engine and no registry: ``hack/image/build.sh`` and ``hack/node/provision.sh``
make layer tarballs with GNU tar and this module wraps them into the OCI image layout (``oci-layout``,
``index.json``, ``blobs/sha256/…``) as one tar file, which ``ctr images import`` (and ``docker load``,
``podman load``) accept. Layers are gzip-compressed: containerd keeps both the compressed blob and the
unpacked snapshot, so compression halves what an image costs on disk.

``python -m kafka_balancer_dev.localbed.oci_image --name REF --layer L.tar [--layer …] --output IMAGE.tar``
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ImageConfig:
    """What the runtime needs to start a container of the image (the OCI config's ``config``)."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    user: str = ""
    working_dir: str = "/"
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Blob:
    """A content-addressed file of the archive."""

    digest: str  # "sha256:…"
    size: int
    path: Path


@dataclass(frozen=True, slots=True)
class Layer:
    blob: Blob
    diff_id: str  # digest of the uncompressed tar, what the config lists


def _copy_hashing(read: Callable[[int], bytes], write: Callable[[bytes], object] | None, digest: Any) -> int:
    """Stream ``read`` into ``digest`` (and ``write``); return the byte count."""
    size = 0
    while chunk := read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if write is not None:
            write(chunk)
    return size


def _blob_of_file(path: Path) -> Blob:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        size = _copy_hashing(source.read, None, digest)
    return Blob(f"sha256:{digest.hexdigest()}", size, path)


def compress_layer(layer_tar: Path, work_dir: Path) -> Layer:
    """A layer from an uncompressed tar (gzip-compressed here) or a ``.tar.gz`` (kept as it is)."""
    diff = hashlib.sha256()
    if layer_tar.name.endswith((".tar.gz", ".tgz")):
        with gzip.open(layer_tar, "rb") as source:
            _copy_hashing(source.read, None, diff)
        return Layer(_blob_of_file(layer_tar), f"sha256:{diff.hexdigest()}")
    compressed = work_dir / f"{layer_tar.name}.gz"
    # mtime=0: the same tar always gives the same blob, so an unchanged layer keeps its digest.
    with layer_tar.open("rb") as source, gzip.GzipFile(compressed, "wb", compresslevel=6, mtime=0) as target:
        _copy_hashing(source.read, target.write, diff)
    return Layer(_blob_of_file(compressed), f"sha256:{diff.hexdigest()}")


def _json_blob(document: dict[str, Any], work_dir: Path, name: str) -> Blob:
    path = work_dir / name
    path.write_bytes(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
    return _blob_of_file(path)


def _descriptor(media_type: str, blob: Blob, **extra: Any) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": blob.digest, "size": blob.size, **extra}


def write_archive(name: str, layers: Sequence[Path], config: ImageConfig, output: Path) -> str:
    """Write the OCI archive of image ``name`` (``repository:tag``); return its manifest digest."""
    if ":" not in name.rpartition("/")[2]:
        raise ValueError(f"image name {name!r} has no tag (repository:tag)")
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".oci-") as tmp:
        work_dir = Path(tmp)
        packed = [compress_layer(layer, work_dir) for layer in layers]
        image_config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Entrypoint": list(config.entrypoint),
                "Cmd": list(config.cmd),
                "Env": list(config.env),
                "User": config.user,
                "WorkingDir": config.working_dir,
                "Labels": dict(config.labels),
            },
            "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in packed]},
        }
        config_blob = _json_blob(image_config, work_dir, "config.json")
        manifest = {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": _descriptor(CONFIG_TYPE, config_blob),
            "layers": [_descriptor(LAYER_TYPE, layer.blob) for layer in packed],
        }
        manifest_blob = _json_blob(manifest, work_dir, "manifest.json")
        tag = name.rpartition(":")[2]
        index = {
            "schemaVersion": 2,
            "mediaType": INDEX_TYPE,
            "manifests": [
                _descriptor(
                    MANIFEST_TYPE,
                    manifest_blob,
                    platform={"architecture": "amd64", "os": "linux"},
                    # containerd names the imported image by the first, the OCI layout by the second.
                    annotations={"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag},
                )
            ],
        }
        index_path = work_dir / "index.json"
        index_path.write_text(json.dumps(index, sort_keys=True) + "\n")
        layout_path = work_dir / "oci-layout"
        layout_path.write_text('{"imageLayoutVersion":"1.0.0"}\n')
        partial = work_dir / "image.tar"
        with tarfile.open(partial, "w") as archive:
            archive.add(layout_path, "oci-layout")
            archive.add(index_path, "index.json")
            blobs = [config_blob, manifest_blob, *(layer.blob for layer in packed)]
            for blob in {b.digest: b for b in blobs}.values():
                archive.add(blob.path, f"blobs/sha256/{blob.digest.removeprefix('sha256:')}")
        shutil.move(partial, output)
    return manifest_blob.digest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_balancer_dev.localbed.oci_image", description=__doc__
    )
    parser.add_argument("--name", required=True, help="repository:tag the image is imported as")
    parser.add_argument(
        "--layer", type=Path, action="append", required=True, help="tar or tar.gz, bottom first"
    )
    parser.add_argument("--entrypoint", action="append", required=True)
    parser.add_argument("--cmd", action="append", default=[])
    parser.add_argument("--env", action="append", default=[], help="NAME=value")
    parser.add_argument("--user", default="")
    parser.add_argument("--label", action="append", default=[], help="NAME=value")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    for layer in args.layer:
        if not layer.is_file():
            parser.error(f"--layer {layer}: no such file")
    labels = []
    for label in args.label:
        key, equals, value = label.partition("=")
        if not key or not equals:
            parser.error(f"--label {label!r}: not NAME=value")
        labels.append((key, value))
    config = ImageConfig(
        tuple(args.entrypoint), tuple(args.cmd), tuple(args.env), args.user, labels=tuple(labels)
    )
    try:
        digest = write_archive(args.name, args.layer, config, args.output.resolve())
    except ValueError as err:
        parser.error(f"--name: {err}")
    print(f"{args.output}: {args.name} {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
