"""Shared storage as users run it: a real S3-compatible server (MinIO) and Hadoop's s3a.

The operator's side (pyarrow) uploads a sample store and reads outputs; the real scoring job
(``python -m kafka_balancer.scoring.job``, local Spark with the provisioned s3a jars) reads the samples
from s3a:// and writes its outputs there, with credentials only in the environment, as a Secret
mounted as env gives them.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from tests.spark.test_job import cluster_samples, write_topology_and_goals
from tests.support.samples import write_samples

from kafka_balancer.errors import ScoringError
from kafka_balancer.samples.schema import BROKER_DIR, PARTITION_DIR
from kafka_balancer.scoring import remote
from kafka_balancer.scoring.launch import error_line
from kafka_balancer.scoring.s3a import S3Storage, s3a_conf
from kafka_balancer_dev.localbed.minio import MinioBed
from kafka_balancer_dev.localbed.ports import free_port

# Generous for two shared cores; an unreachable endpoint must fail well inside it (s3a's defaults
# retry for minutes).
JOB_TIMEOUT_S = 300.0
UNREACHABLE_WITHIN_S = 120.0


@pytest.fixture()
def aws_env(minio_bed: MinioBed, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The operator's environment as the chart sets it: the Secret's keys and the endpoint value."""
    for key, value in minio_bed.client_env.items():
        monkeypatch.setenv(key, value)
    return minio_bed.client_env


def sample_store(root: Path) -> Path:
    partitions, brokers = cluster_samples()
    write_samples(root, partitions, brokers)
    return root


def test_sync_up_uploads_prunes_and_reads_back(
    minio_bed: MinioBed, aws_env: dict[str, str], tmp_path: Path
) -> None:
    store = sample_store(tmp_path / "store")
    (store / ".partial").write_text("hidden: never uploaded")
    uri = minio_bed.uri("sync", "store")
    assert remote.sync_up(store, uri) == 2
    s3 = minio_bed.filesystem()
    listed = {
        info.path.removeprefix(f"{minio_bed.bucket}/sync/store/")
        for info in s3.get_file_info(remote_selector(minio_bed, "sync/store"))
        if info.is_file
    }
    assert listed == {f"{PARTITION_DIR}/part-0.parquet", f"{BROKER_DIR}/part-0.parquet"}
    with s3.open_input_stream(f"{minio_bed.bucket}/sync/store/{PARTITION_DIR}/part-0.parquet") as stream:
        assert stream.read() == (store / PARTITION_DIR / "part-0.parquet").read_bytes()

    # A pruned local file goes remotely too; an unchanged one is not uploaded again.
    (store / BROKER_DIR / "part-0.parquet").unlink()
    (store / PARTITION_DIR / "part-1.parquet").write_bytes(b"new")
    assert remote.sync_up(store, uri) == 1
    listed = {
        info.path for info in s3.get_file_info(remote_selector(minio_bed, "sync/store")) if info.is_file
    }
    assert listed == {
        f"{minio_bed.bucket}/sync/store/{PARTITION_DIR}/part-0.parquet",
        f"{minio_bed.bucket}/sync/store/{PARTITION_DIR}/part-1.parquet",
    }

    with s3.open_output_stream(f"{minio_bed.bucket}/sync/run/manifest.json") as out:
        out.write(json.dumps({"rows": {"partitions": 11}}).encode())
    assert remote.read_json(minio_bed.uri("sync", "run", "manifest.json")) == {"rows": {"partitions": 11}}


def remote_selector(bed: MinioBed, prefix: str) -> pafs.FileSelector:
    return pafs.FileSelector(f"{bed.bucket}/{prefix}", recursive=True, allow_not_found=True)


def test_bad_credentials_name_the_uri_never_the_secret(
    minio_bed: MinioBed,
    aws_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    wrong = secrets.token_urlsafe(24)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)
    store = sample_store(tmp_path / "store")
    uri = minio_bed.uri("denied", "store")
    caplog.set_level(logging.DEBUG)
    errors = []
    for attempt in (lambda: remote.sync_up(store, uri), lambda: remote.read_json(f"{uri}/manifest.json")):
        with pytest.raises(ScoringError) as caught:
            attempt()
        errors.append(str(caught.value))
    assert uri in errors[0] and f"{uri}/manifest.json" in errors[1], errors
    for secret in (wrong, minio_bed.secret_key):
        assert all(secret not in message for message in errors)
        assert all(secret not in record.getMessage() for record in caplog.records)


def run_job(
    samples: str, out: str, inputs: Path | str, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """The job on ``inputs``: a directory, or a URI as a run's inputs are in s3a:// storage."""
    argv = [
        sys.executable, "-m", "kafka_balancer.scoring.job",
        "--samples", samples,
        "--topology", remote.join(str(inputs), "topology.json"),
        "--goals", remote.join(str(inputs), "goals.yaml"),
        "--out", out,
        "--windows", "2",
        "--master", "local[2]",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False)
    return done, time.monotonic() - started


def rounded(document: Any) -> Any:
    """``document`` with its floats to 12 significant digits: Spark's sums may add in another order
    from run to run (the mid bench's snapshots differ by at most 3.4e-16 relative)."""
    if isinstance(document, float):
        return float(f"{document:.12g}")
    if isinstance(document, dict):
        return {key: rounded(value) for key, value in document.items()}
    if isinstance(document, list):
        return [rounded(value) for value in document]
    return document


def job_inputs(root: Path) -> Path:
    root.mkdir(parents=True)
    write_topology_and_goals(root)
    return root


def s3a_env(jars: list[Path], storage: S3Storage, credentials: dict[str, str]) -> dict[str, str]:
    """The job's environment: the s3a jars and settings as spark-submit arguments (no secret among
    them: ``ps`` shows those), the credentials as env, as a Secret's secretKeyRef gives them."""
    conf = [f"--conf={key}={value}" for key, value in s3a_conf(storage).items()]
    submit = ["--jars", ",".join(str(jar) for jar in jars), *conf, "pyspark-shell"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    assert not any(value in " ".join(submit) for value in credentials.values())
    return {**base, **credentials, "PYSPARK_SUBMIT_ARGS": " ".join(submit), "PYSPARK_PYTHON": sys.executable}


def test_job_reads_and_writes_s3a_and_scores_as_on_a_local_directory(
    minio_bed: MinioBed, aws_env: dict[str, str], s3a_jars: list[Path], tmp_path: Path
) -> None:
    store = sample_store(tmp_path / "store")
    inputs = job_inputs(tmp_path / "inputs")
    local, local_s = run_job(str(store), str(tmp_path / "out"), inputs, dict(os.environ))
    assert local.returncode == 0, local.stderr[-3000:]

    samples, out = minio_bed.uri("job", "samples"), minio_bed.uri("job", "runs", "r1")
    assert remote.sync_up(store, samples) == 2
    # The run's topology and goals beside its outputs, as the operator puts them for a driver pod.
    remote_inputs = minio_bed.uri("job", "runs", "r1-inputs")
    assert remote.sync_up(inputs, remote_inputs) == 2
    env = s3a_env(s3a_jars, S3Storage(endpoint=minio_bed.endpoint), minio_bed.credentials_env)
    done, s3a_s = run_job(samples, out, remote_inputs, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert minio_bed.secret_key not in done.stderr + done.stdout
    print(f"\nscoring job: local directory {local_s:.1f} s, s3a on MinIO {s3a_s:.1f} s")

    # The operator reads the outputs back as it does after an in-cluster run.
    snapshot = remote.read_json(remote.join(out, "snapshot.json"))
    manifest = remote.read_json(remote.join(out, "manifest.json"))
    assert rounded(snapshot) == rounded(json.loads((tmp_path / "out" / "snapshot.json").read_text()))
    assert manifest["inputs"]["samples"] == samples
    assert manifest["inputs"]["topology"] == remote.join(remote_inputs, "topology.json")
    assert manifest["rows"] == json.loads((tmp_path / "out" / "manifest.json").read_text())["rows"]
    written = {
        info.path for info in minio_bed.filesystem().get_file_info(remote_selector(minio_bed, "job/runs"))
    }
    assert any("/broker_scores/" in path and path.endswith(".parquet") for path in written)
    assert any("/candidates/" in path and path.endswith(".parquet") for path in written)


def test_unreachable_storage_fails_the_job_fast_with_its_uri(
    minio_bed: MinioBed, s3a_jars: list[Path], tmp_path: Path
) -> None:
    inputs = job_inputs(tmp_path / "inputs")
    nowhere = f"http://127.0.0.1:{free_port()}"  # nothing listens there: a stopped or mistyped endpoint
    env = s3a_env(s3a_jars, S3Storage(endpoint=nowhere), minio_bed.credentials_env)
    samples = minio_bed.uri("job", "samples")
    done, seconds = run_job(samples, minio_bed.uri("job", "runs", "r2"), inputs, env)
    print(f"\nscoring job on an unreachable endpoint failed after {seconds:.1f} s: {error_line(done.stderr)}")
    assert done.returncode == 1, done.stderr[-3000:]
    message = error_line(done.stderr)  # what the operator puts into its ScoringError
    assert message.startswith("score: ") and samples in message, done.stderr[-3000:]
    assert seconds < UNREACHABLE_WITHIN_S
