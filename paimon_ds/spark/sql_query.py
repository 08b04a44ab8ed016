"""paimon_ds.sql queries: attached tables read by Spark's own file readers, as paimon_ds.read reads them.

`spark.sql("SELECT ... FROM db.t")` on an attached table scans through the Python source (Spark gives a
catalog table no way to plan its scan in Python), which decodes every column in Python. paimon_ds.sql parses
the same query with the session's parser and, before Spark analyses it, puts in place of each relation that
names an attached table the plan of paimon_ds.read at the table's latest snapshot: merge-free files through
Spark's parquet / ORC readers with column pruning and filter pushdown, the rest through the Python source
(spark/native_read.py). Rows and column types are those of spark.sql (a test compares the two).

Time travel (`t VERSION AS OF 3`, `VERSION AS OF 'tag'`, `TIMESTAMP AS OF '...'`), which Spark refuses on the
Python source's relation, is read at that version as Paimon's Spark catalog reads it; so is Paimon's table
function `paimon_incremental_query('db.t', start, end)` (the option incremental-between). System tables are named
as Paimon's Spark catalog names them (``db.`t$snapshots` ``, ``db.`t$audit_log` ``).

Left to Spark as written (the Python source reads them, with the same rows): relations inside subquery
expressions and CTE bodies (the plan tree reaches them only through Scala functions), relations with
options (`WITH ('branch' = ...)`), streaming relations, single-part names a CTE or a temporary view shadows,
and tables of other catalogs.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .catalog import ATTACHED_CONF
from .native_read import read
from .options import storage_job_options
from .sql import (
    SqlContext,
    SqlError,
    constant_value,
    expression_sql,
    plan_kind,
    query_dataframe,
    relation_options,
    scala_list,
    scala_option,
)
from .system import system_table

INCREMENTAL_QUERY = "paimon_incremental_query"  # Paimon's Spark table function (PaimonTableValuedFunctions)

# Plan roots that are statements rather than queries: left to spark.sql untouched.
STATEMENT_TRAITS = ("org.apache.spark.sql.catalyst.plans.logical.Command",
                    "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement")


def is_query(ctx: SqlContext, plan: Any) -> bool:
    """Whether ``plan`` is a query (SELECT, TABLE, VALUES ...), not a command or a DDL / DML statement."""
    jvm = ctx.spark._jvm
    for trait in STATEMENT_TRAITS:
        if jvm.java.lang.Class.forName(trait).isInstance(plan):
            return False
    return True


def native_query(ctx: SqlContext, plan: Any) -> DataFrame | None:
    """The query ``plan`` with its attached tables read natively, or None when it names none of them."""
    shadowed = {name.lower() for name in cte_names(plan)}
    rewritten, replaced = substitute(ctx, plan, shadowed, {})
    if not replaced:
        return None
    return query_dataframe(ctx.spark, rewritten)


def cte_names(plan: Any) -> list[str]:
    """The names every WITH clause of the plan's tree defines."""
    names = []
    if plan_kind(plan) == "UnresolvedWith":
        names += [str(pair._1()) for pair in scala_list(plan.cteRelations())]
        names += [n for pair in scala_list(plan.cteRelations()) for n in cte_names(pair._2())]
    for child in scala_list(plan.children()):
        names += cte_names(child)
    return names


def substitute(ctx: SqlContext, node: Any, shadowed: set[str], read_plans: dict[str, Any]) -> tuple[Any, bool]:
    """``node`` with the attached tables among its relations replaced; whether any was. ``read_plans``: the
    native plan per table path, so that a table named twice is planned once (at one snapshot)."""
    if plan_kind(node) == "UnresolvedRelation" and (system := system_relation(ctx, node, shadowed)) is not None:
        return system, True
    if plan_kind(node) == "UnresolvedRelation":
        found = attached_path(ctx, node, shadowed)
        if found is None:
            return node, False
        path, qualifier, name = found
        if path not in read_plans:
            df = read(ctx.spark, path, storage_job_options(ctx.storage_options))
            read_plans[path] = df._jdf.queryExecution().analyzed()
        return aliased(ctx, read_plans[path], qualifier, name), True
    if plan_kind(node) == "RelationTimeTravel":
        return time_travel(ctx, node, shadowed)
    if plan_kind(node) == "UnresolvedTableValuedFunction" and \
            [str(p).lower() for p in scala_list(node.name())] == [INCREMENTAL_QUERY]:
        return incremental_query(ctx, node), True
    children = scala_list(node.children())
    if not children:
        return node, False
    new_children, any_replaced = [], False
    for child in children:
        new_child, replaced = substitute(ctx, child, shadowed, read_plans)
        new_children.append(new_child)
        any_replaced |= replaced
    if not any_replaced:
        return node, False
    return node.withNewChildren(scala_seq(ctx, new_children)), True


def time_travel(ctx: SqlContext, node: Any, shadowed: set[str]) -> tuple[Any, bool]:
    """`t VERSION AS OF v` / `t TIMESTAMP AS OF ts` on an attached table: the read at that version, with the
    options Paimon's Spark catalog gives its loadTable (SparkCatalog.loadTable(ident, version) sets scan.version;
    loadTable(ident, timestamp) scan.timestamp-millis of the instant Spark evaluates in the session time zone).
    Spark itself refuses time travel on the Python source's relation; anything not attached is left to it."""
    relation = node.relation()
    if plan_kind(relation) != "UnresolvedRelation":
        return node, False
    found = attached_path(ctx, relation, shadowed, with_options=True)
    if found is None:
        return node, False
    path, qualifier, name = found
    version = scala_option(node.version())
    if version is not None:
        travel = {"scan.version": str(version)}
    else:
        instant = expression_sql(scala_option(node.timestamp()))
        micros = ctx.spark.range(1).select(F.expr(f"unix_micros(CAST(({instant}) AS TIMESTAMP))")).first()[0]
        if micros is None:
            raise SqlError(f"TIMESTAMP AS OF {instant} is not a timestamp")
        travel = {"scan.timestamp-millis": str(micros // 1000)}
    options = {**storage_job_options(ctx.storage_options), **relation_options(relation), **travel}
    plan = read(ctx.spark, path, options)._jdf.queryExecution().analyzed()
    return aliased(ctx, plan, qualifier, name), True


def incremental_query(ctx: SqlContext, node: Any) -> Any:
    """`paimon_incremental_query('db.t', start, end)`, Paimon's Spark table function: the table read with
    `incremental-between` = 'start,end' (snapshot ids or tag names), as its IncrementalQuery sets it."""
    args = [constant_value(ctx.spark, a) for a in scala_list(node.functionArgs())]
    if len(args) != 3 or not isinstance(args[0], str):
        raise SqlError("paimon_incremental_query takes a table name and two versions (snapshot ids or tags): "
                       "paimon_incremental_query('db.t', 1, 3)")
    name, start, end = args
    ident = ctx.identifier([part.strip("`") for part in name.split(".")])
    path = ctx.catalog.table_path(f"{ident.database}.{ident.table}")
    options = {**storage_job_options(ctx.storage_options), "incremental-between": f"{start},{end}"}
    return read(ctx.spark, path, options)._jdf.queryExecution().analyzed()


def system_relation(ctx: SqlContext, relation: Any, shadowed: set[str]) -> Any | None:
    """``db.`t$snapshots` `` (any system table of an attached table, as Paimon's Spark catalog names them): the
    system table's plan under that name; None for anything else (branches, `t$branch_b$...`, are left to Spark)."""
    parts = [str(p) for p in scala_list(relation.multipartIdentifier())]
    table, dollar, system = parts[-1].partition("$")
    if not dollar or not system or system.lower().startswith("branch_"):
        return None
    found = attached_path(ctx, relation, shadowed, table=table)
    if found is None:
        return None
    path, qualifier, _ = found
    df = system_table(ctx.spark, path, system.lower(), ctx.storage_options)
    return aliased(ctx, df._jdf.queryExecution().analyzed(), qualifier, parts[-1])


def attached_path(ctx: SqlContext, relation: Any, shadowed: set[str], with_options: bool = False,
                  table: str | None = None) -> tuple[str, list[str], str] | None:
    """The table path, alias qualifier and name of a relation naming an attached table, read as the
    session would resolve it; None for anything else (also for a relation with options, unless ``with_options``).
    ``table``: the name to look up in place of the relation's last part."""
    if relation.isStreaming() or (not with_options and not relation.options().isEmpty()):
        return None
    parts = [str(p) for p in scala_list(relation.multipartIdentifier())]
    if table is not None:
        parts[-1] = table
    if len(parts) == 1:
        if parts[0].lower() in shadowed or is_temp_view(ctx, parts[0]):
            return None
        parts = [ctx.spark.catalog.currentDatabase(), parts[0]]
    elif len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) != 2:
        return None
    database, table = attached_name(ctx, parts[0], parts[1]) or (None, None)
    if database is None:
        return None
    return ctx.catalog.table_path(f"{database}.{table}"), ["spark_catalog", database], table


def attached_name(ctx: SqlContext, database: str, table: str) -> tuple[str, str] | None:
    """The (database, table) attach() recorded for a name, matched ignoring case as Spark resolves names."""
    if ctx.spark.conf.get(f"{ATTACHED_CONF}.{database}.{table}", None) is not None:
        return database, table  # as written: one lookup, not a scan of the session's conf
    prefix = ATTACHED_CONF + "."
    wanted = (database.lower(), table.lower())
    for key in ctx.spark.conf.getAll:
        if key.startswith(prefix):
            db, _, name = key[len(prefix):].partition(".")
            if (db.lower(), name.lower()) == wanted:
                return db, name
    return None


def is_temp_view(ctx: SqlContext, name: str) -> bool:
    return bool(ctx.spark._jsparkSession.sessionState().catalog().getTempView(name).isDefined())


def scala_seq(ctx: SqlContext, items: list[Any]) -> Any:
    jvm = ctx.spark._jvm
    java_list = jvm.java.util.ArrayList()
    for item in items:
        java_list.add(item)
    return jvm.scala.jdk.javaapi.CollectionConverters.asScala(java_list).toSeq()


def aliased(ctx: SqlContext, plan: Any, qualifier: list[str], name: str) -> Any:
    """``plan`` under the alias Spark gives a catalog table (spark_catalog.db.t), so `t.col` and `db.t.col`
    resolve as they do on the session table."""
    jvm = ctx.spark._jvm
    catalyst = jvm.org.apache.spark.sql.catalyst
    identifier = catalyst.AliasIdentifier.apply(name, scala_seq(ctx, qualifier))
    return catalyst.plans.logical.SubqueryAlias(identifier, plan)
