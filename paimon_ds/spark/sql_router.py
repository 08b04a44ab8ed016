"""paimon_ds.sql(): the SQL statements Spark cannot route to a Python data source, run with Paimon's semantics.

Spark drops a Python source table's OPTIONS / TBLPROPERTIES / LOCATION, calls nothing at CREATE time,
and refuses DELETE / UPDATE / MERGE and PARTITION clauses on such tables. So the statement is parsed by
the session's own parser (no SQL parser of ours; paimon_ds.spark.sql) and, if it is one of those, run here
against the attached warehouse: DDL through paimon_ds.Catalog (sql_ddl), row-level statements and INSERTs
that need the package's write (sql_dml), `CALL sys.<procedure>` through paimon_ds.procedures (sql_call),
Paimon's tag DDL (`ALTER TABLE t CREATE TAG ...`, `SHOW TAGS t`: sql_tags).
Queries on attached tables read them natively (sql_query). Every other statement goes to spark.sql.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from .catalog import WAREHOUSE_CONF
from .sql import SqlContext, SqlError, parse_plan, plan_kind
from .sql_call import call
from .sql_ddl import DDL_HANDLERS
from .sql_dml import DML_HANDLERS, needs_package_write
from .sql_query import is_query, native_query
from .sql_tags import run_tag_statement, tag_statement

# Plan node -> what runs it here
HANDLERS: dict[str, Callable[[SqlContext, Any], Any]] = {**DDL_HANDLERS, **DML_HANDLERS, "Call": call}

# Plan nodes refused outright
REFUSED = {
    "ReplaceTable": "CREATE OR REPLACE TABLE",
    "ReplaceTableAsSelect": "CREATE OR REPLACE TABLE ... AS SELECT",
}


def run(spark: SparkSession, statement: str, warehouse: str | None = None) -> DataFrame | None:
    """Run ``statement``: here if Spark cannot run it on a Paimon table, else with spark.sql."""
    tags = tag_statement(statement)  # Paimon's tag DDL, which Spark's parser does not know
    if tags is not None:
        return run_tag_statement(SqlContext(spark, warehouse), tags)
    plan = parse_plan(spark, statement)
    kind = plan_kind(plan)
    handler = HANDLERS.get(kind)
    if handler is None:
        if kind in REFUSED:
            raise SqlError(f"{REFUSED[kind]} is not supported on Paimon tables by paimon_ds.sql")
        if spark.conf.get(WAREHOUSE_CONF, None) or warehouse:
            ctx = SqlContext(spark, warehouse)
            if is_query(ctx, plan):
                native = native_query(ctx, plan)
                if native is not None:
                    return native
        return spark.sql(statement)
    if kind == "InsertIntoStatement" and plan.partitionSpec().isEmpty() and not needs_package_write(
            spark, warehouse, plan):
        return spark.sql(statement)  # plain INSERT: Spark routes it to the attached table itself
    return handler(SqlContext(spark, warehouse), plan)
