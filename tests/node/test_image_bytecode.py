"""The operator image's Python modules load from their bytecode: no process of the image compiles
what it imports. The layers' files carry mtime 0, where bytecode that records its source's mtime
(what pip writes) is stale; with the image's PYTHONDONTWRITEBYTECODE and read-only root filesystem,
every start of the operator, the CLI or the scoring job's driver compiled its modules again.

What it plays: the image's /opt/kafka-balancer unpacked from its OCI archive as containerd unpacks
it (each file's mtime from its layer), imported as the scoring job and the CLI import it by this
machine's Python 3.11 (the image's is Debian's 3.11: the same bytecode), site-packages off, so that
only the image's modules are found. The standard library's bytecode (the base layer) is not checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import IO

from kafka_balancer_dev.localbed import node

PACKAGE_DIR = "opt/kafka-balancer"


def unpack_python(archive: Path, root: Path) -> None:
    """What Python imports under ``PACKAGE_DIR`` of every layer of ``archive`` (Spark's jars left
    out), into ``root``."""
    with tarfile.open(archive) as image:
        (entry,) = json.load(member(image, "index.json"))["manifests"]
        for layer in json.load(member(image, blob(entry["digest"])))["layers"]:
            with tarfile.open(fileobj=member(image, blob(layer["digest"])), mode="r|*") as files:
                for found in files:
                    name = found.name.removeprefix("./")
                    if name.startswith(PACKAGE_DIR) and not name.endswith(".jar"):
                        files.extract(found, root, filter="data")


def blob(digest: str) -> str:
    return f"blobs/sha256/{digest.removeprefix('sha256:')}"


def member(image: tarfile.TarFile, name: str) -> IO[bytes]:
    found = image.extractfile(name)
    assert found is not None, f"{name} is not in the image archive"
    return found


def test_the_images_modules_load_from_their_bytecode(operator_image: node.LocalImage, tmp_path: Path) -> None:
    unpack_python(operator_image.archive, tmp_path)
    package = tmp_path / PACKAGE_DIR
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
