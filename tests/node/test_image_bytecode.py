"""The operator image's Python modules load from their bytecode: no process of the image compiles
what it imports. The layers' files carry mtime 0, where bytecode that records its source's mtime
(what pip writes) is stale; with the image's PYTHONDONTWRITEBYTECODE and read-only root filesystem,
every start of the operator, the CLI or the scoring job's driver compiled its modules again.

What it plays: the image's /opt/kafka-balancer unpacked from its OCI archive as containerd unpacks
it (each file's mtime from its layer), imported as the scoring job and the CLI import it by this
machine's Python 3.11 (the image's is Debian's 3.11: the same bytecode), site-packages off, so that
only the image's modules are found. This Python does not import the image's standard library (the
base layer), so of that the bytecode's header is checked: to be checked by hash, never by source.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import IO

import pytest

from kafka_balancer_dev.localbed import node

PACKAGE_DIR = "opt/kafka-balancer"
STDLIB_DIR = "usr/lib/python3.11"
# A .pyc header's flags (PEP 552): bit 0, checked by hash rather than by mtime; bit 1, checked at all.
UNCHECKED_HASH = 0b01


@pytest.fixture(scope="module")
def unpacked(operator_image: node.LocalImage, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What Python imports under ``PACKAGE_DIR`` and ``STDLIB_DIR`` of every layer of the image
    (Spark's jars left out), unpacked with the layers' mtimes."""
    root = tmp_path_factory.mktemp("image")
    with tarfile.open(operator_image.archive) as image:
        (entry,) = json.load(member(image, "index.json"))["manifests"]
        for layer in json.load(member(image, blob(entry["digest"])))["layers"]:
            with tarfile.open(fileobj=member(image, blob(layer["digest"])), mode="r|*") as files:
                for found in files:
                    name = found.name.removeprefix("./")
                    wanted = name.startswith((PACKAGE_DIR, STDLIB_DIR)) and not name.endswith(".jar")
                    # Links left out: one module is a link out of the tree (sitecustomize).
                    if wanted and (found.isfile() or found.isdir()):
                        files.extract(found, root, filter="data")
    return root


def blob(digest: str) -> str:
    return f"blobs/sha256/{digest.removeprefix('sha256:')}"


def member(image: tarfile.TarFile, name: str) -> IO[bytes]:
    found = image.extractfile(name)
    assert found is not None, f"{name} is not in the image archive"
    return found


def test_the_images_modules_load_from_their_bytecode(unpacked: Path) -> None:
    package = unpacked / PACKAGE_DIR
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-S", "-v", "-c", "import kafka_balancer.scoring.job, kafka_balancer.cli"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = [
        line.split()[-1].strip("'")
        for line in done.stderr.splitlines()
        if line.startswith("# code object from")
    ]
    ours = [path for path in loaded if path.startswith(str(package))]
    compiled = [path for path in ours if path.endswith(".py")]
    assert compiled == [], f"{len(compiled)} of {len(ours)} modules compiled from source, e.g. {compiled[:3]}"
    # numpy, pandas, pyarrow, pyspark and the package: hundreds, all from the image.
    assert len(ours) > 300


def test_the_standard_librarys_bytecode_is_checked_by_hash(unpacked: Path) -> None:
    sources = sorted((unpacked / STDLIB_DIR).rglob("*.py"))
    flags = {}
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        flags[source] = int.from_bytes(cached.read_bytes()[4:8], "little") if cached.exists() else None
    stale = [str(source.relative_to(unpacked)) for source, flag in flags.items() if flag != UNCHECKED_HASH]
    assert stale == [], f"{len(stale)} of {len(sources)} modules lack hash-checked bytecode: {stale[:3]}"
    assert len(sources) > 500
