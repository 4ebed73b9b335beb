"""The OCI archive the node bed imports: content-addressed blobs that match what index, manifest and
config say, so containerd (and docker/podman load) accept it and name the image as asked."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer_dev.localbed import oci_image


def _layer(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _read(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _blob(files: dict[str, bytes], descriptor: dict[str, Any]) -> bytes:
    data = files[f"blobs/sha256/{descriptor['digest'].removeprefix('sha256:')}"]
    assert len(data) == descriptor["size"]
    assert f"sha256:{hashlib.sha256(data).hexdigest()}" == descriptor["digest"]
    return data


def test_the_archive_is_a_consistent_oci_layout(tmp_path: Path) -> None:
    bottom = _layer(tmp_path / "bottom.tar", {"etc/os-release": b"ID=debian\n"})
    top = _layer(tmp_path / "top.tar", {"opt/app/run": b"#!/bin/sh\n"})
    with gzip.open(tmp_path / "bottom.tar.gz", "wb") as gz:
        gz.write(bottom.read_bytes())
    config = oci_image.ImageConfig(
        entrypoint=("run",),
        cmd=("--help",),
        env=("A=1",),
        user="65532:65532",
        labels=(("org.opencontainers.image.version", "1.0"),),
    )

    digest = oci_image.write_archive(
        "registry.example/app:1.0", [tmp_path / "bottom.tar.gz", top], config, tmp_path / "image.tar"
    )

    files = _read(tmp_path / "image.tar")
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"] == {
        "io.containerd.image.name": "registry.example/app:1.0",
        "org.opencontainers.image.ref.name": "1.0",
    }
    manifest = json.loads(_blob(files, entry))
    image_config = json.loads(_blob(files, manifest["config"]))
    assert image_config["config"]["Entrypoint"] == ["run"]
    assert image_config["config"]["User"] == "65532:65532"
    assert image_config["config"]["Labels"] == {"org.opencontainers.image.version": "1.0"}
    # Each layer's diff_id is the digest of its uncompressed tar, bottom first.
    uncompressed = [gzip.decompress(_blob(files, layer)) for layer in manifest["layers"]]
    assert uncompressed == [bottom.read_bytes(), top.read_bytes()]
    assert image_config["rootfs"]["diff_ids"] == [
        f"sha256:{hashlib.sha256(u).hexdigest()}" for u in uncompressed
    ]


def test_the_same_layers_give_the_same_image(tmp_path: Path) -> None:
    layer = _layer(tmp_path / "l.tar", {"a": b"a"})
    config = oci_image.ImageConfig(entrypoint=("a",))
    first = oci_image.write_archive("x/y:1", [layer], config, tmp_path / "1.tar")
    second = oci_image.write_archive("x/y:1", [layer], config, tmp_path / "2.tar")
    assert first == second


def test_a_name_without_tag_is_refused(tmp_path: Path) -> None:
    layer = _layer(tmp_path / "l.tar", {"a": b"a"})
    with pytest.raises(ValueError, match="no tag"):
        oci_image.write_archive(
            "registry:5000/app", [layer], oci_image.ImageConfig(("a",)), tmp_path / "i.tar"
        )


def test_the_command_takes_labels_and_refuses_one_without_a_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    layer = _layer(tmp_path / "l.tar", {"a": b"a"})
    common = [
        "--name",
        "x/y:1",
        "--layer",
        str(layer),
        "--entrypoint",
        "a",
        "--output",
        str(tmp_path / "i.tar"),
    ]
    assert oci_image.main([*common, "--label", "org.opencontainers.image.title=y", "--label", "empty="]) == 0
    files = _read(tmp_path / "i.tar")
    (entry,) = json.loads(files["index.json"])["manifests"]
    image_config = json.loads(_blob(files, json.loads(_blob(files, entry))["config"]))
    assert image_config["config"]["Labels"] == {"org.opencontainers.image.title": "y", "empty": ""}

    with pytest.raises(SystemExit) as exited:
        oci_image.main([*common, "--label", "title"])
    assert exited.value.code == 2
    assert "--label 'title': not NAME=value" in capsys.readouterr().err
