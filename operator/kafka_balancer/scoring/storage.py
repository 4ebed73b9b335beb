"""Where the job reads and writes: local paths directly, any other URI (s3a://, hdfs://)
through Spark's Hadoop FileSystem. s3a:// needs hadoop-aws (and its AWS SDK) on the Spark
classpath: the operator image has them in pyspark's jars/, ``hack/s3a/provision.sh`` fetches them
for local runs (docs/spark.md, "Shared storage"). A storage that fails (unreachable, denied) is a
ScoringError naming the URI, not a Java stack trace."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from kafka_balancer.errors import ScoringError

T = TypeVar("T")


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


def _java_call(what: str, uri: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except Py4JJavaError as err:
        # The Java exception's own first line (class and message, e.g. s3a's "getFileStatus on
        # s3a://…: … Connection refused"); the stack trace stays in the driver's log.
        first = str(err.java_exception.toString()).splitlines()[0]
        raise ScoringError(f"cannot {what} {uri}: {first}") from err


def exists(spark: SparkSession, uri: str) -> bool:
    if is_local(uri):
        return local_path(uri).exists()

    def call() -> bool:
        fs, path = _hadoop(spark, uri)
        return bool(fs.exists(path))  # type: ignore[attr-defined]

    return _java_call("reach", uri, call)


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    _write_bytes(spark, uri, text.encode("utf-8"))


def _write_bytes(spark: SparkSession, uri: str, data: bytes) -> None:
    if is_local(uri):
        target = local_path(uri)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(data)
        partial.replace(target)
        return

    def call() -> None:
        fs, path = _hadoop(spark, uri)
        stream = fs.create(path, True)  # type: ignore[attr-defined]
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    _java_call("write", uri, call)


def write_parquet(spark: SparkSession, uri: str, table: pa.Table) -> None:
    """``table`` as the one Parquet file of the directory ``uri``, replacing what it held (as Spark's
    writer in overwrite mode lays out a DataFrame; readers take the directory). Written from the
    driver: the job's outputs are small, and a Spark write would cost a job of its own."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    if is_local(uri):
        shutil.rmtree(local_path(uri), ignore_errors=True)
    else:

        def call() -> None:
            fs, path = _hadoop(spark, uri)
            fs.delete(path, True)  # type: ignore[attr-defined]

        _java_call("write", uri, call)
    _write_bytes(spark, join(uri, "part-00000.parquet"), sink.getvalue().to_pybytes())


def read_text(spark: SparkSession, uri: str) -> str:
    """A small remote file's text (the run's topology and goals): local files are read by the caller
    before Spark starts."""

    def call() -> str:
        fs, path = _hadoop(spark, uri)
        stream = fs.open(path)  # type: ignore[attr-defined]
        try:
            io = spark.sparkContext._jvm.org.apache.commons.io.IOUtils  # type: ignore[union-attr]
            return str(io.toString(stream, "UTF-8"))
        finally:
            stream.close()

    return _java_call("read", uri, call)
