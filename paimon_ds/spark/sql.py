"""What paimon_ds.sql reads a statement with: SqlError, the parse by the session's own parser, the parsed
plan's Scala values as Python ones, and SqlContext (the attached warehouse a statement runs against).

The statements themselves: sql_ddl (CREATE / DROP / ALTER), sql_dml (DELETE / UPDATE / MERGE / INSERT),
sql_call (CALL sys.<procedure>); sql_router routes a statement to them or to spark.sql.

The parser is reached through the classic session's JVM; a Spark Connect client cannot reach it and
gets a clear error (the Python API does the same work there).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, _parse_datatype_json_string

from ..catalog import Catalog, Identifier
from ..errors import SqlError
from ..table import Table, TableNotFound
from .catalog import WAREHOUSE_CONF, attach_table, detach_table, storage_options_of
from .jvm import java_map, jvm_class


def parse_plan(spark: SparkSession, statement: str) -> Any:
    """The statement's unresolved logical plan (a py4j handle), from the session's own SQL parser."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise SqlError("paimon_ds.sql parses with Spark's own SQL parser, which a Spark Connect client cannot "
                       "reach; use the Python API instead (paimon_ds.Catalog, paimon_ds.delete / update / merge, "
                       "paimon_ds.procedures) or run plain statements with spark.sql")
    return jsession.sessionState().sqlParser().parsePlan(statement)


def plan_kind(plan: Any) -> str:
    """A plan node's class name (CreateTable, MergeIntoTable, ...): what the statement is."""
    return str(plan.getClass().getSimpleName())


class SqlContext:
    """A statement's session and the warehouse it runs against (the one attached last, or ``warehouse``)."""

    def __init__(self, spark: SparkSession, warehouse: str | None) -> None:
        self.spark = spark
        warehouse = warehouse or spark.conf.get(WAREHOUSE_CONF, None)
        if not warehouse:
            raise SqlError("no Paimon warehouse: call paimon_ds.attach(spark, warehouse) first, or pass warehouse=")
        self.warehouse = warehouse
        self.storage_options = storage_options_of(warehouse)
        self.catalog = Catalog(warehouse, self.storage_options)

    def identifier(self, parts: list[str]) -> Identifier:
        if len(parts) == 1:
            return Identifier(self.spark.catalog.currentDatabase(), parts[0])
        if len(parts) == 2:
            return Identifier(parts[0], parts[1])
        if len(parts) == 3 and parts[0] == "spark_catalog":
            return Identifier(parts[1], parts[2])
        raise SqlError(f"table name {'.'.join(parts)} has too many parts: use database.table")

    def table(self, parts: list[str]) -> tuple[Identifier, Table]:
        ident = self.identifier(parts)
        return ident, self.catalog.get_table(ident)

    def refresh(self, ident: Identifier, dropped: bool = False) -> None:
        """Bring the session's named table in line with the catalog after DDL (that table only: DDL costs the
        same in a warehouse of a thousand tables as in one of one)."""
        detach_table(self.spark, ident.database, ident.table)
        if not dropped:
            attach_table(self.spark, self.catalog, self.storage_options, ident.database, ident.table)


# ------------------------------------------------------------------ Scala values from the JVM
def scala_list(s: Any) -> list:
    """A Scala Seq as a list."""
    return [s.apply(i) for i in range(s.size())]


def scala_option(o: Any) -> Any:
    """A Scala Option's value, or None."""
    return o.get() if o.isDefined() else None


def scala_option_str(o: Any) -> str | None:
    v = scala_option(o)
    return str(v) if v is not None else None


def scala_dict(m: Any) -> dict:
    """A Scala Map as a dict with string keys."""
    return {str(t._1()): t._2() for t in scala_list(m.toSeq())}


def relation_options(spark: SparkSession, node: Any) -> dict[str, str]:
    """The options a statement gives a table (`INSERT INTO t WITH ('k' = 'v') ...`), as written; {} for none."""
    if plan_kind(node) != "UnresolvedRelation":
        return {}
    # Spark adds its own (`__required_write_privileges__`) to an INSERT's
    return {str(k): str(v) for k, v in java_map(spark, node.options().asCaseSensitiveMap()).items()
            if not str(k).startswith("__")}


def name_parts(node: Any) -> list[str]:
    """Name parts of an UnresolvedIdentifier / UnresolvedRelation / UnresolvedTable / SubqueryAlias."""
    kind = plan_kind(node)
    if kind == "SubqueryAlias":
        return name_parts(node.child())
    if kind in ("UnresolvedIdentifier", "UnresolvedProcedure"):
        return [str(p) for p in scala_list(node.nameParts())]
    if hasattr(node, "multipartIdentifier"):
        return [str(p) for p in scala_list(node.multipartIdentifier())]
    raise SqlError(f"expected a table name, got {node.toString()}")


def alias_of(node: Any, default: str) -> str:
    """A relation's alias (`... AS t`), or ``default``."""
    if plan_kind(node) == "SubqueryAlias":
        return str(node.alias())
    return default


def expression_sql(expr: Any) -> str:
    """A parsed expression as SQL text, for F.expr."""
    return str(expr.sql())


def constant_value(spark: SparkSession, expr: Any) -> Any:
    """A constant expression's Python value (Spark evaluates anything beyond a plain literal)."""
    if plan_kind(expr) == "Literal":
        v = expr.value()
        if v is None:
            return None
        type_name = str(expr.dataType().typeName())
        if type_name == "string":
            return str(v.toString())
        if type_name in ("integer", "long", "short", "byte", "boolean", "double", "float"):
            return v
    return spark.range(1).select(F.expr(expression_sql(expr))).first()[0]


def query_dataframe(spark: SparkSession, plan: Any) -> DataFrame:
    """A parsed query (CTAS, MERGE source, INSERT) as a DataFrame of this session."""
    # classic PySpark only, which parse_plan has checked: imported here, so that a Spark Connect client
    # (whose pyspark may lack pyspark.sql.classic) still gets parse_plan's SqlError
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
    jdf = jvm_class(spark, "org.apache.spark.sql.classic.Dataset").ofRows(spark._jsparkSession, plan)
    return ClassicDataFrame(jdf, spark)


def spark_type(jtype: Any) -> DataType:
    """A parsed column type as a pyspark DataType."""
    return _parse_datatype_json_string(str(jtype.json()))


__all__ = ["SqlError", "SqlContext", "TableNotFound", "parse_plan"]
