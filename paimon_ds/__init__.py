"""paimon_ds: Apache Paimon tables from PySpark through the Python Data Source API.

The public API: the core (Catalog, Table, procedures; Spark-free reads and writes: Table.scan, Table.append,
write_arrow, col), and the Spark entry points, each defined in paimon_ds.spark and imported when called, so
that the core can be used without pyspark installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from . import procedures
from .casts.rules import CastError
from .catalog import (
    Catalog,
    CatalogError,
    DatabaseAlreadyExists,
    DatabaseNotEmpty,
    DatabaseNotFound,
    TableAlreadyExists,
)
from .deletionvectors.index_file import DeletionVectorError
from .deletionvectors.roaring import RoaringFormatError
from .errors import (
    CommitLandedError,
    ConnectError,
    CorruptFileError,
    MissingFileError,
    PaimonDsError,
    RowLevelError,
    SqlError,
)
from .fs.file_io import OutcomeUnknown, StorageError
from .operation.evolution import DataEvolutionError
from .operation.messages import CommitConflict
from .operation.row_level import Delete, Insert, MergeBuilder, RowLevelResult, Update
from .options.registry import OptionError
from .predicate.expressions import FilterError, col, parse_filter
from .readers.lazy import NotExpressibleError
from .readers.scan import MissingDependencyError, Scan, time_travel_options
from .schema.change import ColumnAlreadyExists, ColumnNotFound
from .schema.types import SchemaError
from .snapshot.branch import BranchError, BranchNotFound
from .snapshot.manager import SnapshotExpired, SnapshotNotFound
from .spark.options import MissingCredentialsError  # pyspark-free module
from .spark.python_worker import freeze_imported_objects  # pyspark-free module
from .table import Table, TableNotFound, write_arrow

# in a Spark Python worker: PySpark collects garbage after every task; the modules just imported never are
freeze_imported_objects()

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# the top-level packages the Spark entry points need (the `spark` extra)
_SPARK_PACKAGES = ("pyspark", "py4j", "pandas")


@contextmanager
def _needs_spark(entry: str) -> Iterator[None]:
    """Import a Spark entry point's module: without pyspark (the `spark` extra), a MissingDependencyError that
    says what to install, instead of a bare ModuleNotFoundError."""
    try:
        yield
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in _SPARK_PACKAGES:
            raise
        raise MissingDependencyError(f"{entry} needs pyspark ({e.name} is not installed): pip install "
                                     "'paimon_ds[spark]' (the Spark-free API, paimon_ds.Table, write_arrow and the "
                                     "paimon-ds CLI, works without it)") from e

__version__ = "0.1.0"
__all__ = ["register", "session", "attach", "sql", "read", "write", "foreach_batch_writer", "compact", "delete",
           "update", "merge", "Update", "Delete", "Insert", "procedures", "system_table", "Catalog", "Table",
           "__version__",
           # Spark-free reads and writes
           "Scan", "col", "parse_filter", "write_arrow", "MergeBuilder", "RowLevelResult",
           # errors: every one derives from PaimonDsError and from the built-in exception it refines
           "PaimonDsError", "BranchError", "BranchNotFound", "CastError", "CatalogError", "ColumnAlreadyExists",
           "ColumnNotFound", "CommitConflict", "CommitLandedError", "ConnectError", "CorruptFileError",
           "DataEvolutionError", "DatabaseAlreadyExists",
           "DatabaseNotEmpty", "DatabaseNotFound", "DeletionVectorError", "FilterError", "MissingCredentialsError",
           "MissingDependencyError", "MissingFileError", "NotExpressibleError", "OptionError", "OutcomeUnknown",
           "RoaringFormatError", "RowLevelError", "SchemaError", "SnapshotExpired", "SnapshotNotFound", "SqlError",
           "StorageError", "TableAlreadyExists", "TableNotFound"]


def register(spark: SparkSession) -> None:
    """Register the `paimon` format on a SparkSession (classic or Spark Connect): any session of the application
    (`spark.newSession()` too). It binds the session's `spark.hadoop.fs.s3a.*` settings into the source: call it
    again after changing them. On Connect it first ships the package to the server as a session artifact
    (paimon_ds.spark.connect), so nothing of ours need be installed there for batch reads and writes."""
    with _needs_spark("paimon_ds.register"):
        from .spark.session import register as register_paimon  # pyspark: optional for the core, loaded on use
    register_paimon(spark)


def attach(spark: SparkSession, warehouse: str, storage_options: dict[str, Any] | None = None):
    """Make every table of a Paimon warehouse (`<warehouse>/<db>.db/<table>`) a named table of the session,
    for plain `spark.sql` (INSERT INTO / OVERWRITE, SELECT, SHOW TABLES, DESCRIBE) and
    `spark.read.table` / `saveAsTable`. Returns the warehouse's Catalog; call again after creating tables."""
    with _needs_spark("paimon_ds.attach"):
        from .spark.catalog import attach as attach_catalog  # pyspark: loaded on use
    return attach_catalog(spark, warehouse, storage_options)


def session(app_name: str = "paimon_ds", master: str | None = None, conf: dict[str, Any] | None = None,
            ) -> SparkSession:
    """A SparkSession configured from conf/spark-defaults.conf, with `paimon` registered. Spark's UI and session
    time zone (the JVM's: the user's) keep Spark's defaults; the console progress bar is on when stderr is a
    terminal. ``conf`` overrides any setting (e.g. {"spark.sql.session.timeZone": "UTC"})."""
    with _needs_spark("paimon_ds.session"):
        from .spark.session import build_session  # pyspark: loaded on use
    return build_session(app_name, master, conf)


def write(df: Any, path: str, mode: str = "append", options: dict[str, Any] | None = None,
          parallelism: int | None = None) -> None:
    """Write a DataFrame clustered by (partition, bucket), as Paimon's Flink sink shuffles.

    Each bucket then has one writer per commit, which compacts it inline (universal compaction),
    so primary-key tables keep few sorted runs without a separate compaction job.
    """
    with _needs_spark("paimon_ds.write"):
        from .spark.cluster import write as clustered_write  # pyspark: loaded on use
    clustered_write(df, path, mode, options, parallelism)


def foreach_batch_writer(path: str, commit_user: str, options: dict[str, Any] | None = None,
                         parallelism: int | None = None):
    """For `df.writeStream.foreachBatch(...)`: each micro-batch written as paimon_ds.write writes (the shuffle
    dynamic-bucket and cross-partition tables need) and committed exactly once per batch id."""
    with _needs_spark("paimon_ds.foreach_batch_writer"):
        from .spark.cluster import foreach_batch_writer as make  # pyspark: loaded on use
    return make(path, commit_user, options, parallelism)


def compact(spark: SparkSession, path: str, full: bool = False, options: dict[str, Any] | None = None,
            partitions: str | list[dict[str, Any]] | None = None):
    """Compact a table in Spark tasks (one per bucket); returns the COMPACT snapshot or None.

    Primary-key tables: universal compaction of each bucket's sorted runs (``full``: into one run).
    Append tables: small files rewritten into files of `target-file-size` (``full``: all of them).
    ``partitions``: only these, as `dt=x,hr=1;dt=y` or a list of {key: value} dicts."""
    with _needs_spark("paimon_ds.compact"):
        from .spark.cluster import compact as run_compact  # pyspark: loaded on use
    return run_compact(spark, path, full, options, partitions)


def sql(spark: SparkSession, statement: str, warehouse: str | None = None):
    """Run a SQL statement on the attached warehouse, with Paimon's semantics for what Spark cannot route
    to a Python data source: CREATE TABLE (TBLPROPERTIES with primary-key, bucket and any Paimon option),
    CREATE TABLE AS SELECT, ALTER TABLE, DROP TABLE, CREATE / DROP DATABASE, CALL sys.<procedure>(...),
    DELETE, UPDATE, MERGE INTO and INSERT ... PARTITION (...). Queries read the attached tables they name as
    paimon_ds.read does (Spark's own file readers where no merge is needed). Other statements go to spark.sql.
    Returns a DataFrame for queries and procedures, else None. Needs a classic (non-Connect) session."""
    with _needs_spark("paimon_ds.sql"):
        from .spark.sql_router import run  # pyspark: loaded on use
    return run(spark, statement, warehouse)


def read(spark: SparkSession, path: str, snapshot_id: int | None = None, timestamp: Any = None,
         tag: str | None = None, options: dict[str, Any] | None = None, native: bool = True,
         version: int | str | None = None, where: str | None = None):
    """A table as a DataFrame, at its latest snapshot or (time travel) at a snapshot id, at the snapshot
    that was latest at a timestamp (datetime, epoch millis or `yyyy-MM-dd HH:mm:ss`), at a tag, or at a
    ``version`` as `VERSION AS OF` names it (a tag of that name, else a snapshot id). Incremental reads:
    ``options={"incremental-between": "1,3"}``.

    Files that need no merging are read by Spark's own parquet / ORC reader (column pruning, filter pushdown,
    no Python), the rest by the `paimon` source, at the same snapshot (paimon_ds.spark.native_read); the rows
    and column types are those of `spark.read.format("paimon")`. ``native`` False: the source alone.

    ``where``: a SQL condition on the rows (`"id = 5 AND kind IN ('a', 'b')"`). Spark filters by it, and the
    files it rules out (partition values, stats, file indexes) are never opened, not even by Spark's reader;
    `.where(...)` on the DataFrame filters the rows too, but Spark's reader still opens every file."""
    # the same scan.* option, and the same refusal of two at once, as Table.scan's time travel
    opts = {**{str(k): str(v) for k, v in (options or {}).items()},
            **time_travel_options(snapshot_id, tag, timestamp, version)}
    with _needs_spark("paimon_ds.read"):
        from .spark.native_read import read as read_table  # pyspark: loaded on use
    return read_table(spark, path, opts, native, where)


def delete(spark: SparkSession, path: str, condition: Any = None, storage_options: dict[str, Any] | None = None):
    """DELETE the rows where ``condition`` (a SQL expression string or a Column) holds; None: every row.
    Returns the new snapshot, or None if no row matched. See paimon_ds.spark.rowlevel."""
    with _needs_spark("paimon_ds.delete"):
        from .spark.rowlevel import delete as run  # pyspark: loaded on use
    return run(spark, path, condition, storage_options)


def update(spark: SparkSession, path: str, assignments: dict[str, Any], condition: Any = None,
           storage_options: dict[str, Any] | None = None):
    """UPDATE ... SET ``assignments`` ({column: SQL expression or Column}) WHERE ``condition``."""
    with _needs_spark("paimon_ds.update"):
        from .spark.rowlevel import update as run  # pyspark: loaded on use
    return run(spark, path, assignments, condition, storage_options)


def merge(spark: SparkSession, path: str, source: Any, on: Any, when_matched=(), when_not_matched=(),
          when_not_matched_by_source=(), target_alias: str = "t", source_alias: str = "s",
          storage_options: dict[str, Any] | None = None):
    """MERGE INTO the table USING a DataFrame ON ``on``, with clauses Update / Delete / Insert (SQL semantics):
    `merge(spark, path, df, "t.id = s.id", [Update()], [Insert()])` is an upsert."""
    with _needs_spark("paimon_ds.merge"):
        from .spark.rowlevel import merge as run  # pyspark: loaded on use
    return run(spark, path, source, on, when_matched, when_not_matched, when_not_matched_by_source,
               target_alias, source_alias, storage_options)


def system_table(spark: SparkSession, path: str, name: str, storage_options: dict[str, Any] | None = None):
    """A Paimon system table (snapshots, schemas, options, files, manifests, partitions, buckets, tags) of the
    table at ``path`` as a DataFrame, computed when read. After attach(), SQL sees them as
    ``global_temp.`db.table$snapshots``` etc. Core (no Spark): paimon_ds.readers.system_tables.system_table."""
    with _needs_spark("paimon_ds.system_table"):
        from .spark.system import system_table as run  # pyspark: loaded on use
    return run(spark, path, name, storage_options)


