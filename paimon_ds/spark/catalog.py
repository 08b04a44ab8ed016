"""attach(): a warehouse's tables as named tables of a SparkSession, for plain `spark.sql`.

Spark gives a Python data source none of a catalog table's OPTIONS, LOCATION or TBLPROPERTIES, but it
does remember which source a table uses. So every Paimon table gets its own registered source, a
subclass of PaimonDataSource with the table's path bound, and a session-catalog table that uses it:
`INSERT INTO`, `INSERT OVERWRITE`, `SELECT`, `saveAsTable` and `spark.read.table` then reach the
right Paimon table. Only `spark.sql` and `spark.dataSource.register` are used (no JVM handle), the latter
through register_source, so that any session of an application can attach.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from ..catalog import Catalog, CatalogError
from .jvm import session_conf
from .options import session_storage, storage_job_options
from .session import register_source
from .source import PaimonDataSource
from .system import drop_system_views, global_temp_database, quote, register_system_views

# Session conf entries `paimon_ds.attached.<db>.<table>` = the source a session table uses (Spark does
# not show a Python source table's provider), so a second attach knows what it attached before.
ATTACHED_CONF = "paimon_ds.attached"
# A global temporary view `paimon_ds_attached$db.table` (one row: the source) for every session table attach()
# made. Sessions of one Spark application share the session catalog (every Spark Connect client of a server
# does) but not their conf, so this is how a new session's attach() knows a table another session attached is
# ours. One view per table: recording one costs one statement, whatever the number of tables.
ATTACHED_VIEW = "paimon_ds_attached"
# The warehouse attached last: where paimon_ds.sql resolves table names.
WAREHOUSE_CONF = "paimon_ds.warehouse"
# Storage options (credentials) per warehouse stay in this driver process, never in the session conf.
_STORAGE_OPTIONS: dict[str, dict[str, Any] | None] = {}


def source_name(path: str, database: str, table: str) -> str:
    """A provider name Spark's parser accepts, unique per table path."""
    readable = re.sub(r"\W", "_", f"{database}__{table}")
    return f"paimon__{readable}__{hashlib.sha1(path.encode()).hexdigest()[:8]}"


def bound_source(path: str, name: str, storage_options: dict[str, Any] | None = None,
                 entry: str | None = None) -> type[PaimonDataSource]:
    """PaimonDataSource with the table path and storage settings bound (and ``entry``, the session table
    `db.table` that uses it); pickled by value (it is not a module attribute), so the settings reach the worker
    processes that run it."""
    storage = storage_job_options(storage_options)

    class BoundPaimonTable(PaimonDataSource):
        session_storage = storage
        catalog_entry = entry

        @classmethod
        def name(cls) -> str:
            return name

        def __init__(self, options) -> None:
            super().__init__({**dict(options), "path": path})

    BoundPaimonTable.__name__ = BoundPaimonTable.__qualname__ = name
    return BoundPaimonTable


def attach(spark: SparkSession, warehouse: str, storage_options: dict[str, Any] | None = None) -> Catalog:
    """Make every table of the warehouse a named table of ``spark`` (`db.table`). Call it again to pick up
    tables created since (by paimon_ds, Java Paimon or pypaimon); existing names are kept."""
    storage_options = {**session_storage(spark), **(storage_options or {})} or None
    catalog = Catalog(warehouse, storage_options)
    spark.conf.set(WAREHOUSE_CONF, warehouse)
    _STORAGE_OPTIONS[warehouse] = storage_options
    # The session mirrors one warehouse (paimon_ds.sql resolves names in it): tables attached before that are
    # not in it (another warehouse, or dropped since by another engine) leave the session.
    present = {(db, t) for db in catalog.list_databases() for t in catalog.list_tables(db)}
    for db, table in attached_tables(spark):
        if (db, table) not in present:
            detach_table(spark, db, table)
    for db in catalog.list_databases():
        existing = {r.tableName for r in _spark_tables(spark, db)}
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(db)}")
        for table in catalog.list_tables(db):
            _attach_one(spark, catalog, storage_options, db, table, table.lower() in existing)
    return catalog


def attach_table(spark: SparkSession, catalog: Catalog, storage_options: dict[str, Any] | None, database: str,
                 table: str) -> None:
    """One table of the attached warehouse (``catalog``) made (again) a session table, as attach() makes it, without
    visiting the warehouse's other tables: what DDL through paimon_ds.sql does after it changed the table."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")
    exists = spark.catalog.tableExists(f"{quote(database)}.{quote(table)}")
    _attach_one(spark, catalog, storage_options, database, table, exists)


def _attach_one(spark: SparkSession, catalog: Catalog, storage_options: dict[str, Any] | None, db: str,
                table: str, exists: bool) -> None:
    """Make the catalog's table `db.table` a session table of ``spark`` (``exists``: Spark has one by that
    name), unless it is one already."""
    path = catalog.table_path(f"{db}.{table}")
    name = source_name(path, db, table)
    source = bound_source(path, name, storage_options, f"{db}.{table}")
    register_source(spark, source)
    qualified = f"{quote(db)}.{quote(table)}"
    key = f"{ATTACHED_CONF}.{db}.{table}"
    here = spark.conf.get(key, None)
    if here == name and exists:
        if _columns(spark, qualified) != _columns_of(source):
            # changed since: by plain spark.sql DDL (Spark's entry only) or another engine (Paimon's only)
            spark.sql(f"DROP TABLE {qualified}")
            spark.sql(f"CREATE TABLE {qualified} USING {name}")
        return
    owner = here or (_attached_by(spark, db, table) if exists else None)  # by this session, or by another
    if exists and owner is None:
        raise CatalogError(f"the session already has a table {db}.{table} that paimon_ds did not "
                           "attach; drop it before attaching this warehouse")
    if exists and owner != name:
        spark.sql(f"DROP TABLE {qualified}")  # attached before, from another warehouse path
    if not exists or owner != name:
        spark.sql(f"CREATE TABLE {qualified} USING {name}")
    spark.conf.set(key, name)
    _record_attached(spark, db, table, name)
    register_system_views(spark, path, db, table, storage_options)  # global_temp.`db.t$snapshots`...


def _columns(spark: SparkSession, qualified: str) -> list[tuple[str, str]]:
    """The session table's columns, as Spark's catalog holds them."""
    return [(f.name, f.dataType.simpleString()) for f in spark.table(qualified).schema.fields]


def _columns_of(source: type[PaimonDataSource]) -> list[tuple[str, str]]:
    """The columns a session table using ``source`` gets: the Paimon table's now."""
    return [(f.name, f.dataType.simpleString()) for f in source({}).schema().fields]


def _record_name(database: str, table: str) -> str:
    return quote(f"{ATTACHED_VIEW}${database}.{table.lower()}")


def _record_view(spark: SparkSession, database: str, table: str) -> str:
    return f"{quote(global_temp_database(spark))}.{_record_name(database, table)}"


def _attached_by(spark: SparkSession, database: str, table: str) -> str | None:
    """The source of the session table `database.table` when attach() made it, in any session; else None."""
    try:
        rows = spark.table(_record_view(spark, database, table)).collect()
    except AnalysisException:
        return None
    return rows[0].source if rows else None


def _record_attached(spark: SparkSession, database: str, table: str, source: str) -> None:
    # source names are word characters (source_name): nothing to escape in the literal
    spark.sql(f"CREATE OR REPLACE GLOBAL TEMPORARY VIEW {_record_name(database, table)} AS "
              f"SELECT '{source}' AS source")


def _spark_tables(spark: SparkSession, database: str) -> list:
    try:
        return spark.sql(f"SHOW TABLES IN {quote(database)}").collect()
    except Exception:  # noqa: BLE001 - the database is not in the session catalog yet
        return []


def attached_tables(spark: SparkSession) -> list[tuple[str, str]]:
    """(database, table) of every session table attach() made in ``spark``."""
    prefix = ATTACHED_CONF + "."
    return [tuple(k[len(prefix):].split(".", 1)) for k in session_conf(spark) if k.startswith(prefix)]


def storage_options_of(warehouse: str) -> dict[str, Any] | None:
    return _STORAGE_OPTIONS.get(warehouse)


def detach_table(spark: SparkSession, database: str, table: str) -> None:
    """Remove a table attach() made from the session (after DROP / ALTER / RENAME in the catalog)."""
    key = f"{ATTACHED_CONF}.{database}.{table}"
    if spark.conf.get(key, None) is None:
        return
    spark.sql(f"DROP TABLE IF EXISTS {quote(database)}.{quote(table)}")
    spark.conf.unset(key)
    spark.sql(f"DROP VIEW IF EXISTS {_record_view(spark, database, table)}")
    drop_system_views(spark, database, table)
