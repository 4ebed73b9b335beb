"""Both recipes of the operator image, the Containerfile and hack/image/build.sh (the node tier's), install
the dependencies from the hash lock and nothing else: requirements/image.txt with --require-hashes, then
the package with --no-deps, built by the locked setuptools without isolation; build.sh rebuilds its
dependency layer when the lock changes. tests/unit/packaging/test_lock.py proves the lock matches
pyproject.toml. Their bases are pinned: the Containerfile's by digest, build.sh's Debian packages by
their checksums. Both put the s3a jars into pyspark's jars/, the AWS SDK bundle trimmed by the same
script; the Containerfile fetches them by sha256, and tests/integration/test_image_s3a_jars.py proves
them the jars hack/s3a/provision.sh resolves for build.sh (the Containerfile is not built by any test:
no test machine runs a container builder)."""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import yaml

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


BUILD_KAFKA_SH = (ROOT / "hack" / "image" / "build-kafka.sh").read_text()
CHART = (ROOT / "charts" / "kafka-balancer" / "Chart.yaml").read_text()


def containerfile_pairs(instruction: str) -> dict[str, str]:
    """NAME=value pairs of the final stage's ENV or LABEL instructions, continuations joined."""
    final = re.sub(r"\\\n", " ", CONTAINERFILE.rpartition("\nFROM ")[2])
    pairs: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith(f"{instruction} "):
            for word in shlex.split(line.removeprefix(f"{instruction} ")):
                name, _, value = word.partition("=")
                pairs[name] = value
    return pairs


def packer_pairs(script: str, flag: str) -> dict[str, str]:
    """NAME=value of each ``--env`` or ``--label`` a script passes the packer, its variables as written."""
    joined = re.sub(r"\\\n", " ", script)
    (command,) = [line for line in joined.splitlines() if "kafka_balancer_dev.localbed.oci_image" in line]
    words = shlex.split(command)
    return dict(words[i + 1].partition("=")[::2] for i, word in enumerate(words) if word == flag)


def test_both_recipes_give_the_image_the_same_environment() -> None:
    containerfile, build_sh = containerfile_pairs("ENV"), packer_pairs(BUILD_SH, "--env")
    assert set(containerfile) == set(build_sh)
    # The Containerfile's PATH extends its base's; build.sh writes Debian's out.
    assert (
        containerfile.pop("PATH").split(":")[0]
        == build_sh.pop("PATH").split(":")[0]
        == "/opt/kafka-balancer/bin"
    )
    assert containerfile == build_sh


def test_java_home_names_no_architecture_in_any_image() -> None:
    for env in (
        containerfile_pairs("ENV"),
        packer_pairs(BUILD_SH, "--env"),
        packer_pairs(BUILD_KAFKA_SH, "--env"),
    ):
        assert env["JAVA_HOME"] == "/usr/lib/jvm/java-17"
    # Each base links it to its own architecture's Java.
    assert 'ln -s "java-17-openjdk-$(dpkg --print-architecture)" /usr/lib/jvm/java-17' in CONTAINERFILE
    assert 'ln -s "$jvm" "$rootfs/usr/lib/jvm/java-17"' in BASE_SH


def test_both_recipes_label_the_image_as_the_chart_describes_it() -> None:
    chart = yaml.safe_load(CHART)
    expected = {
        "org.opencontainers.image.title": chart["name"],
        "org.opencontainers.image.description": chart["description"],
        "org.opencontainers.image.source": chart["sources"][0],
        "org.opencontainers.image.licenses": chart["annotations"]["artifacthub.io/license"],
        "org.opencontainers.image.version": chart["appVersion"],
    }
    assert containerfile_pairs("LABEL") == expected
    # build.sh reads them from Chart.yaml when it runs: its sed expressions, run here on the chart.
    labels = packer_pairs(BUILD_SH, "--label")
    assert labels["org.opencontainers.image.title"] == chart["name"]
    values = {"$tag": chart["appVersion"]}
    for variable in ("description", "source", "licenses"):
        (assignment,) = re.findall(rf"^{variable}=\"\$\((sed .*)\)\"$", BUILD_SH, re.MULTILINE)
        sed = [word for word in shlex.split(assignment) if word != "$chart/Chart.yaml"]
        done = subprocess.run(sed, input=CHART, capture_output=True, text=True, check=True)
        values[f"${variable}"] = done.stdout.strip()
    assert {name: values.get(value, value) for name, value in labels.items()} == expected


def test_both_recipes_add_the_same_debian_packages_to_their_python_base() -> None:
    """The Containerfile's base image already holds Python and the CA certificates; base.sh's
    debootstrap installs them itself. Each installs everything else, nss_wrapper among them (the
    entrypoint names a uid the image does not know with it)."""
    joined = re.sub(r"\\\n", " ", CONTAINERFILE)
    (installed,) = re.findall(r"apt-get install -y --no-install-recommends ([^&]+)&&", joined)
    (included,) = re.findall(r"^PACKAGES=(\S+)$", BASE_SH, re.MULTILINE)
    assert set(installed.split()) == set(included.split(",")) - {"python3", "ca-certificates"}
    assert "libnss-wrapper" in installed.split()
    entrypoint = (ROOT / "hack" / "image" / "entrypoint.sh").read_text()
    assert 'LD_PRELOAD="libnss_wrapper.so' in entrypoint


PROVISION_S3A = (ROOT / "hack" / "s3a" / "provision.sh").read_text()
S3A_POM = ElementTree.parse(ROOT / "hack" / "s3a" / "pom.xml").getroot()
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
# Where the Containerfile's s3a stage gathers the jars the final stage copies into pyspark's jars/.
S3A_JARS = "/s3a/jars/"


def stage(name: str) -> list[list[str]]:
    """The words of each instruction of the Containerfile's stage ``FROM … AS <name>``, continuations
    joined, comments dropped."""
    found: list[list[str]] = []
    inside = False
    for line in re.sub(r"\\\n", " ", CONTAINERFILE).splitlines():
        if line.startswith("FROM "):
            inside = line.split()[-2:] == ["AS", name]
        elif inside and line.strip() and not line.startswith("#"):
            found.append(shlex.split(line))
    return found


@dataclass(frozen=True)
class Download:
    """An ``ADD --checksum=sha256:<hex> <url> <dest>`` of the s3a stage."""

    sha256: str
    url: str
    dest: str


def s3a_downloads() -> list[Download]:
    downloads = []
    for words in stage("s3a"):
        if words[0] == "ADD":
            flags = [word for word in words[1:] if word.startswith("--")]
            assert len(flags) == 1 and flags[0].startswith("--checksum=sha256:"), f"not by sha256: {words}"
            url, dest = words[1 + len(flags) :]
            downloads.append(Download(flags[0].removeprefix("--checksum=sha256:"), url, dest))
    return downloads


def s3a_trim() -> list[str]:
    """The command of the s3a stage's RUN that trims the SDK bundle."""
    (run,) = [words for words in stage("s3a") if words[0] == "RUN"]
    return run[1 : run.index("&&")]


def s3a_jar_names() -> list[str]:
    """The jars the Containerfile puts into pyspark's jars/: what the s3a stage gathers in S3A_JARS."""
    dests = [download.dest for download in s3a_downloads()] + [s3a_trim()[-1]]
    return sorted(dest.removeprefix(S3A_JARS) for dest in dests if dest.startswith(S3A_JARS))


def pom_dependencies() -> set[str]:
    """group:artifact:version of each dependency hack/s3a/pom.xml declares, properties substituted."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    properties = {
        child.tag.partition("}")[2]: child.text or "" for child in S3A_POM.iterfind("m:properties/*", ns)
    }
    declared = set()
    for dependency in S3A_POM.iterfind("m:dependencies/m:dependency", ns):
        words = [dependency.findtext(f"m:{field}", "", ns) for field in ("groupId", "artifactId", "version")]
        declared.add(":".join(re.sub(r"\$\{([^}]+)\}", lambda m: properties[m[1]], word) for word in words))
    return declared


def test_the_containerfile_fetches_the_s3a_jars_from_maven_central_by_sha256() -> None:
    """Each by its sha256, under the name Maven gives it. tests/integration/test_image_s3a_jars.py checks
    that they are the jars hack/s3a/provision.sh resolves, each sum that of the file Maven downloaded."""
    downloads = s3a_downloads()
    fetched = set()
    for download in downloads:
        assert re.fullmatch(r"[0-9a-f]{64}", download.sha256), download
        match = re.fullmatch(re.escape(MAVEN_CENTRAL) + r"(.+)/([^/]+)/([^/]+)/\2-\3\.jar", download.url)
        assert match, f"not a jar in Maven Central's layout: {download.url}"
        assert download.dest.rpartition("/")[2] == download.url.rpartition("/")[2], download
        fetched.add(f"{match[1].replace('/', '.')}:{match[2]}:{match[3]}")
    # Among them hadoop-aws at the pom's hadoop.version, the release of the hadoop-common pyspark ships.
    assert pom_dependencies() <= fetched
    assert len(fetched) == len(downloads)


def test_both_recipes_trim_the_sdk_bundle_with_the_same_script() -> None:
    python, script, bundle, trimmed = s3a_trim()
    assert python == "python3"
    assert ["COPY", "hack/s3a/trim_bundle.py", "/s3a/"] in stage("s3a")
    assert script == "/s3a/trim_bundle.py"
    # The bundle fetched beside the jars, trimmed into them under provision.sh's name for it.
    assert bundle in {download.dest for download in s3a_downloads() if not download.dest.startswith(S3A_JARS)}
    assert trimmed == S3A_JARS + bundle.rpartition("/")[2].removesuffix(".jar") + "-s3a.jar"
    assert re.search(r'^trim="\$KB_ROOT/hack/s3a/trim_bundle\.py"$', PROVISION_S3A, re.MULTILINE)
    assert '"$KB_VENV/bin/python" "$trim" "$bundle" "${bundle%.jar}-s3a.jar"' in PROVISION_S3A
    # A change to the script provisions the jars again.
    (recipe,) = (line for line in PROVISION_S3A.splitlines() if line.startswith("recipe="))
    assert '"$trim"' in recipe
    # Neither recipe keeps a trimming of its own.
    assert "zipfile" not in PROVISION_S3A
    assert "zipfile" not in CONTAINERFILE


def test_both_recipes_put_the_s3a_jars_into_pysparks_jars_readable_by_the_user() -> None:
    assert (
        "COPY --from=s3a /s3a/jars/ /opt/kafka-balancer/pyspark/jars/"
        in CONTAINERFILE.rpartition("\nFROM ")[2]
    )
    assert 'cp "$s3a_jars"/*.jar "$work/s3a/opt/kafka-balancer/pyspark/jars/"' in BUILD_SH
    (run,) = [words for words in stage("s3a") if words[0] == "RUN"]
    assert run[run.index("&&") + 1 :] == ["chmod", "0644", "/s3a/jars/*.jar"]
