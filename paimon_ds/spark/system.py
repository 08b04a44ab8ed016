"""Paimon system tables (`$snapshots`, `$files`, ...) as Spark DataFrames and SQL views.

Each table gets its own registered source, like attach()'s per-table sources: a subclass with the path bound,
created here and so pickled by value; the system table is a read option (`system`), or bound too where a
time-travel read needs a source of its own. Its reader computes the system table
in read(), on an executor, every time a query runs: SQL always sees the table as it is now. Read-only.

Spark's session catalog refuses `$` in table names (`db.`t$snapshots`` cannot be created there), so
attach() names them as global temporary views: `global_temp.`db.t$snapshots``. No JVM handle is used.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..operation.change_tables import data_system_table, data_system_table_schema
from ..readers.system_tables import DATA_SYSTEM_TABLES, SYSTEM_TABLES, normalize_name, system_table_schema
from ..readers.system_tables import system_table as compute_system_table
from ..table import Table
from .options import check_s3_credentials, session_storage
from .python_worker import WorkerSide
from .session import register_source
from .types import arrow_schema_for_spark, spark_schema

GLOBAL_TEMP_CONF = "spark.sql.globalTempDatabase"
SYSTEM_VIEWS_CONF = "spark.paimon_ds.attach.system-tables"


def system_source_name(path: str, system: str, options: dict[str, str] | None = None) -> str:
    """A provider name Spark's parser accepts, unique per (table path, system table, read options): a time-travel
    read of a system table must not replace the registration the table's views read."""
    leaf = re.sub(r"\W", "_", path.rstrip("/").rsplit("/", 1)[-1])
    key = path if not options else path + "\0" + json.dumps(options, sort_keys=True)
    return f"paimon_sys__{leaf}__{system}__{hashlib.sha1(key.encode()).hexdigest()[:8]}"


class PaimonSystemTableSource(WorkerSide, DataSource):
    """The system tables of one Paimon table; subclasses bind ``path``, ``storage_options``, the
    ``travel_options`` (time travel: `scan.version`, `scan.timestamp-millis` ...) and ``system``, or leave the
    system table to the read option `system` (one registration serves all of a table's views)."""

    path: str = ""
    system: str = ""
    storage_options: dict[str, Any] | None = None
    travel_options: dict[str, str] | None = None  # not `options`: DataSource.__init__ sets that to the read's

    @classmethod
    def name(cls) -> str:
        return system_source_name(cls.path, cls.system, cls.travel_options)

    def chosen_system(self) -> str:
        """The bound system table, or the one the read names (option `system`)."""
        if self.system:
            return self.system
        chosen = self.options.get("system")
        if not chosen:
            raise ValueError(f"{self.name()} serves every system table of {self.path}: name one with "
                             "option('system', 'snapshots')")
        return normalize_name(chosen)

    def schema(self) -> StructType:
        system = self.chosen_system()
        if system in DATA_SYSTEM_TABLES:  # the table's own columns
            return spark_schema(data_system_table_schema(self._table(), system))
        return spark_schema(system_table_schema(system))

    def _table(self) -> Table:
        return Table.load(self.path, self.travel_options, storage_options=self.storage_options)

    def reader(self, schema: StructType) -> DataSourceReader:
        check_s3_credentials(self.path, {}, self.storage_options or {})  # here, not in the read task
        return SystemTableReader(self.path, self.chosen_system(), self.storage_options, schema,
                                 self.travel_options)


class SystemTableReader(WorkerSide, DataSourceReader):
    def __init__(self, path: str, system: str, storage_options: dict[str, Any] | None, schema: StructType,
                 options: dict[str, str] | None = None) -> None:
        self.path = path
        self.system = system
        self.storage_options = storage_options
        self.options = options
        self.read_schema = arrow_schema_for_spark(schema)

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]  # metadata is small: one task

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        source = Table.load(self.path, self.options, storage_options=self.storage_options)
        if self.system in DATA_SYSTEM_TABLES:
            table = data_system_table(source, self.system)
        else:
            table = compute_system_table(source.store, self.system)
        # Spark wants exactly the declared schema: its columns, microsecond timestamps, same nullability
        table = table.select(self.read_schema.names).cast(self.read_schema)
        yield from table.to_batches()


def system_source(path: str, system: str, storage_options: dict[str, Any] | None = None,
                  options: dict[str, str] | None = None) -> type[PaimonSystemTableSource]:
    """A PaimonSystemTableSource subclass with the table path, system table ("": the read's option `system`)
    and read options bound."""
    key = normalize_name(system) if system else ""
    name = system_source_name(path, key, options)
    bound = type(name, (PaimonSystemTableSource,), {
        "path": path, "system": key, "storage_options": dict(storage_options) if storage_options else None,
        "travel_options": dict(options) if options else None,
        "__module__": __name__, "__qualname__": name,
    })
    return bound


def system_table(spark: SparkSession, path: str, name: str,
                 storage_options: dict[str, Any] | None = None, options: dict[str, str] | None = None) -> DataFrame:
    """The system table ``name`` (snapshots, schemas, options, files, manifests, partitions, buckets, tags, ...,
    and audit_log and ro, which read the table's rows) of the Paimon table at ``path``, as a DataFrame computed
    when it is read (in one task). ``options``: read options, e.g. time travel (`scan.version`: `$files` of that
    version, as Paimon's system tables travel)."""
    source = system_source(path, name, {**session_storage(spark), **(storage_options or {})}, options)
    register_source(spark, source)
    return spark.read.format(source.name()).load()


def quote(name: str) -> str:
    """A name as a Spark SQL identifier (backquoted)."""
    return "`" + name.replace("`", "``") + "`"


def global_temp_database(spark: SparkSession) -> str:
    """The database of the session's global temporary views."""
    return spark.conf.get(GLOBAL_TEMP_CONF, "global_temp") or "global_temp"


def register_system_views(spark: SparkSession, path: str, database: str, table: str,
                          storage_options: dict[str, Any] | None = None) -> list[str]:
    """Every system table of the table at ``path`` as a global temporary view `db.table$name`; returns their
    qualified names (`global_temp.`db.table$name``). Spark conf `spark.paimon_ds.attach.system-tables=false`
    turns this off (each view costs attach() ~30 ms)."""
    if str(spark.conf.get(SYSTEM_VIEWS_CONF, "true")).lower() == "false":
        return []
    global_db = global_temp_database(spark)
    names = []
    paimon_table = Table.load(path, storage_options=storage_options)
    source = system_source(path, "", storage_options)  # one registration for the table's views
    register_source(spark, source)
    for system in (*SYSTEM_TABLES, *DATA_SYSTEM_TABLES):
        view = f"{database}.{table}${system}"
        # the schema given here spares Spark a Python worker to ask the source for it (~1/3 of the cost)
        schema = spark_schema(data_system_table_schema(paimon_table, system) if system in DATA_SYSTEM_TABLES
                              else system_table_schema(system))
        spark.read.format(source.name()).option("system", system).schema(schema).load() \
            .createOrReplaceGlobalTempView(quote(view))
        names.append(f"{quote(global_db)}.{quote(view)}")
    return names


def drop_system_views(spark: SparkSession, database: str, table: str) -> None:
    """Remove a table's system views (after DROP / RENAME / ALTER; attach() makes them again)."""
    global_db = global_temp_database(spark)
    for system in (*SYSTEM_TABLES, *DATA_SYSTEM_TABLES):
        spark.sql(f"DROP VIEW IF EXISTS {quote(global_db)}.{quote(f'{database}.{table}${system}')}")
