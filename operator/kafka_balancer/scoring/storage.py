"""Where the job reads and writes: local paths directly, any other URI (s3a://, hdfs://)
through Spark's Hadoop FileSystem. s3a:// needs hadoop-aws (and its AWS SDK) on the Spark
classpath, e.g. ``--packages org.apache.hadoop:hadoop-aws:<Spark's Hadoop version>``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession


def is_local(uri: str) -> bool:
    return urlparse(uri).scheme in ("", "file")


def local_path(uri: str) -> Path:
    return Path(urlparse(uri).path if uri.startswith("file:") else uri)


def join(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{name}"


def _hadoop(spark: SparkSession, uri: str) -> tuple[object, object]:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)  # type: ignore[union-attr]
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def exists(spark: SparkSession, uri: str) -> bool:
    if is_local(uri):
        return local_path(uri).exists()
    fs, path = _hadoop(spark, uri)
    return bool(fs.exists(path))  # type: ignore[attr-defined]


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    if is_local(uri):
        target = local_path(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
        return
    fs, path = _hadoop(spark, uri)
    stream = fs.create(path, True)  # type: ignore[attr-defined]
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()
