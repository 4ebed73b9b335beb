"""The hash locks under requirements/ are in step with pyproject.toml's pins (hack/lock.sh writes them):
every pin is locked at its version, every locked package carries a hash, the locks name no direct
dependency that pyproject.toml dropped, and CI's lock holds the image's packages at the image's
versions, so CI tests what ships."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HASH = re.compile(r"^\s+--hash=sha256:[0-9a-f]{64}\b")
# uv's annotation of a package that pyproject.toml's [project] tables ask for by name.
FROM_PYPROJECT = "kafka-balancer (pyproject.toml)"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements: list[str]) -> dict[str, str]:
    """pyproject.toml's requirements, each of which must be an exact pin."""
    found = {}
    for requirement in requirements:
        match = PIN.match(requirement)
        assert match, f"pyproject.toml: {requirement!r} is not pinned with =="
        found[normalize(match[1])] = match[2]
    return found


@dataclass(frozen=True)
class Entry:
    version: str
    hashes: int
    from_pyproject: bool


def lock(name: str) -> dict[str, Entry]:
    """The packages of requirements/<name>, with their version, hash count and origin."""
    blocks: list[tuple[re.Match[str], list[str]]] = []
    for line in (ROOT / "requirements" / name).read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        if line[0].isspace():
            assert blocks, f"requirements/{name}: {line!r} before any package"
            blocks[-1][1].append(line)
            continue
        match = PIN.match(line)
        assert match, f"requirements/{name}: {line!r} is not an exact pin"
        blocks.append((match, []))
    return {
        normalize(match[1]): Entry(
            version=match[2],
            hashes=sum(1 for line in lines if HASH.match(line)),
            from_pyproject=any(line.lstrip().startswith("#") and FROM_PYPROJECT in line for line in lines),
        )
        for match, lines in blocks
    }


RUNTIME = pins(PYPROJECT["project"]["dependencies"])
OPERATOR = pins(PYPROJECT["project"]["optional-dependencies"]["operator"])
REPORT = pins(PYPROJECT["project"]["optional-dependencies"]["report"])
DEV = pins(PYPROJECT["project"]["optional-dependencies"]["dev"])
BUILD = pins(PYPROJECT["build-system"]["requires"])
LOCKS = {
    # What each lock must hold at pyproject.toml's versions, and which of those uv marks as direct.
    "image.txt": (RUNTIME | OPERATOR, RUNTIME | OPERATOR),
    "build.txt": (BUILD, {}),
    "dev.txt": (RUNTIME | OPERATOR | REPORT | DEV | BUILD, RUNTIME | OPERATOR | REPORT | DEV),
}


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_every_pin_is_locked_at_its_version(name: str) -> None:
    wanted, _ = LOCKS[name]
    locked = lock(name)
    drifted = {
        package: (version, locked[package].version if package in locked else None)
        for package, version in wanted.items()
        if package not in locked or locked[package].version != version
    }
    assert not drifted, f"requirements/{name} drifted (pyproject, lock): {drifted}; run hack/lock.sh"


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_every_locked_package_has_a_hash(name: str) -> None:
    unhashed = sorted(package for package, entry in lock(name).items() if entry.hashes == 0)
    assert not unhashed, f"requirements/{name}: no hash for {unhashed}"


@pytest.mark.parametrize("name", sorted(LOCKS))
def test_the_lock_names_no_direct_dependency_pyproject_dropped(name: str) -> None:
    _, direct = LOCKS[name]
    marked = {package for package, entry in lock(name).items() if entry.from_pyproject}
    stale = sorted(marked ^ set(direct))
    assert not stale, f"requirements/{name} is stale: {stale}; run hack/lock.sh"


def test_ci_installs_the_image_packages_at_the_image_versions() -> None:
    dev = lock("dev.txt")
    shipped = lock("image.txt") | lock("build.txt")
    differ = {
        package: (entry.version, dev[package].version if package in dev else None)
        for package, entry in shipped.items()
        if package not in dev or dev[package].version != entry.version
    }
    assert not differ, f"requirements/dev.txt differs from the image's locks (image, dev): {differ}"
