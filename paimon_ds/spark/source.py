"""PaimonDataSource: Spark's options -> a core Table; hands out readers and writers."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from ..options.registry import OptionError, Options
from ..options.storage import is_storage_key, split_storage
from ..schema.types import SchemaError
from ..store.row_tracking import with_row_tracking_columns
from ..table import Table
from .options import (
    BUCKET_COLUMN,
    FILE_COLUMN_OPTION,
    JOB_OPTIONS,
    ONLY_FILES_OPTION,
    POSITION_COLUMN_OPTION,
    READ_CHANGELOG_OPTION,
    ROW_KIND_COLUMN_OPTION,
    SPARK_OPTIONS,
    check_s3_credentials,
    session_storage,
    storage_options,
    table_path,
)
from .python_worker import WorkerSide
from .read import PaimonReader
from .stream import PaimonStreamReader, PaimonStreamWriter
from .types import spark_schema
from .write import PaimonBatchWriter


def source_for_session(spark: Any) -> type[PaimonDataSource]:
    """PaimonDataSource, bound to the session's storage settings when it has any: Python data sources run in
    worker processes that cannot read Spark conf, so the settings travel with the (pickled) class."""
    storage = session_storage(spark)
    if not storage:
        return PaimonDataSource

    class SessionPaimonDataSource(PaimonDataSource):
        session_storage = storage

    return SessionPaimonDataSource


class PaimonDataSource(WorkerSide, DataSource):
    """`spark.read.format("paimon")` / `df.write.format("paimon")` on a Paimon table path."""

    # storage settings from the registering session's Spark conf (see source_for_session)
    session_storage: dict[str, str] = {}
    # the session table (`db.table`) of the per-table sources attach() registers; None for format("paimon")
    catalog_entry: str | None = None

    @classmethod
    def name(cls) -> str:
        return "paimon"

    def __init__(self, options) -> None:
        super().__init__(options)
        # Spark lower-cases option keys; Paimon's own keys are lower-case already.
        self.opts = {str(k).lower(): str(v) for k, v in options.items()}
        # Paimon's Spark option: read the rows as `$audit_log` has them, a leading `rowkind` column (its SparkSource
        # reads an AuditLogTable then); paimon_ds's row-kind column, under Paimon's name unless one is given
        changelog = self.opts.pop(READ_CHANGELOG_OPTION, None)
        if changelog is not None and Options({READ_CHANGELOG_OPTION: changelog}).get(READ_CHANGELOG_OPTION):
            self.opts.setdefault(ROW_KIND_COLUMN_OPTION, "rowkind")

    def _table(self) -> Table:
        return Table.load(table_path(self.opts), self._job_options(), self._storage())

    def _job_options(self) -> dict[str, str]:
        return {k: v for k, v in self.opts.items()
                if k not in SPARK_OPTIONS and k not in JOB_OPTIONS and not is_storage_key(k)}

    def _storage(self) -> dict[str, str] | None:
        # Every read and write plans through here (schema, reader, writer, stream reader and writer), in the
        # Python process Spark's driver starts for planning: missing credentials stop the job before any task.
        check_s3_credentials(table_path(self.opts), split_storage(self.opts)[1], self.session_storage)
        return storage_options(self.opts, self.session_storage)

    def schema(self) -> StructType:
        table = self._table()
        schema = table.arrow_schema()
        row_kind = self.opts.get(ROW_KIND_COLUMN_OPTION)
        file_column = self.opts.get(FILE_COLUMN_OPTION)
        for option, extra in ((ROW_KIND_COLUMN_OPTION, row_kind), (FILE_COLUMN_OPTION, file_column)):
            if extra and extra in schema.names:
                raise OptionError(f"{option}={extra!r} names a column the table already has")
        if row_kind:
            schema = schema.insert(0, pa.field(row_kind, pa.string(), nullable=False))
        schema = with_row_tracking_columns(table.store, schema)
        if file_column:
            schema = schema.append(pa.field(file_column, pa.string(), nullable=False))
            if self.opts.get(POSITION_COLUMN_OPTION):
                schema = schema.append(pa.field(self.opts[POSITION_COLUMN_OPTION], pa.int64(), nullable=False))
        return spark_schema(schema)

    def check_catalog_entry(self, schema: StructType) -> None:
        """An attached table's columns are those Spark stored when attach() made its session table. Plain
        spark.sql DDL (ALTER TABLE ... ADD COLUMNS, RENAME COLUMN) changes only that entry, Spark running no data
        source code for it, and DDL in another engine changes only the Paimon table: either way the two differ,
        and a read or write would drop or invent columns. Refuse it, naming what brings them in line."""
        if self.catalog_entry is None:
            return
        job_columns = {BUCKET_COLUMN, *(self.opts.get(o) for o in (ROW_KIND_COLUMN_OPTION, FILE_COLUMN_OPTION,
                                                                     POSITION_COLUMN_OPTION))}
        given = {f.name: f.dataType.simpleString() for f in schema.fields if f.name not in job_columns}
        # the table's own columns: loaded without this job's options (a write's are not a read's)
        table = Table.load(table_path(self.opts), None, self._storage())
        columns = spark_schema(with_row_tracking_columns(table.store, table.arrow_schema()))
        paimon = {f.name: f.dataType.simpleString() for f in columns.fields if f.name not in job_columns}
        if given == paimon:
            return
        only_spark = sorted(f"{n} {t}" for n, t in given.items() if paimon.get(n) != t)
        only_paimon = sorted(f"{n} {t}" for n, t in paimon.items() if given.get(n) != t)
        raise SchemaError(
            f"Spark's session table {self.catalog_entry} no longer matches Paimon table {table_path(self.opts)}: "
            f"Spark has {only_spark or 'nothing'} that Paimon does not, Paimon has {only_paimon or 'nothing'} that "
            "Spark does not. Plain spark.sql ALTER TABLE changes only Spark's catalog entry (Spark runs no data "
            "source code for DDL); run DDL through paimon_ds.sql(spark, ...), and call paimon_ds.attach(spark, "
            "warehouse) again to bring the session's tables in line with the warehouse")

    def reader(self, schema: StructType) -> DataSourceReader:
        self.check_catalog_entry(schema)
        only = self.opts.get(ONLY_FILES_OPTION)
        table = self._table()
        table.check_readable()  # while Spark plans: before any task reads a row
        return PaimonReader(table, schema, self.opts.get(ROW_KIND_COLUMN_OPTION),
                            self.opts.get(FILE_COLUMN_OPTION), set(json.loads(only)) if only else None,
                            self.opts.get(POSITION_COLUMN_OPTION),
                            # the planner cannot read Spark conf: its machine's cores stand for the parallelism
                            os.cpu_count())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        self.check_catalog_entry(schema)
        return PaimonStreamReader(self._table(), schema, self.opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        self.check_catalog_entry(schema)
        return PaimonStreamWriter(table_path(self.opts), self._job_options(), schema, overwrite,
                                  self._storage())

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        self.check_catalog_entry(schema)
        return PaimonBatchWriter(table_path(self.opts), self._job_options(), schema, overwrite,
                                 self._storage(),
                                 {k: v for k, v in self.opts.items() if k in JOB_OPTIONS})

