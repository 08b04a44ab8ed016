"""paimon_ds.sql's DML: DELETE, UPDATE and MERGE INTO (run by paimon_ds.spark.rowlevel, which Spark refuses to
route to a Python data source), and INSERT with a PARTITION clause, into a dynamic-bucket table or into an append
table the native write serves (written here: static partition values become columns; dynamic buckets go through
the package's bucket assigners; append tables through paimon_ds.write's native path).
A plain INSERT into any other table goes to spark.sql, which routes it to the attached table itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..catalog import CatalogError
from ..options.registry import Options
from ..table import Table
from . import rowlevel
from .bucket_expr import quoted
from .catalog import WAREHOUSE_CONF
from .cluster import write as clustered_write
from .native_write import NATIVE_WRITE_OPTION, unsupported
from .options import OVERWRITE_PARTITION_OPTION, storage_job_options
from .session import activate
from .sql import (
    SqlContext,
    SqlError,
    alias_of,
    expression_sql,
    name_parts,
    plan_kind,
    query_dataframe,
    relation_options,
    scala_dict,
    scala_list,
    scala_option,
)
from .types import spark_schema
from .write import dynamic_overwrite


def delete(ctx: SqlContext, plan: Any) -> None:
    _, table = ctx.table(name_parts(plan.table()))
    condition = _text(plan.condition())
    rowlevel.delete(ctx.spark, table.path, None if condition.lower() == "true" else condition, ctx.storage_options,
                    alias=alias_of(plan.table(), name_parts(plan.table())[-1]))


def update(ctx: SqlContext, plan: Any) -> None:
    _, table = ctx.table(name_parts(plan.table()))
    alias = alias_of(plan.table(), name_parts(plan.table())[-1])
    condition = scala_option(plan.condition())
    rowlevel.update(ctx.spark, table.path, _assignments(plan, table, alias, "UPDATE"),
                    _text(condition) if condition is not None else None, ctx.storage_options, alias=alias)


def _text(expr: Any) -> str:
    """A parsed expression as SQL text for F.expr: Spark's printed form, or, for an expression holding a subquery
    (printed as `listquery()` / `exists()`, which Spark cannot parse back), its own text in the statement: the span
    its nodes cover (a node's own origin may start late: an IN's starts at `IN`)."""
    spans: list[tuple[int, int]] = []
    text = None
    subquery = False
    todo = [expr]
    while todo:
        node = todo.pop()
        subquery = subquery or plan_kind(node) in _SUBQUERIES
        origin = node.origin()
        start, stop = scala_option(origin.startIndex()), scala_option(origin.stopIndex())
        if start is not None and stop is not None:
            text = text or str(scala_option(origin.sqlText()))
            if int(start) == 0 and plan_kind(node) == "Exists":  # Spark may give an EXISTS the statement's origin
                start, stop = _exists_span(text, node.plan().origin())
            if start is not None:
                spans.append((int(start), int(stop)))
        todo.extend(scala_list(node.children()))
    if not subquery or text is None or not spans:
        return expression_sql(expr)
    return str(text)[min(s for s, _ in spans):max(e for _, e in spans) + 1]


def _exists_span(text: str, query_origin: Any) -> tuple[int | None, int]:
    """Where `EXISTS (<query>)` is in ``text``, from its query's origin: the keyword before the parenthesis that
    opens the query, to the one that closes it (None: not found, the node is left out)."""
    start, stop = scala_option(query_origin.startIndex()), scala_option(query_origin.stopIndex())
    if start is None or stop is None:
        return None, 0
    head = text[:int(start)].rstrip()
    tail = len(text) - len(text[int(stop) + 1:].lstrip())
    if not (head.endswith("(") and head[:-1].rstrip().lower().endswith("exists") and text[tail:tail + 1] == ")"):
        return None, 0
    return len(head[:-1].rstrip()) - 6, tail


_SUBQUERIES = {"ListQuery", "Exists", "ScalarSubquery", "InSubquery", "LateralSubquery"}


def _assignments(node: Any, table: Table, alias: str, what: str) -> dict[str, Any]:
    """SET col = expr, ... (of an UPDATE, or of a MERGE's UPDATE / INSERT action): column -> SQL text, or a
    Column for a nested field (`SET s.c2 = 'x'`: the target's struct with that field replaced)."""
    types = {f.name.lower(): f for f in spark_schema(table.arrow_schema()).fields}
    out: dict[str, Any] = {}
    assigned: list[str] = []
    for a in scala_list(node.assignments()):
        parts = [str(p) for p in scala_list(a.key().nameParts())]
        if len(parts) > 1 and parts[0].lower() not in types and parts[0].lower() == alias.lower():
            parts = parts[1:]  # `t.col` and `col` name the same target column
        field = types.get(parts[0].lower())
        if field is None:
            raise SqlError(f"{what}: {'.'.join(parts)} is not a column of {table.path} "
                           f"(columns: {', '.join(table.table_schema.field_names)})")
        name, path = field.name, ".".join(parts[1:])
        assigned.append(".".join([name, *parts[1:]]))
        text = _text(a.value())
        if not path:
            out[name] = text
            continue
        if not isinstance(field.dataType, StructType):
            raise SqlError(f"{what}: {'.'.join(parts)}: unsupported update expression (only fields of a struct "
                           "column can be set one by one)")
        base = out.get(name, F.col(f"`{alias}`.`{name}`"))
        if isinstance(base, str):
            base = F.expr(base)
        out[name] = base.withField(path, F.expr(text))
    clashes = [c for c in assigned if assigned.count(c) > 1
               or any(o.startswith(c + ".") or c.startswith(o + ".") for o in assigned)]
    if clashes:
        raise SqlError(f"{what}: conflicting update/insert on attrs: {', '.join(dict.fromkeys(clashes))}")
    return out


def _merge_clause(action: Any, table: Table, alias: str) -> rowlevel.Update | rowlevel.Delete | rowlevel.Insert:
    """One WHEN ... THEN action of a MERGE as the clause rowlevel.merge takes."""
    name = plan_kind(action)
    cond = scala_option(action.condition())
    cond = _text(cond) if cond is not None else None
    if name == "DeleteAction":
        return rowlevel.Delete(cond)
    if name == "UpdateStarAction":
        return rowlevel.Update(None, cond)
    if name == "UpdateAction":
        return rowlevel.Update(_assignments(action, table, alias, "MERGE UPDATE SET"), cond)
    if name == "InsertStarAction":
        return rowlevel.Insert(None, cond)
    if name == "InsertAction":
        return rowlevel.Insert(_assignments(action, table, alias, "MERGE INSERT"), cond)
    raise SqlError(f"MERGE action {name} is not supported")


def _equalities(condition: Any) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The `x = y` conjuncts of an ON condition between two column references, as their lower-cased name parts."""
    kind = plan_kind(condition)
    if kind == "And":
        return _equalities(condition.left()) + _equalities(condition.right())
    if kind == "EqualTo" and all(plan_kind(side) == "UnresolvedAttribute"
                                 for side in (condition.left(), condition.right())):
        def parts(e: Any) -> tuple[str, ...]:
            return tuple(str(p).lower() for p in scala_list(e.nameParts()))
        return [(parts(condition.left()), parts(condition.right()))]
    return []


def _without_equal_keys(clause: Any, action: Any, keys: list[str], target_alias: str,
                        equal: list[tuple[tuple[str, ...], tuple[str, ...]]]) -> Any:
    """A WHEN MATCHED UPDATE without its primary-key assignments that the ON clause makes no-ops
    (`ON t.a = s.a ... SET a = s.a`), as Paimon accepts them; any other key assignment stays (and is refused)."""
    if not isinstance(clause, rowlevel.Update) or clause.set is None:
        return clause
    values = {}
    for a in scala_list(action.assignments()):
        if plan_kind(a.value()) == "UnresolvedAttribute":
            values[str(scala_list(a.key().nameParts())[-1]).lower()] = tuple(
                str(p).lower() for p in scala_list(a.value().nameParts()))
    same = set()
    for key in keys:
        value = values.get(key.lower())
        for x, y in equal:
            for mine, other in ((x, y), (y, x)):
                if mine == (target_alias.lower(), key.lower()) and other == value:
                    same.add(key)
    if not same:
        return clause
    return rowlevel.Update({c: v for c, v in clause.set.items() if c not in same}, clause.condition)


def merge(ctx: SqlContext, plan: Any) -> None:
    target = plan.targetTable()
    _, table = ctx.table(name_parts(target))
    target_alias = alias_of(target, name_parts(target)[-1])
    source_plan = plan.sourceTable()
    source_kind = plan_kind(source_plan)
    if source_kind == "SubqueryAlias":
        source_alias, source = str(source_plan.alias()), query_dataframe(ctx.spark, source_plan.child())
    else:
        source_alias = name_parts(source_plan)[-1] if source_kind == "UnresolvedRelation" else "source"
        source = query_dataframe(ctx.spark, source_plan)
    keys = list(table.table_schema.primary_keys)
    equal = _equalities(plan.mergeCondition())
    matched = [_without_equal_keys(_merge_clause(a, table, target_alias), a, keys, target_alias, equal)
               for a in scala_list(plan.matchedActions())]
    rowlevel.merge(ctx.spark, table.path, source, _text(plan.mergeCondition()), matched,
                   [_merge_clause(a, table, target_alias) for a in scala_list(plan.notMatchedActions())],
                   [_merge_clause(a, table, target_alias) for a in scala_list(plan.notMatchedBySourceActions())],
                   target_alias, source_alias, ctx.storage_options)


def insert(ctx: SqlContext, plan: Any) -> None:
    """INSERT INTO / OVERWRITE t [PARTITION (k='v', ...)] SELECT ...: static partition values become columns,
    and an overwrite replaces what the static part names (Paimon's default static overwrite mode).
    Dynamic-bucket tables are written through the package's bucket assigners (paimon_ds.write)."""
    ident, table = ctx.table(name_parts(plan.table()))
    # INSERT INTO t WITH ('k' = 'v') ..., over Paimon's session conf spark.paimon.write.merge-schema[...]
    given = relation_options(ctx.spark, plan.table())
    dynamic = bool(plan.overwrite()) and _session_dynamic(ctx.spark, given)
    if dynamic:  # the session's partitionOverwriteMode, as Paimon's Spark writer reads it
        given = {**given, "partitionOverwriteMode": "dynamic"}
    job_options = _write_options(merge_schema_conf(ctx.spark, given))
    if job_options:
        # checked as a write's options are (unknown keys, immutable options...) before anything is written
        table = ctx.catalog.get_table(ident, job_options)
    spec = {k: scala_option(v) for k, v in scala_dict(plan.partitionSpec()).items()}
    unknown = [k for k in spec if k not in table.partition_keys]
    if unknown:
        raise SqlError(f"PARTITION ({', '.join(unknown)}): not partition keys of {table.path} "
                       f"(partition keys: {table.partition_keys or 'none'})")
    static = {k: str(v) for k, v in spec.items() if v is not None}
    df = query_dataframe(ctx.spark, plan.query())
    names = table.table_schema.field_names
    user_cols = [str(c) for c in scala_list(plan.userSpecifiedCols())]
    if _by_name(plan) and Options(job_options).get("write.merge-schema"):
        # Paimon's merge-schema INSERT ... BY NAME: the query's columns as they are (new ones added to the table,
        # missing ones null, names matched case-insensitively, by the write: Table.for_write / TableWrite.align)
        df = df.select(*[F.col(quoted(c)) for c in df.columns if c not in static],
                       *[F.lit(v).alias(k) for k, v in static.items()])
        _write_insert(ctx, table, df, bool(plan.overwrite()), static, job_options)
        if ctx.catalog.get_table(ident).table_schema.id != table.table_schema.id:
            ctx.refresh(ident)  # the session's table shows the merged columns (spark.table, plain spark.sql)
        return
    data_cols = user_cols or [n for n in names if n not in static]
    if _by_name(plan) and not user_cols:
        data_cols = _by_name_columns(table, df.columns, static)
    if len(df.columns) != len(data_cols):
        given = ", ".join(f"{k}={v}" for k, v in static.items())
        raise SqlError(f"INSERT into {table.path} with PARTITION ({given}) expects {len(data_cols)} column(s) "
                       f"({', '.join(data_cols)}), the query gives {len(df.columns)}")
    spark_types = {f.name: f.dataType for f in spark_schema(table.arrow_schema()).fields}
    df = df.toDF(*data_cols)
    df = df.select(*[(F.lit(static[n]) if n in static else F.col(n) if n in data_cols else F.lit(None))
                     .cast(spark_types[n]).alias(n) for n in names])
    _write_insert(ctx, table, df, bool(plan.overwrite()), static, job_options)


def _by_name_columns(table: Table, given: list[str], static: dict[str, str]) -> list[str]:
    """INSERT ... BY NAME: the table's column for each of the query's, matched case-insensitively (Spark's
    rules: no name twice, no name the table lacks, no more columns than the table's, every NOT NULL column
    given; the others are null)."""
    names = [n for n in table.table_schema.field_names if n not in static]
    if len(given) > len(names):
        raise SqlError(f"INSERT ... BY NAME into {table.path}: too many data columns ({len(given)}; the table "
                       f"takes {len(names)})")
    by_lower = {n.lower(): n for n in names}
    seen: set[str] = set()
    out = []
    for column in given:
        if column.lower() in seen:
            raise SqlError(f"INSERT ... BY NAME into {table.path}: ambiguous column name `{column}` in the input data")
        seen.add(column.lower())
        if column.lower() not in by_lower:
            raise SqlError(f"INSERT ... BY NAME into {table.path}: cannot write extra columns `{column}`")
        out.append(by_lower[column.lower()])
    missing = [f.name for f in table.table_schema.fields
               if f.name in names and f.name not in out and not f.type.nullable]
    if missing:
        raise SqlError(f"INSERT ... BY NAME into {table.path}: cannot find data for the NOT NULL column(s) "
                       f"{', '.join(f'`{m}`' for m in missing)}")
    return out


def _by_name(plan: Any) -> bool:
    try:
        return bool(plan.byName())
    except Exception:  # noqa: BLE001 - a Spark without INSERT ... BY NAME
        return False


# Paimon's Spark connector reads its options from the session conf too (OptionUtils: `spark.paimon.<key>`)
MERGE_SCHEMA_KEYS = ("write.merge-schema", "write.merge-schema.explicit-cast", "write.merge-schema.type-widening")


def merge_schema_conf(spark: SparkSession, given: dict[str, str]) -> dict[str, str]:
    """``given`` (a statement's options) over the session conf's `spark.paimon.write.merge-schema*` entries."""
    out = {}
    for key in MERGE_SCHEMA_KEYS:
        value = spark.conf.get(f"spark.paimon.{key}", None)
        if value is not None:
            out[key] = value
    return {**out, **given}


def _session_dynamic(spark: SparkSession, given: dict[str, str]) -> bool:
    """Whether an INSERT OVERWRITE is dynamic: its own `partitionOverwriteMode`, else the session's
    `spark.sql.sources.partitionOverwriteMode` (which Spark hands a Python source's writer no trace of)."""
    own = next((v for k, v in given.items() if k.lower() == "partitionoverwritemode"), None)
    mode = own or spark.conf.get("spark.sql.sources.partitionOverwriteMode", "static")
    return str(mode).lower() == "dynamic"


def _write_insert(ctx: SqlContext, table: Table, df: Any, overwrite: bool, static: dict[str, str],
                  job_options: dict[str, str]) -> None:
    if job_options.get("dynamic-partition-overwrite") == "true":
        static = {}  # dynamic: only the partitions written are replaced, all of them inside the static spec
    options = {**job_options, **({OVERWRITE_PARTITION_OPTION: json.dumps(static)} if overwrite and static else {})}
    if (table.table_schema.primary_keys and table.bucket == -1) or native_insert(ctx.spark, table):
        clustered_write(df, table.path, "overwrite" if overwrite else "append",
                        {**storage_job_options(table.storage_options), **options})
        return
    activate(ctx.spark)  # this thread may be new: the source is looked up in its active session
    writer = df.write.format("paimon").mode("overwrite" if overwrite else "append") \
        .options(**storage_job_options(table.storage_options))
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(table.path)


def _write_options(given: dict[str, str]) -> dict[str, str]:
    """A statement's table options as the write's: Spark's `partitionOverwriteMode` as Paimon's
    `dynamic-partition-overwrite` (the package's clustered writes take Paimon's keys only)."""
    out = {}
    for key, value in given.items():
        if key.lower() == "partitionoverwritemode":
            out["dynamic-partition-overwrite"] = str(dynamic_overwrite({"partitionoverwritemode": value})).lower()
        else:
            out[key] = value
    return out


def needs_package_write(spark: SparkSession, warehouse: str | None, plan: Any) -> bool:
    """Whether an INSERT without PARTITION targets a dynamic-bucket table of the warehouse, whose rows must go
    through the package's bucket assigners (paimon_ds.write) rather than Spark's plain write."""
    if not (warehouse or spark.conf.get(WAREHOUSE_CONF, None)):
        return False
    ctx = SqlContext(spark, warehouse)
    try:
        ident = ctx.identifier(name_parts(plan.table()))
        if not ctx.catalog.database_exists(ident.database) or not ctx.catalog.table_exists(ident):
            return False
        table = ctx.catalog.get_table(ident)
    except (SqlError, CatalogError):
        return False
    given = relation_options(spark, plan.table())
    if bool(plan.overwrite()) and _session_dynamic(spark, given) and table.partition_keys:
        return True  # Spark hands the source's writer no session conf: the package writes it dynamically
    merging = Options(merge_schema_conf(spark, given)).get("write.merge-schema")
    return merging or (bool(table.table_schema.primary_keys) and table.bucket == -1) or native_insert(spark, table)


def native_insert(spark: SparkSession, table: Table) -> bool:
    """Whether an INSERT into ``table`` takes paimon_ds.write's native path (an append table it can serve)."""
    return not table.table_schema.primary_keys and bool(table.options.get(NATIVE_WRITE_OPTION)) \
        and unsupported(spark, table, {}) is None


# Plan node -> the DML that runs it
DML_HANDLERS: dict[str, Callable[[SqlContext, Any], None]] = {
    "DeleteFromTable": delete,
    "UpdateTable": update,
    "MergeIntoTable": merge,
    "InsertIntoStatement": insert,
}
