"""paimon_ds.read: Spark's own parquet / ORC readers for the files that need no merging, the Python source for
the rest of the same snapshot.

Spark's Python data source API ships every row through a Python worker and prunes no columns. Most of a
table's files need none of that: append files, and primary-key buckets whose files hold each key once
(operation/raw_files.py). The driver plans the scan in Python, reads those files with Spark's reader (column
pruning, filter pushdown, vectorised decoding, no Python) and unions them by name with the Python source
reading only the other files, at the same snapshot. Deletion vectors: the file's rows are joined away by
`_metadata.row_index`. Where the JVM cannot open the files (an S3 table on a cluster without S3A), the whole
read goes through the Python source, and a warning says so once per reason.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import defaultdict
from collections.abc import Callable
from functools import reduce
from urllib.parse import urlsplit

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ByteType, StructField, StructType

from ..deletionvectors.index_file import read_vector
from ..operation.incremental import is_incremental
from ..operation.raw_files import VALUE_KIND, RawFile, raw_readable_table, split_raw_files
from ..options.storage import S3_PROTOCOLS, protocol_of, split_storage
from ..predicate.expressions import FilterError, bind_filter
from ..predicate.predicates import Predicate, and_all
from ..table import Table
from .bucket_expr import quoted
from .options import ONLY_FILES_OPTION, SPARK_OPTIONS, session_storage, storage_options
from .session import activate
from .types import spark_schema

# Time-travel options: with none of them the Python part is pinned to the snapshot the driver planned.
TIME_TRAVEL_OPTIONS = ("scan.snapshot-id", "scan.timestamp-millis", "scan.timestamp", "scan.tag-name",
                       "scan.version", "scan.watermark")
FILE_NAME = "_paimon_ds_file"
ROW_INDEX = "_paimon_ds_row_index"
_warned: set[str] = set()


def read(spark: SparkSession, path: str, options: dict[str, str], native: bool = True,
         where: str | None = None, prune: Callable[[pa.Schema], Predicate | None] | None = None) -> DataFrame:
    """The table at ``path`` as a DataFrame with the Python source's schema and rows (``options``: read and
    time-travel options, as strings). ``native`` False: the Python source alone. ``where``: a SQL condition
    the rows are filtered by (Spark evaluates it); the part of it paimon_ds understands (predicate/expressions.py) also
    prunes the plan as ``prune`` does.

    ``prune``: the predicate, given the table's Arrow schema, of a condition the caller applies to the rows
    itself (a WHERE clause implying it): the files it rules out (by partition, stats and file index,
    operation/scan.py) are left out of the plan, so Spark's reader does not open them. The rows
    given are then only those of the files that may match: correct once filtered."""
    df = _read(spark, path, options, native, where, prune)
    return df if where is None else df.where(where)


def _read(spark: SparkSession, path: str, options: dict[str, str], native: bool,
          where: str | None, prune: Callable[[pa.Schema], Predicate | None] | None) -> DataFrame:
    opts = {str(k).lower(): str(v) for k, v in options.items()}

    def python_source(extra: dict[str, str] | None = None) -> DataFrame:
        activate(spark)  # this thread may be new: the source is looked up in its active session
        reader = spark.read.format("paimon")
        for k, v in {**opts, **(extra or {})}.items():
            reader = reader.option(k, v)
        return reader.load(path)

    if not native:
        return python_source()
    # the session's fs.s3a.* settings matter to S3 paths only (reading all of a session's conf costs ~30 ms)
    session = session_storage(spark) if protocol_of(path) in S3_PROTOCOLS else {}
    table = Table.load(path, {k: v for k, v in split_storage(opts)[0].items() if k not in SPARK_OPTIONS},
                       storage_options(opts, session))
    table.check_readable()  # before Spark reads any file natively
    schema = spark_schema(table.arrow_schema())
    predicate = and_all([p for p in (prune(table.arrow_schema()) if prune else None,
                                     where_predicate(where, table.arrow_schema()) if where else None)
                         if p is not None])
    if raw_readable_table(table) is not None or not distinct_ignoring_case(schema.names) or \
            is_incremental(table.options):
        return python_source()  # (an incremental read merges files of several snapshots: the Python source does)
    splits = table.new_scan(predicate).plan()
    raw, rest = split_raw_files(table, splits)
    if not raw:
        return python_source()
    if any(f.format == "orc" for f in raw) and "timestamp_ntz" in schema.simpleString():
        return python_source()  # Spark's ORC reader refuses an ORC TIMESTAMP as TIMESTAMP_NTZ (ORC_TYPE_CAST)
    try:
        native_df = raw_frame(spark, table, raw, schema)
        native_df.schema  # noqa: B018 - analysis opens the files: a JVM that cannot reach them fails here
    except Exception as e:  # noqa: BLE001 - any failure to read natively leaves the Python source, which can
        reason = _cause(e)
        scheme = jvm_uri(table.path, raw[0].path).partition("://")[0]
        _warn_once(scheme, f"paimon_ds.read of {path}: Spark cannot read the table's files itself ({reason}); "
                           f"reading through the Python source instead (said once per filesystem: {scheme})")
        return python_source()
    if not rest:
        return native_df
    pinned = {} if any(k in opts for k in TIME_TRAVEL_OPTIONS) else {"scan.snapshot-id": str(splits[0].snapshot_id)}
    only = [f.file_name for s in rest for f in s.files]
    return native_df.unionByName(python_source({**pinned, ONLY_FILES_OPTION: json.dumps(only)}))


def where_predicate(where: str, schema: pa.Schema) -> Predicate | None:
    """The pruning predicate a SQL condition implies, where paimon_ds's filter language reads it (else None:
    Spark still filters the rows, nothing is pruned)."""
    try:
        return bind_filter(where, schema).predicate
    except FilterError:
        return None


def distinct_ignoring_case(names: list[str]) -> bool:
    """Spark's file readers match columns ignoring case (by default): `a` and `A` would be ambiguous."""
    return len({n.lower() for n in names}) == len(names)


def raw_frame(spark: SparkSession, table: Table, files: list[RawFile], schema: StructType) -> DataFrame:
    """The rows of ``files`` in ``schema`` (the table's columns), read by Spark's own readers."""
    groups: dict[tuple[str, bool, bool], list[RawFile]] = defaultdict(list)
    for f in files:
        groups[(f.format, f.deletion is not None, f.keyed)].append(f)
    columns = [F.col(quoted(n)) for n in schema.names]
    frames = []
    for (fmt, with_deletions, keyed), group in sorted(groups.items()):
        fields = [StructField(f.name, f.dataType, True) for f in schema.fields]
        if keyed:
            fields.append(StructField(VALUE_KIND, ByteType(), True))
        df = spark.read.schema(StructType(fields)).format(fmt).load([jvm_uri(table.path, f.path) for f in group])
        if with_deletions:
            df = drop_deleted(spark, table, df, group)
        if keyed:  # a merge-free bucket: its rows are the table's, less retractions (-U, -D)
            df = df.where(F.col(VALUE_KIND).isin(0, 2))
        frames.append(df.select(*columns))
    return reduce(DataFrame.unionByName, frames)


def drop_deleted(spark: SparkSession, table: Table, df: DataFrame, files: list[RawFile]) -> DataFrame:
    """``df`` (read from ``files``) without the rows their deletion vectors mark, by file name and row index."""
    names, positions = [], []
    for f in files:
        deleted = read_vector(table.io, f.deletion)
        names.append(pa.repeat(pa.scalar(f.file_name, pa.string()), len(deleted)))
        positions.append(pa.array(deleted, pa.int64()))
    marks = pa.table({FILE_NAME: pa.concat_arrays(names), ROW_INDEX: pa.concat_arrays(positions)})
    deleted_df = F.broadcast(spark.createDataFrame(marks))
    located = df.select("*", F.col("_metadata.file_name").alias(FILE_NAME),
                        F.col("_metadata.row_index").alias(ROW_INDEX))
    return located.join(deleted_df, [FILE_NAME, ROW_INDEX], "left_anti").drop(FILE_NAME, ROW_INDEX)


def jvm_uri(table_path: str, path: str) -> str:
    """A data file's location as Hadoop's filesystems name it: s3:// as s3a://, local paths as file:// URIs;
    URIs with a scheme (`file:/x`, `hdfs://nn/x`, an external path) as they are."""
    scheme = uri_scheme(path)
    if scheme is None:
        table_scheme = uri_scheme(table_path)
        if table_scheme is None or table_scheme == "file":
            return "file://" + path
        # a root path keeps the table's authority (hdfs://nn/x); an object store's holds its bucket (s3 b/x)
        authority = urlsplit(table_path).netloc if path.startswith("/") else ""
        scheme, path = table_scheme, f"{table_scheme}://{authority}{path}"
    if scheme in ("s3", "s3n"):
        return "s3a" + path[len(scheme):]
    return path


def uri_scheme(path: str) -> str | None:
    """The scheme of a URI (`s3`, `file`, ...), or None for a plain path."""
    match = re.match(r"([a-zA-Z][a-zA-Z0-9+.-]+):", path)
    return match.group(1).lower() if match else None


def _cause(e: Exception) -> str:
    """The line of an error that names the failure (a Py4J error's first line only names the call)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    named = [line for line in lines if "Exception:" in line or "Error:" in line]
    return (named or lines or [type(e).__name__])[0][:300]


def reset_warnings() -> None:
    """Forget which fallbacks were reported (a new session, or a test)."""
    _warned.clear()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
