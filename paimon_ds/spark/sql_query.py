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
as Paimon's Spark catalog names them (``db.`t$snapshots` ``, ``db.`t$audit_log` ``), at a version too
(``db.`t$files` VERSION AS OF 1``).

Left to Spark as written (the Python source reads them, with the same rows): relations inside subquery
expressions and CTE bodies (the plan tree reaches them only through Scala functions), relations with
options (`WITH ('branch' = ...)`), streaming relations, single-part names a CTE or a temporary view shadows,
and tables of other catalogs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..predicate.expressions import FilterError, bind_filter, col
from ..predicate.predicates import Predicate, and_all
from ..store.row_tracking import COLUMNS_OPTION
from .catalog import ATTACHED_CONF, attached_tables
from .jvm import jvm_class, scala_seq
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

# Paimon's Spark table functions (PaimonTableValuedFunctions) and the read option each sets
INCREMENTAL_QUERY = "paimon_incremental_query"
INCREMENTAL_FUNCTIONS = {INCREMENTAL_QUERY: "incremental-between",
                         "paimon_incremental_between_timestamp": "incremental-between-timestamp"}

# Plan roots that are statements rather than queries: left to spark.sql untouched.
STATEMENT_TRAITS = ("org.apache.spark.sql.catalyst.plans.logical.Command",
                    "org.apache.spark.sql.catalyst.plans.logical.ParsedStatement")


def is_query(ctx: SqlContext, plan: Any) -> bool:
    """Whether ``plan`` is a query (SELECT, TABLE, VALUES ...), not a command or a DDL / DML statement."""
    for trait in STATEMENT_TRAITS:
        if jvm_class(ctx.spark, "java.lang.Class").forName(trait).isInstance(plan):
            return False
    return True


def native_query(ctx: SqlContext, plan: Any) -> DataFrame | None:
    """The query ``plan`` with its attached tables read natively, or None when it names none of them."""
    shadowed = {name.lower() for name in cte_names(plan)}
    read_plans: dict[str, Any] = {}
    once = named_once(ctx, plan, shadowed)
    rewritten, replaced = substitute(ctx, plan, shadowed, read_plans, once)
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


def named_once(ctx: SqlContext, plan: Any, shadowed: set[str]) -> set[str]:
    """The paths of the attached tables the plan's tree names once (only those are planned with their WHERE
    clause: a table named twice shares one plan, at one snapshot)."""
    seen: dict[str, int] = {}

    def walk(node: Any) -> None:
        if plan_kind(node) == "UnresolvedRelation":
            found = attached_path(ctx, node, shadowed)
            if found is not None:
                seen[found[0]] = seen.get(found[0], 0) + 1
        for child in scala_list(node.children()):
            walk(child)
    walk(plan)
    return {path for path, n in seen.items() if n == 1}


def substitute(ctx: SqlContext, node: Any, shadowed: set[str], read_plans: dict[str, Any],
               once: set[str] = frozenset(), condition: tuple[Any, set[tuple[str, ...]]] | None = None
               ) -> tuple[Any, bool]:
    """``node`` with the attached tables among its relations replaced; whether any was. ``read_plans``: the
    native plan per table path, so that a table named twice is planned once (at one snapshot). ``condition``:
    the WHERE condition of a Filter right above ``node`` (Spark still applies it) and the qualifiers its
    columns may carry, whose equality / IN tests prune the plan of a table named ``once`` (files ruled out by
    partition, stats or file index are not read)."""
    if plan_kind(node) == "UnresolvedRelation" and (system := system_relation(ctx, node, shadowed)) is not None:
        return system, True
    if plan_kind(node) == "UnresolvedRelation":
        found = attached_path(ctx, node, shadowed)
        if found is None:
            return node, False
        path, qualifier, name = found
        tests = equality_tests(ctx, condition[0], condition[1]) if condition is not None and path in once else []
        if tests:
            df = read(ctx.spark, path, storage_job_options(ctx.storage_options),
                      prune=lambda schema: tests_predicate(tests, schema))
            return aliased(ctx, df._jdf.queryExecution().analyzed(), qualifier, name), True
        if path not in read_plans:
            df = read(ctx.spark, path, storage_job_options(ctx.storage_options))
            read_plans[path] = df._jdf.queryExecution().analyzed()
        return aliased(ctx, read_plans[path], qualifier, name), True
    if plan_kind(node) == "Filter":
        child = node.child()
        aliased_child = plan_kind(child) == "SubqueryAlias"
        relation = child.child() if aliased_child else child
        if plan_kind(relation) == "UnresolvedRelation":
            # the names a column may be qualified with: the alias, else the relation's name and its prefixes
            parts = [str(p).lower() for p in scala_list(relation.multipartIdentifier())]
            qualifiers = {(str(child.alias()).lower(),)} if aliased_child else \
                {tuple(parts[i:]) for i in range(len(parts))} | {("spark_catalog", *parts[-2:])}
            new_relation, replaced = substitute(ctx, relation, shadowed, read_plans, once,
                                                (node.condition(), qualifiers))
            if not replaced:
                return node, False
            new_child = child.withNewChildren(scala_seq(ctx.spark, [new_relation])) if aliased_child else new_relation
            return node.withNewChildren(scala_seq(ctx.spark, [new_child])), True
    if plan_kind(node) == "RelationTimeTravel":
        return time_travel(ctx, node, shadowed)
    if plan_kind(node) == "UnresolvedTableValuedFunction" and \
            len(scala_list(node.name())) == 1 and str(scala_list(node.name())[0]).lower() in INCREMENTAL_FUNCTIONS:
        return incremental_query(ctx, node), True
    children = scala_list(node.children())
    if not children:
        return node, False
    new_children, any_replaced = [], False
    for child in children:
        new_child, replaced = substitute(ctx, child, shadowed, read_plans, once)
        new_children.append(new_child)
        any_replaced |= replaced
    if not any_replaced:
        return node, False
    return node.withNewChildren(scala_seq(ctx.spark, new_children)), True


# a test a file index may answer: (column name as written, literal values, the literals' Spark type name)
EqualityTest = tuple[str, list[Any], str]
INTEGER_TYPES = ("integer", "long", "short", "byte")


def equality_tests(ctx: SqlContext, condition: Any, qualifiers: set[tuple[str, ...]]) -> list[EqualityTest]:
    """The conjuncts of a parsed WHERE condition that are `column = literal` or `column IN (literals)`: what a
    file index answers (the other conjuncts only filter rows, as Spark does anyway). A column is a bare name or
    one qualified by one of ``qualifiers`` (lower case); `s.x` naming a struct's field is not a column."""
    kind = plan_kind(condition)
    if kind == "And":
        return (equality_tests(ctx, condition.left(), qualifiers)
                + equality_tests(ctx, condition.right(), qualifiers))
    if kind == "EqualTo":
        column, literals = condition.left(), [condition.right()]
        if plan_kind(column) == "Literal":
            column, literals = literals[0], [column]
    elif kind == "In":
        column, literals = condition.value(), scala_list(condition.list())
    else:
        return []
    if plan_kind(column) != "UnresolvedAttribute" or not literals or \
            any(plan_kind(x) != "Literal" for x in literals):
        return []
    types = {str(x.dataType().typeName()) for x in literals}
    spark_type = "integer" if types <= set(INTEGER_TYPES) else types.pop() if len(types) == 1 else ""
    if spark_type not in ("integer", "string", "date", "boolean"):
        return []  # decimals, floats, timestamps...: Spark's coercions are not this package's; no pruning
    values = [literal_value(x, spark_type) for x in literals]
    if any(v is None for v in values):
        return []  # `= NULL` is never true: nothing to answer
    name = [str(p) for p in scala_list(column.nameParts())]
    if len(name) > 1 and tuple(p.lower() for p in name[:-1]) not in qualifiers:
        return []
    return [(name[-1], values, spark_type)]


def literal_value(literal: Any, spark_type: str) -> Any:
    v = literal.value()
    if v is None:
        return None
    if spark_type == "string":
        return str(v.toString())
    if spark_type == "date":  # days since the epoch
        return dt.date(1970, 1, 1) + dt.timedelta(days=int(v))
    return v


def tests_predicate(tests: list[EqualityTest], schema: pa.Schema) -> Predicate | None:
    """The predicate of the tests whose column the table has (as Spark resolves it, ignoring case) with the
    literals' own type: Spark compares a string column with a number (or the reverse) after a cast this package
    does not repeat, so such a test prunes nothing."""
    matches = {
        "integer": pa.types.is_integer, "string": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
        "date": pa.types.is_date32, "boolean": pa.types.is_boolean}
    leaves = []
    for name, values, spark_type in tests:
        found = [f for f in schema if f.name.lower() == name.lower()]
        if len(found) != 1 or not matches[spark_type](found[0].type):
            continue
        column = col(found[0].name)
        try:
            leaves.append(bind_filter(column == values[0] if len(values) == 1 else column.isin(values),
                                      schema).predicate)
        except FilterError:
            continue
    return and_all([p for p in leaves if p is not None])


def time_travel(ctx: SqlContext, node: Any, shadowed: set[str]) -> tuple[Any, bool]:
    """`t VERSION AS OF v` / `t TIMESTAMP AS OF ts` on an attached table: the read at that version, with the
    options Paimon's Spark catalog gives its loadTable (SparkCatalog.loadTable(ident, version) sets scan.version;
    loadTable(ident, timestamp) scan.timestamp-millis of the instant Spark evaluates in the session time zone).
    Spark itself refuses time travel on the Python source's relation; anything not attached is left to it."""
    relation = node.relation()
    if plan_kind(relation) != "UnresolvedRelation":
        return node, False
    system = system_name(relation)
    found = attached_path(ctx, relation, shadowed, with_options=True,
                          table=system[0] if system is not None else None)
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
    given = relation_options(ctx.spark, relation)
    if system is not None:  # `t$files VERSION AS OF 1`: the system table of that version, as Paimon's travel
        df = system_table(ctx.spark, path, system[1], ctx.storage_options, {**given, **travel})
        return aliased(ctx, df._jdf.queryExecution().analyzed(), qualifier, f"{system[0]}${system[1]}"), True
    options = {**storage_job_options(ctx.storage_options), **given, **travel}
    plan = read(ctx.spark, path, options)._jdf.queryExecution().analyzed()
    return aliased(ctx, plan, qualifier, name), True


def incremental_query(ctx: SqlContext, node: Any) -> Any:
    """`paimon_incremental_query('db.t', start, end)` and `paimon_incremental_between_timestamp('db.t', t1, t2)`,
    Paimon's Spark table functions: the table read with `incremental-between` = 'start,end' (snapshot ids or tag
    names) or `incremental-between-timestamp` = 't1,t2', as they set it. The table may be a system table
    (``'`t$audit_log`'``), read with the same option."""
    function = str(scala_list(node.name())[0]).lower()
    args = [constant_value(ctx.spark, a) for a in scala_list(node.functionArgs())]
    if len(args) != 3 or not isinstance(args[0], str):
        raise SqlError(f"{function} takes a table name and two versions (snapshot ids or tags; timestamps for "
                       f"paimon_incremental_between_timestamp): {function}('db.t', 1, 3)")
    name, start, end = args
    parts = [str(p) for p in scala_list(ctx.spark._jsparkSession.sessionState().sqlParser()
                                        .parseMultipartIdentifier(name))]
    table, dollar, system = parts[-1].partition("$")
    ident = ctx.identifier([*parts[:-1], table])
    path = ctx.catalog.table_path(f"{ident.database}.{ident.table}")
    option = {INCREMENTAL_FUNCTIONS[function]: f"{start},{end}"}
    if dollar:
        df = system_table(ctx.spark, path, system.lower(), ctx.storage_options, option)
        return df._jdf.queryExecution().analyzed()
    options = {**storage_job_options(ctx.storage_options), **option}
    return read(ctx.spark, path, options)._jdf.queryExecution().analyzed()


def system_relation(ctx: SqlContext, relation: Any, shadowed: set[str]) -> Any | None:
    """``db.`t$snapshots` `` (any system table of an attached table, as Paimon's Spark catalog names them): the
    system table's plan under that name; None for anything else (branches, `t$branch_b$...`, are left to Spark)."""
    named = system_name(relation)
    if named is None:
        return None
    found = attached_path(ctx, relation, shadowed, table=named[0])
    if found is None:
        return None
    path, qualifier, _ = found
    if named[1] == "row_tracking":  # Paimon's `$row_tracking`: the table's rows with _ROW_ID and _SEQUENCE_NUMBER
        options = {**storage_job_options(ctx.storage_options), COLUMNS_OPTION: "true"}
        plan = read(ctx.spark, path, options)._jdf.queryExecution().analyzed()
        return aliased(ctx, plan, qualifier, f"{named[0]}${named[1]}")
    df = system_table(ctx.spark, path, named[1], ctx.storage_options)
    return aliased(ctx, df._jdf.queryExecution().analyzed(), qualifier, f"{named[0]}${named[1]}")


def system_name(relation: Any) -> tuple[str, str] | None:
    """(table, system table in lower case) of a relation named `t$files`; None for any other name (branches,
    `t$branch_b$...`, are left to Spark)."""
    last = str(scala_list(relation.multipartIdentifier())[-1])
    table, dollar, system = last.partition("$")
    if not dollar or not system or system.lower().startswith("branch_"):
        return None
    return table, system.lower()


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
    wanted = (database.lower(), table.lower())
    return next(((db, name) for db, name in attached_tables(ctx.spark) if (db.lower(), name.lower()) == wanted), None)


def is_temp_view(ctx: SqlContext, name: str) -> bool:
    return bool(ctx.spark._jsparkSession.sessionState().catalog().getTempView(name).isDefined())


def aliased(ctx: SqlContext, plan: Any, qualifier: list[str], name: str) -> Any:
    """``plan`` under the alias Spark gives a catalog table (spark_catalog.db.t), so `t.col` and `db.t.col`
    resolve as they do on the session table."""
    identifier = jvm_class(ctx.spark, "org.apache.spark.sql.catalyst.AliasIdentifier").apply(
        name, scala_seq(ctx.spark, qualifier))
    return jvm_class(ctx.spark, "org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias")(identifier, plan)
