"""Files of a scoring run where the job's driver can reach them: a local path, ``file://`` or ``s3a://``.

Through pyarrow's file systems, so the operator needs no Spark or Hadoop to read a run's outputs or to
upload its sample store. ``s3a://`` is Hadoop's name for S3; pyarrow calls it ``s3://`` (credentials
from the usual AWS environment variables or instance role).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_balancer.errors import ScoringError


def join(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names])


def _resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    if uri.startswith("s3a://"):
        uri = "s3://" + uri.removeprefix("s3a://")
    elif "://" not in uri:
        uri = str(Path(uri).resolve())
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, OSError) as err:
        raise ScoringError(f"cannot open {uri}: {err}") from err
    return fs, str(path)


def read_bytes(uri: str) -> bytes:
    fs, path = _resolve(uri)
    try:
        with fs.open_input_stream(path) as stream:
            return bytes(stream.read())
    except (OSError, pa.ArrowException) as err:
        raise ScoringError(f"cannot read {uri}: {err}") from err


def parse_json(uri: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as err:
        raise ScoringError(f"{uri} is not JSON: {err}") from err


def read_json(uri: str) -> Any:
    return parse_json(uri, read_bytes(uri))


def write_json(uri: str, document: Any) -> None:
    fs, path = _resolve(uri)
    try:
        fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with fs.open_output_stream(path) as out:
            out.write(json.dumps(document).encode("utf-8"))
    except (OSError, pa.ArrowException) as err:
        raise ScoringError(f"cannot write {uri}: {err}") from err


def exists(uri: str) -> bool:
    fs, path = _resolve(uri)
    try:
        return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)
    except (OSError, pa.ArrowException) as err:
        raise ScoringError(f"cannot read {uri}: {err}") from err


def sync_up(local: Path, uri: str) -> int:
    """Make ``uri`` hold the files of ``local`` (hidden ones excepted): upload the missing ones, delete the
    ones gone locally. Sample files never change once written, so names decide. Returns files uploaded."""
    fs, root = _resolve(uri)
    wanted = {
        p.relative_to(local).as_posix(): p
        for p in local.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(local).parts)
    }
    try:
        listed = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        present = {
            info.path.removeprefix(root).lstrip("/") for info in listed if info.type == pafs.FileType.File
        }
        for name in sorted(present - wanted.keys()):
            fs.delete_file(f"{root}/{name}")
        uploaded = 0
        for name in sorted(wanted.keys() - present):
            target = f"{root}/{name}"
            fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
            with fs.open_output_stream(target) as out:
                out.write(wanted[name].read_bytes())
            uploaded += 1
    except (OSError, pa.ArrowException) as err:
        raise ScoringError(f"cannot upload samples to {uri}: {err}") from err
    return uploaded


def keep_newest(uri: str, keep: int) -> None:
    """Delete all but the ``keep`` newest (by name) directories under ``uri``: old runs' outputs."""
    fs, root = _resolve(uri)
    try:
        listed = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        runs = sorted(info.path for info in listed if info.type == pafs.FileType.Directory)
        for path in runs[: max(len(runs) - keep, 0)]:
            fs.delete_dir(path)
    except (OSError, pa.ArrowException) as err:
        raise ScoringError(f"cannot prune old runs under {uri}: {err}") from err
