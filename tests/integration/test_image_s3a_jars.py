"""The Containerfile's image holds the s3a jars hack/image/build.sh's does: what hack/s3a/provision.sh
resolves from hack/s3a/pom.xml with Maven (checksums enforced), the AWS SDK bundle trimmed by the same
script.

No container builder runs in the tests (the test machines have no Docker daemon), so the Containerfile
is not built. What these tests prove instead: its ADD lines fetch exactly the artifacts Maven resolves,
no more, by the sha256 of the files Maven downloaded and checked against Central's own checksums; and
trimming the bundle they fetch with hack/s3a/trim_bundle.py gives byte for byte the jar build.sh ships.
They cannot prove that a builder honours ``ADD --checksum``, nor that the image's Python and zlib
deflate the trimmed bundle to the same bytes: its entries are the same either way."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fixtures.provisioning import provisioned
from tests.unit.packaging.test_image_recipe import (
    MAVEN_CENTRAL,
    ROOT,
    S3A_JARS,
    Download,
    s3a_downloads,
    s3a_jar_names,
    s3a_trim,
)

TRIMMED = "-s3a.jar"


@pytest.fixture(scope="module")
def jars() -> Path:
    """The jars build.sh puts into its image."""
    return provisioned("s3a/provision.sh")


def maven_repo(jars: Path) -> Path:
    # provision.sh resolves into $KB_CACHE_DIR/maven-repo and provisions $KB_CACHE_DIR/s3a-<v>/jars.
    return jars.parents[1] / "maven-repo"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def resolved(jars: Path) -> list[Download]:
    """The ADD lines that fetch the jars provision.sh resolved (the SDK bundle before its trimming), as
    Maven downloaded them into its local repository."""
    repo = maven_repo(jars)
    downloads = []
    for jar in sorted(jars.glob("*.jar")):
        bundle = jar.name.endswith(TRIMMED)
        name = jar.name.removesuffix(TRIMMED) + ".jar" if bundle else jar.name
        (artifact,) = repo.rglob(name)
        dest = f"/s3a/{name}" if bundle else S3A_JARS + name
        downloads.append(
            Download(sha256(artifact), MAVEN_CENTRAL + artifact.relative_to(repo).as_posix(), dest)
        )
    return downloads


def test_the_containerfile_fetches_the_jars_maven_resolves_by_their_sha256(jars: Path) -> None:
    expected = resolved(jars)
    lines = "\n".join(f"ADD --checksum=sha256:{d.sha256} \\\n    {d.url} {d.dest}" for d in expected)
    assert sorted(s3a_downloads(), key=lambda d: d.url) == sorted(expected, key=lambda d: d.url), (
        f"the Containerfile's s3a stage drifted from hack/s3a/pom.xml's resolution; these match it:\n{lines}"
    )
    assert s3a_jar_names() == sorted(jar.name for jar in jars.glob("*.jar"))


def test_trimming_the_bundle_the_containerfile_fetches_gives_the_jar_build_sh_ships(
    jars: Path, tmp_path: Path
) -> None:
    _, script, bundle, trimmed = s3a_trim()
    (fetched,) = [d for d in s3a_downloads() if d.dest == bundle]
    source = maven_repo(jars) / fetched.url.removeprefix(MAVEN_CENTRAL)
    assert sha256(source) == fetched.sha256
    target = tmp_path / Path(trimmed).name
    subprocess.run(
        [sys.executable, ROOT / "hack" / "s3a" / Path(script).name, source, target], check=True, timeout=300
    )
    assert target.read_bytes() == (jars / target.name).read_bytes()
