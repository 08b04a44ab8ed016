"""paimon_ds.write's native path for append tables: Spark's own parquet writer encodes the data files (no row
crosses into Python), into a staging directory inside the table; the driver turns them into Paimon data files
(operation/staged_files.py) and commits one snapshot.

Files are clustered by `partitionBy` on hidden columns only: a hash of the partition values (the partition columns
themselves stay in the files, as Paimon keeps them) and, for fixed-bucket tables, the bucket from Paimon's hash in
Spark SQL (bucket_expr). Tables or writes this path cannot serve exactly return a reason (``unsupported``), and
paimon_ds.write takes the Python path.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..format.data_file import level_compression, level_format
from ..format.partition import PartitionFilter
from ..io.names import new_job_prefix
from ..operation.commit import TableCommit
from ..operation.staged_files import StagedFile, adopt_staged_files, staging_dir
from ..options.registry import Options
from ..schema.types import DataType
from ..store.row_tracking import data_evolution_enabled
from ..table import Table
from .bucket_expr import bucket_sql, quoted, row_words_sql, with_bucket_column
from .options import (
    BASE_SNAPSHOT_OPTION,
    COMMIT_IDENTIFIER_OPTION,
    COMMIT_USER_OPTION,
    OVERWRITE_PARTITION_OPTION,
    REPLACE_FILES_OPTION,
    ROW_KIND_COLUMN_OPTION,
)
from .types import spark_schema
from .write import dynamic_overwrite

log = logging.getLogger(__name__)

NATIVE_WRITE_OPTION = "paimon_ds.native-write"
PART_COLUMN = "_pds_part"  # a hash of a row's partition values: Spark's partitionBy clusters the files by it
BUCKET_DIR_COLUMN = "_pds_bucket"  # a fixed-bucket table's bucket: Spark's partitionBy clusters by it
# Spark's parquet codecs for Paimon's names (pyarrow writes `lz4` as LZ4_RAW, and so does this path)
_SPARK_CODECS = {"none": "none", "uncompressed": "none", "null": "none", "snappy": "snappy", "gzip": "gzip",
                 "deflate": "gzip", "zlib": "gzip", "zstd": "zstd", "zstandard": "zstd", "lz4": "lz4_raw",
                 "lz4_raw": "lz4_raw", "brotli": "brotli"}
_ATOMIC = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DATE", "DECIMAL",
           "VARCHAR", "VARBINARY"}
_warned: set[str] = set()


def native_enabled(options: dict[str, str]) -> bool:
    return Options(options).get(NATIVE_WRITE_OPTION)


def say_fallback(path: str, reason: str) -> None:
    """Log once per reason (per process) why a write took the Python path."""
    if reason not in _warned:
        _warned.add(reason)
        log.warning("paimon_ds.write to %s takes the Python path (rows go through Python workers): %s", path, reason)


def unsupported(spark: SparkSession, table: Table, job_options: dict[str, str]) -> str | None:
    """Why the native path cannot write into ``table`` (from ``spark``) exactly as the Python path would; None if
    it can."""
    schema = table.table_schema
    if schema.primary_keys:
        return "a primary-key table (its files are sorted and merged by key)"
    if table.bucket == 0 or table.bucket < -1:
        return f"bucket = {table.bucket}"
    if table.options.get("write.merge-schema"):
        return "write.merge-schema (the Python writer aligns the data's columns and nested fields by name)"
    for key in (ROW_KIND_COLUMN_OPTION, COMMIT_IDENTIFIER_OPTION, COMMIT_USER_OPTION, REPLACE_FILES_OPTION,
                BASE_SNAPSHOT_OPTION):
        if key in job_options:
            return f"a job option of the package's own jobs ({key})"
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return "a Spark Connect session (the driver reads the staged files' footers from the table's disk)"
    if not table.io.is_local:
        return "the table is not on the local file system (the native path writes local and shared-mount tables)"
    if table.options.get("data-file.external-paths"):
        return "data-file.external-paths is set"
    if data_evolution_enabled(table.options):
        return "data-evolution.enabled"
    for key in ("file-index.bloom-filter.columns", "file-index.bitmap.columns"):
        if table.options.get(key):
            return f"{key} (each data file's index is built by the Python writer)"
    if table.bucket > 0:
        key_types = [schema.field(k).type for k in schema.bucket_keys]
        if row_words_sql([quoted(k) for k in schema.bucket_keys], key_types) is None \
                and bucket_sql(schema, table.bucket) is None:
            return f"bucket key types {[t.sql() for t in key_types]} (Paimon's hash of them is computed in Python)"
    fmt = level_format(table.options, 0)
    if fmt != "parquet":
        return f"file.format {fmt} (the native path writes parquet)"
    codec = level_compression(table.options, 0)
    if codec not in _SPARK_CODECS:
        return f"file.compression {codec}"
    defaults = [f.name for f in schema.fields if f.default_value is not None]
    if defaults:
        return f"column default values of {defaults} (the Python writer writes them in place of nulls)"
    for f in schema.fields:
        why = _type_unsupported(f.type)
        if why:
            return f"column {f.name!r}: {why}"
    floats = [k for k in schema.partition_keys if schema.field(k).type.root in ("FLOAT", "DOUBLE")]
    if floats:
        return f"floating-point partition key(s) {floats}"
    return None


def _leaves(t: DataType) -> Iterator[DataType]:
    if t.root == "ARRAY":
        yield from _leaves(t.element)
    elif t.root == "MAP":
        yield from _leaves(t.key)
        yield from _leaves(t.value)
    elif t.root == "ROW":
        for f in t.fields:
            yield from _leaves(f.type)
    else:
        yield t


def _type_unsupported(t: DataType) -> str | None:
    """What Spark's parquet writer cannot write as Paimon writes (and reads) it."""
    if t.root in ("ARRAY", "MAP", "ROW"):
        for leaf in _leaves(t):
            why = _type_unsupported(leaf)
            if why:
                return why
        return None
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # Spark writes INT64 microseconds; Paimon reads INT64 by the column's precision (millis up to 3)
        return None if t.precision == 6 else f"{t.sql()} (Spark writes timestamps as microseconds)"
    if t.root not in _ATOMIC:
        return f"type {t.sql()}"
    return None


@contextmanager
def _session_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """SQL settings for the duration of one write, the session's own restored after it."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def write_native(df: DataFrame, table: Table, mode: str, options: dict[str, str],
                 job_options: dict[str, str]) -> None:
    """Write ``df`` into append table ``table`` through Spark's parquet writer; commit one snapshot."""
    schema = table.table_schema
    spark = df.sparkSession
    spark_fields = spark_schema(table.arrow_schema()).fields
    by_lower = {c.lower(): c for c in df.columns}
    columns = []
    for f, sf in zip(schema.fields, spark_fields):
        source = df[by_lower.get(f.name.lower(), f.name)]
        col = source.cast(sf.dataType)
        if not f.type.nullable:  # as the Python writer refuses them, before anything is committed
            col = F.when(source.isNull(), F.raise_error(F.lit(
                f"column '{f.name}' is NOT NULL in the table but the data has null value(s)"))).otherwise(col)
        columns.append(col.alias(f.name))
    out = df.select(*columns)
    part_by = []
    if schema.partition_keys:
        out = out.withColumn(PART_COLUMN, F.xxhash64(*[F.col(quoted(k)) for k in schema.partition_keys]))
        part_by.append(PART_COLUMN)
    if table.bucket > 0:
        spark_types = {sf.name: sf.dataType for sf in spark_fields}
        typed = {k: f"CAST({quoted(k)} AS {spark_types[k].simpleString()})" for k in schema.bucket_keys}
        out = with_bucket_column(out, schema, table.bucket, BUCKET_DIR_COLUMN, typed)
        part_by.append(BUCKET_DIR_COLUMN)
    codec = _SPARK_CODECS[level_compression(table.options, 0)]
    job_prefix = new_job_prefix()
    staging = staging_dir(table, job_prefix)
    writer = out.write.mode("errorifexists").option("compression", codec)
    if codec == "zstd":
        writer = writer.option("parquet.compression.codec.zstd.level", str(table.options.get(
            "file.compression.zstd-level")))
    if part_by:
        writer = writer.partitionBy(*part_by)
    # INT64 microseconds (not INT96), and decimals as INT32 / INT64 / fixed bytes by precision, as Paimon writes them
    settings = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
                "spark.sql.parquet.writeLegacyFormat": "false"}
    messages = []
    # one commit for the write and its clean-up: it knows whether its snapshot landed (or may have), and then
    # abort() deletes nothing the table uses
    commit = table.new_commit()
    try:
        with _session_conf(spark, settings):
            # a local table: say so to Hadoop, whose default file system may be another (HDFS)
            writer.parquet(f"file://{staging}" if staging.startswith("/") else staging)
        messages = adopt_staged_files(table, _staged_files(table, staging), job_prefix)
        _commit(commit, table, messages, mode, options, job_options)
    except Exception as e:
        if commit.landed is not None:  # raised after it landed: the write is done; a re-run would double it
            log.warning("the commit of a native write to %s raised after it landed as snapshot %d; the write is "
                        "done: %s", table.path, commit.landed.id, e)
            return
        commit.abort(messages)
        raise
    except BaseException:
        commit.abort(messages)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _staged_files(table: Table, staging: str) -> list[StagedFile]:
    """The parquet files Spark's job left in ``staging`` (not its `_SUCCESS` marker), with their buckets."""
    staged = []
    for path in sorted(table.io.fs.find(staging)):
        rel = path[len(staging.rstrip("/")):].lstrip("/")
        parts = rel.split("/")
        hidden = [p for p in parts if p.startswith((".", "_")) and not p.startswith((f"{PART_COLUMN}=",
                                                                                      f"{BUCKET_DIR_COLUMN}="))]
        if not parts[-1].endswith(".parquet") or hidden:  # Spark's `_SUCCESS`, `_temporary/`
            continue
        bucket = 0
        for p in parts[:-1]:
            if p.startswith(f"{BUCKET_DIR_COLUMN}="):
                bucket = int(p.split("=", 1)[1])
        staged.append(StagedFile(path, bucket))
    return staged


def _commit(commit: TableCommit, table: Table, messages: list, mode: str, options: dict[str, str],
            job_options: dict[str, str]) -> None:
    """As the Python path's driver commits (spark/write.py PaimonBatchWriter.commit)."""
    static = job_options.get(OVERWRITE_PARTITION_OPTION)
    if mode != "overwrite":
        commit.commit(messages)
    elif static is not None:
        t = table
        commit.overwrite(messages, partitions=PartitionFilter(
            t.partition_keys, [f.type for f in t.table_schema.partition_fields], [json.loads(static)],
            t.options.get("partition.default-name")))
    elif dynamic_overwrite(options) and table.partition_keys:
        commit.overwrite(messages, partitions={m.partition for m in messages})
    else:
        commit.overwrite(messages)
