"""The package's metadata, as setuptools writes it into the wheel from pyproject.toml: its licence as an
SPDX expression with the licence text beside it, as PyPI and scanners read them. Both image recipes
copy the licence into the tree they build the wheel from (a missing licence file fails the build)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_wheel_declares_its_licence_and_carries_its_text(tmp_path: Path) -> None:
    source, out = tmp_path / "src", tmp_path / "out"
    source.mkdir()
    out.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "operator", source / "operator", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import setuptools.build_meta as b; print(b.prepare_metadata_for_build_wheel({str(out)!r}))",
        ],
        cwd=source,
        capture_output=True,
        text=True,
        check=True,
    )
    dist_info = out / built.stdout.strip().splitlines()[-1]
    metadata = Parser().parsestr((dist_info / "METADATA").read_text())
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert (dist_info / "licenses" / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()


def test_both_image_recipes_build_the_wheel_with_the_licence() -> None:
    assert "COPY pyproject.toml README.md LICENSE /src/" in (ROOT / "Containerfile").read_text()
    assert (
        '"$KB_ROOT/LICENSE" "$KB_ROOT/operator" "$work/src/"'
        in (ROOT / "hack" / "image" / "build.sh").read_text()
    )
