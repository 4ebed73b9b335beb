"""A real S3-compatible server (MinIO, built by ``hack/minio/provision.sh``) for the shared storage.

The operator uploads samples to it and reads the scoring job's outputs from it; the job reads and
writes it through Hadoop's s3a. Its root user and password are made fresh for each run, as a
Secret's would be, so a test can check that they leak nowhere. It listens on loopback by default;
``host`` lets pods on a node bed reach it on the node's bridge address.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pyarrow.fs as pafs

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed.ports import LOOPBACK, answers_ok, free_port
from kafka_balancer_dev.localbed.procs import ManagedProcess, wait_until

STOP_GRACE_S = 10.0
# What the AWS SDKs need besides the endpoint: MinIO accepts any region name.
REGION = "us-east-1"


class MinioBed:
    """One MinIO server over ``run_dir/data`` holding one empty ``bucket``."""

    def __init__(
        self,
        binary: Path,
        run_dir: Path,
        *,
        bucket: str = "kafka-balancer",
        host: str = LOOPBACK,
        start_timeout_s: float = 60.0,
    ) -> None:
        if not binary.is_file():
            raise BedError(f"no minio binary at {binary} (run hack/minio/provision.sh)")
        self.binary = binary
        self.run_dir = run_dir.resolve()
        self.bucket = bucket
        self.host = host
        self.start_timeout_s = start_timeout_s
        self.access_key = f"bed-{secrets.token_hex(6)}"
        self.secret_key = secrets.token_urlsafe(24)
        self.port = 0
        self._process: ManagedProcess | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def credentials_env(self) -> dict[str, str]:
        """The variables a Secret mounted as env gives the operator and the Spark pods."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    @property
    def client_env(self) -> dict[str, str]:
        """Everything an AWS client (pyarrow's S3, the AWS SDKs) needs to reach this server."""
        return {**self.credentials_env, "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": REGION}

    def uri(self, *names: str) -> str:
        """An ``s3a://`` URI in the bucket."""
        return "/".join([f"s3a://{self.bucket}", *names])

    def filesystem(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            endpoint_override=f"{self.host}:{self.port}",
            scheme="http",
            region=REGION,
            allow_bucket_creation=True,
        )

    def start(self) -> None:
        """Start MinIO; return once it answers its readiness check and the bucket exists."""
        data = self.run_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.port = free_port(self.host)
        env = {
            **os.environ,
            "MINIO_ROOT_USER": self.access_key,
            "MINIO_ROOT_PASSWORD": self.secret_key,
            # No web console (it would take a second port) and no phoning home for updates.
            "MINIO_BROWSER": "off",
            "MINIO_UPDATE": "off",
        }
        argv = [str(self.binary), "server", str(data), "--address", f"{self.host}:{self.port}", "--quiet"]
        self._process = ManagedProcess("minio", argv, self.run_dir / "minio.log", env=env)
        try:
            wait_until(self._ready, timeout_s=self.start_timeout_s, what=f"MinIO ready at {self.endpoint}")
            self.filesystem().create_dir(self.bucket)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop(STOP_GRACE_S)
            self._process = None

    def _ready(self) -> bool:
        assert self._process is not None
        self._process.ensure_running()
        return answers_ok(f"{self.endpoint}/minio/health/ready")
