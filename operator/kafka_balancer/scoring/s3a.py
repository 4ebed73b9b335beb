"""The Spark settings of Hadoop's s3a:// for the scoring job's shared storage, in one pure function.

Every engine that starts the job on a cluster (the SparkApplication, ``spark-submit``) and the tests'
local jobs take them from here, so the endpoint, the addressing style, the credential chain and the
bounded retries are the same everywhere. Credentials never appear in them: a Secret holding
``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` is named, and Spark on Kubernetes puts its keys into
the driver's and executors' environment, where the AWS SDK's default chain reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

# The keys a storage Secret holds: the AWS SDKs' (and pyarrow's) own variable names, so the same
# Secret mounted as env serves the operator, the driver and the executors.
CREDENTIAL_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
# AWS SDK v2's chain (environment, web identity as IRSA gives it, profile, container, instance role).
# hadoop-aws 3.5 only maps a few v1 class names to v2 ones and has no v1 SDK at run time, so the v1
# DefaultAWSCredentialsProviderChain would fail the job when it first opens the file system.
CREDENTIALS_PROVIDER = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
# s3a's defaults retry an unreachable endpoint for minutes (attempts.maximum 5 inside the SDK, times
# retry.limit 7 in s3a, with back-off); a scoring run fails fast instead and the next one retries.
FAIL_FAST = {
    "spark.hadoop.fs.s3a.attempts.maximum": "1",
    "spark.hadoop.fs.s3a.retry.limit": "2",
    "spark.hadoop.fs.s3a.retry.interval": "500ms",
    "spark.hadoop.fs.s3a.connection.establish.timeout": "5s",
    "spark.hadoop.fs.s3a.connection.timeout": "30s",
}


@dataclass(frozen=True, slots=True)
class S3Storage:
    """Where s3a:// goes and how it authenticates (the chart's ``scoring.s3`` values)."""

    endpoint: str = ""  # e.g. http://minio.storage:9000; empty: AWS S3 itself
    region: str = "us-east-1"  # S3-compatible servers accept any; the SDK needs one
    path_style: bool = True  # virtual-host buckets need DNS names per bucket, which MinIO setups lack
    secret: str = ""  # a Secret with CREDENTIAL_KEYS; empty: the pods' own identity (IRSA, role)


def s3a_conf(storage: S3Storage) -> dict[str, str]:
    """``spark.*`` settings for s3a:// with ``storage``: Hadoop's s3a keys and, given a Secret, the
    ``secretKeyRef`` settings that give its keys to the driver and the executors as env."""
    conf = {
        "spark.hadoop.fs.s3a.aws.credentials.provider": CREDENTIALS_PROVIDER,
        "spark.hadoop.fs.s3a.path.style.access": str(storage.path_style).lower(),
        "spark.hadoop.fs.s3a.endpoint.region": storage.region,
        "spark.hadoop.fs.s3a.fast.upload": "true",
        **FAIL_FAST,
    }
    if storage.endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = storage.endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
            storage.endpoint.startswith("https:")
        ).lower()
    if storage.secret:
        for role in ("driver", "executor"):
            for key in CREDENTIAL_KEYS:
                conf[f"spark.kubernetes.{role}.secretKeyRef.{key}"] = f"{storage.secret}:{key}"
    return conf
