"""Both recipes of the operator image, the Containerfile and hack/image/build.sh (the node tier's), install
the dependencies from the hash lock and nothing else: requirements/image.txt with --require-hashes, then
the package with --no-deps, built by the locked setuptools without isolation; build.sh rebuilds its
dependency layer when the lock changes. tests/unit/packaging/test_lock.py proves the lock matches
pyproject.toml. Their bases are pinned: the Containerfile's by digest, build.sh's Debian packages by
their checksums."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CONTAINERFILE = (ROOT / "Containerfile").read_text()
BUILD_SH = (ROOT / "hack" / "image" / "build.sh").read_text()
BASE_SH = (ROOT / "hack" / "image" / "base.sh").read_text()
BASE_LOCK = (ROOT / "hack" / "image" / "base.lock").read_text()


def pip_commands(text: str) -> list[list[str]]:
    """The shell commands on the lines that run pip, in a script or in a Containerfile's RUN
    instructions: continuations joined, split at && and |, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line.startswith("#") or "pip" not in line:
            continue
        words = shlex.split(line.removeprefix("RUN "), comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word in {"&&", "|", "||", ";"}:
                if command:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found


def pip(text: str, verb: str) -> list[list[str]]:
    """The `pip <verb>` commands (whatever pip executable) with their arguments."""
    return [
        command[command.index(verb) + 1 :]
        for command in pip_commands(text)
        if command[0].endswith("pip") and verb in command
    ]


def requirement_files(arguments: list[str]) -> list[str]:
    return [arguments[i + 1] for i, word in enumerate(arguments) if word in {"-r", "--requirement"}]


def test_the_containerfile_installs_the_dependencies_from_the_lock_with_hashes() -> None:
    installs = pip(CONTAINERFILE, "install")
    locked = [arguments for arguments in installs if requirement_files(arguments)]
    assert {file for arguments in locked for file in requirement_files(arguments)} == {
        "/src/requirements/build.txt",
        "/src/requirements/image.txt",
    }
    assert all("--require-hashes" in arguments for arguments in locked)
    # Everything else is the package itself, which must not pull a dependency past the lock.
    assert all("--no-deps" in arguments for arguments in installs if arguments not in locked)
    assert "COPY requirements /src/requirements" in CONTAINERFILE


def test_build_sh_installs_the_dependencies_from_the_lock_with_hashes() -> None:
    installs = pip(BUILD_SH, "install")
    locked = [arguments for arguments in installs if requirement_files(arguments)]
    assert [requirement_files(arguments) for arguments in locked] == [["$KB_ROOT/$lock"]]
    assert re.search(r"^lock=requirements/image\.txt$", BUILD_SH, re.MULTILINE)
    assert all("--require-hashes" in arguments for arguments in locked)
    assert all("--no-deps" in arguments for arguments in installs if arguments not in locked)


def test_both_build_the_package_alone_with_the_locked_setuptools() -> None:
    for recipe in (CONTAINERFILE, BUILD_SH):
        (wheel,) = pip(recipe, "wheel")
        assert "--no-deps" in wheel
        assert "--no-build-isolation" in wheel
        # The dependencies too: pyspark is an sdist.
        dependencies = [
            arguments
            for arguments in pip(recipe, "install")
            if any(not file.endswith("build.txt") for file in requirement_files(arguments))
        ]
        assert dependencies
        assert all("--no-build-isolation" in arguments for arguments in dependencies)


def test_build_sh_rebuilds_the_dependency_layer_when_the_lock_changes() -> None:
    (key,) = (line for line in BUILD_SH.splitlines() if line.startswith("deps_key="))
    assert 'hash_files "$lock"' in key


def test_the_containerfile_names_its_base_images_by_digest() -> None:
    stages: set[str] = set()
    bases = set()
    for line in CONTAINERFILE.splitlines():
        if not line.startswith("FROM "):
            continue
        words = line.split()
        if len(words) == 4 and words[2] == "AS":
            stages.add(words[3])
        if words[1] not in stages:
            assert re.fullmatch(r"[a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64}", words[1]), (
                f"not by digest: {line}"
            )
            bases.add(words[1])
    assert len(bases) == 1, f"the stages start from different bases: {sorted(bases)}"


def test_the_debian_base_of_build_sh_is_locked_by_checksums() -> None:
    locked = {}
    for line in BASE_LOCK.splitlines():
        match = re.fullmatch(r"[0-9a-f]{64}  ([a-z0-9.+-]+)_[^_/]+_(?:amd64|all)\.deb", line)
        assert match, f"hack/image/base.lock: {line!r} is not a .deb's sha256sum line"
        locked[match[1]] = line
    (included,) = re.findall(r"^PACKAGES=(\S+)$", BASE_SH, re.MULTILINE)
    assert set(included.split(",")) <= set(locked)
    assert {"python3.11", "libc6"} <= set(locked)
    # base.sh refuses other packages, and a new lock files a new layer.
    assert 'diff -u "$lock"' in BASE_SH
    assert 'cat "${BASH_SOURCE[0]}" "$lock" | sha256sum' in BASE_SH
