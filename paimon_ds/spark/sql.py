"""paimon_ds.sql(): the SQL statements Spark cannot route to a Python data source, run with Paimon's semantics.

Spark drops a Python source table's OPTIONS / TBLPROPERTIES / LOCATION, calls nothing at CREATE time,
and refuses DELETE / UPDATE / MERGE and PARTITION clauses on such tables. So the statement is parsed by
the session's own parser (no SQL parser of ours) and, if it is one of those, run here against the
attached warehouse: DDL through paimon_ds.Catalog, row-level statements through spark.rowlevel,
`CALL sys.<procedure>` through paimon_ds.procedures. Every other statement goes to spark.sql.

The parser is reached through the classic session's JVM; a Spark Connect client cannot reach it and
gets a clear error (the Python API does the same work there).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..catalog import Catalog, CatalogError, Identifier
from ..table import Table, TableNotFound
from . import rowlevel
from .catalog import WAREHOUSE_CONF, attach, detach_table, storage_options_of
from .source import OVERWRITE_PARTITION_OPTION, storage_job_options


class SqlError(ValueError):
    """A statement paimon_ds.sql cannot run as asked; nothing was changed."""


def run(spark: SparkSession, statement: str, warehouse: str | None = None) -> DataFrame | None:
    plan = _parse(spark, statement)
    kind = plan.getClass().getSimpleName()
    handler = _HANDLERS.get(kind)
    if handler is None:
        if kind in _REFUSED:
            raise SqlError(f"{_REFUSED[kind]} is not supported on Paimon tables by paimon_ds.sql")
        return spark.sql(statement)
    if kind == "InsertIntoStatement" and plan.partitionSpec().isEmpty() and not _needs_package_write(
            spark, warehouse, plan):
        return spark.sql(statement)  # plain INSERT: Spark routes it to the attached table itself
    context = _Context(spark, warehouse)
    return handler(context, plan)


def _needs_package_write(spark: SparkSession, warehouse: str | None, plan: Any) -> bool:
    """Whether an INSERT targets a dynamic-bucket table of the warehouse, whose rows must go through the
    package's bucket assigners (paimon_ds.write) rather than Spark's plain write."""
    if not (warehouse or spark.conf.get(WAREHOUSE_CONF, None)):
        return False
    ctx = _Context(spark, warehouse)
    try:
        ident = ctx.identifier(_names(plan.table()))
        if not ctx.catalog.database_exists(ident.database) or not ctx.catalog.table_exists(ident):
            return False
        table = ctx.catalog.get_table(ident)
    except (SqlError, CatalogError):
        return False
    return bool(table.schema.primary_keys) and table.bucket == -1


def _parse(spark: SparkSession, statement: str) -> Any:
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise SqlError("paimon_ds.sql parses with Spark's own SQL parser, which a Spark Connect client cannot "
                       "reach; use the Python API instead (paimon_ds.Catalog, paimon_ds.delete / update / merge, "
                       "paimon_ds.procedures) or run plain statements with spark.sql")
    return jsession.sessionState().sqlParser().parsePlan(statement)


class _Context:
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
        """Bring the session's named table in line with the catalog after DDL."""
        detach_table(self.spark, ident.database, ident.table)
        if not dropped:
            attach(self.spark, self.warehouse, self.storage_options)


# ------------------------------------------------------------------ Scala values from the JVM
def _seq(s: Any) -> list:
    return [s.apply(i) for i in range(s.size())]


def _opt(o: Any) -> Any:
    return o.get() if o.isDefined() else None


def _map(m: Any) -> dict:
    return {str(t._1()): t._2() for t in _seq(m.toSeq())}


def _names(node: Any) -> list[str]:
    """Name parts of an UnresolvedIdentifier / UnresolvedRelation / UnresolvedTable / SubqueryAlias."""
    kind = node.getClass().getSimpleName()
    if kind == "SubqueryAlias":
        return _names(node.child())
    if kind in ("UnresolvedIdentifier", "UnresolvedProcedure"):
        return [str(p) for p in _seq(node.nameParts())]
    if hasattr(node, "multipartIdentifier"):
        return [str(p) for p in _seq(node.multipartIdentifier())]
    raise SqlError(f"expected a table name, got {node.toString()}")


def _alias(node: Any, default: str) -> str:
    if node.getClass().getSimpleName() == "SubqueryAlias":
        return str(node.alias())
    return default


def _sql(expr: Any) -> str:
    return str(expr.sql())


def _value(spark: SparkSession, expr: Any) -> Any:
    """A constant expression's Python value (Spark evaluates anything beyond a plain literal)."""
    if expr.getClass().getSimpleName() == "Literal":
        v = expr.value()
        if v is None:
            return None
        type_name = str(expr.dataType().typeName())
        if type_name == "string":
            return str(v.toString())
        if type_name in ("integer", "long", "short", "byte", "boolean", "double", "float"):
            return v
    return spark.range(1).select(F.expr(_sql(expr))).first()[0]


def _dataframe(spark: SparkSession, plan: Any) -> DataFrame:
    """A parsed query (CTAS, MERGE source, INSERT) as a DataFrame of this session."""
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame
    jvm = spark._jvm
    jdf = jvm.org.apache.spark.sql.classic.Dataset.ofRows(spark._jsparkSession, plan)
    return ClassicDataFrame(jdf, spark)


def _spark_type(jtype: Any):
    from pyspark.sql.types import _parse_datatype_json_string
    return _parse_datatype_json_string(str(jtype.json()))


# ------------------------------------------------------------------ DDL
def _table_spec(ctx: _Context, spec: Any) -> tuple[dict[str, str], str | None]:
    provider = _opt(spec.provider())
    if provider is not None and str(provider).lower() != "paimon":
        raise SqlError(f"paimon_ds.sql creates Paimon tables: USING {provider} is not supported (omit USING or "
                       "write USING paimon)")
    if _opt(spec.location()) is not None:
        raise SqlError("a catalog table lives in its warehouse (<warehouse>/<db>.db/<table>): LOCATION is not "
                       "supported; to use a table at another path, read or write it with format('paimon')")
    options = {k: str(v) for k, v in _map(spec.properties()).items()}
    for pair in _seq(spec.optionExpression().options()):
        options[str(pair._1())] = str(_value(ctx.spark, pair._2()))
    comment = _opt(spec.comment())
    return options, (str(comment) if comment is not None else None)


def _partition_keys(transforms: Any) -> list[str]:
    keys = []
    for t in _seq(transforms):
        refs = list(t.references())
        if str(t.name()) != "identity" or len(refs) != 1:
            raise SqlError(f"PARTITIONED BY takes columns, not {t.describe()}")
        keys.append(".".join(str(n) for n in refs[0].fieldNames()))
    return keys


def _keys(options: dict[str, str], partitioned_by: list[str]) -> tuple[list[str], list[str]]:
    """Partition and primary keys, from PARTITIONED BY and TBLPROPERTIES ('partition', 'primary-key')."""
    from ..options import parse_list
    primary = parse_list(options.pop("primary-key", ""))
    from_properties = parse_list(options.pop("partition", ""))
    if partitioned_by and from_properties and partitioned_by != from_properties:
        raise SqlError(f"PARTITIONED BY ({', '.join(partitioned_by)}) and TBLPROPERTIES ('partition' = "
                       f"'{','.join(from_properties)}') disagree")
    return partitioned_by or from_properties, primary


def _create_table(ctx: _Context, plan: Any) -> None:
    from pyspark.sql.types import StructField, StructType

    from .types import input_arrow_schema
    ident = ctx.identifier(_names(plan.name()))
    options, comment = _table_spec(ctx, plan.tableSpec())
    partition, primary = _keys(options, _partition_keys(plan.partitioning()))
    fields, comments = [], {}
    for col in _seq(plan.columns()):
        name = str(col.name())
        if _opt(col.defaultValue()) is not None or _opt(col.generationExpression()) is not None:
            raise SqlError(f"column {name}: DEFAULT values and generated columns are not supported by Paimon tables")
        fields.append(StructField(name, _spark_type(col.dataType()), bool(col.nullable())))
        if _opt(col.comment()) is not None:
            comments[name] = str(_opt(col.comment()))
    arrow = input_arrow_schema(StructType(fields))
    arrow = pa.schema([f.with_metadata({"comment": comments[f.name]}) if f.name in comments else f for f in arrow])
    ctx.catalog.create_table(ident, arrow, partition, primary, options, comment, bool(plan.ignoreIfExists()))
    ctx.refresh(ident)


def _create_table_as_select(ctx: _Context, plan: Any) -> None:
    from .types import input_arrow_schema
    ident = ctx.identifier(_names(plan.name()))
    options, comment = _table_spec(ctx, plan.tableSpec())
    partition, primary = _keys(options, _partition_keys(plan.partitioning()))
    if ctx.catalog.table_exists(ident):
        if plan.ignoreIfExists():
            return
        raise CatalogError(f"table {ident} already exists in {ctx.warehouse}")
    df = _dataframe(ctx.spark, plan.query())
    table = ctx.catalog.create_table(ident, input_arrow_schema(df.schema), partition, primary, options, comment)
    try:
        df.write.format("paimon").mode("append").options(**storage_job_options(table.storage_options)) \
            .save(table.path)
    except BaseException:
        ctx.catalog.drop_table(ident, ignore_if_not_exists=True)  # CTAS leaves no half-made table
        raise
    ctx.refresh(ident)


def _drop_table(ctx: _Context, plan: Any) -> None:
    ident = ctx.identifier(_names(plan.child()))
    ctx.catalog.drop_table(ident, ignore_if_not_exists=bool(plan.ifExists()))
    ctx.refresh(ident, dropped=True)


def _create_namespace(ctx: _Context, plan: Any) -> None:
    name = ".".join(_names_of_namespace(plan.name()))
    ctx.catalog.create_database(name, ignore_if_exists=bool(plan.ifNotExists()))
    attach(ctx.spark, ctx.warehouse, ctx.storage_options)


def _drop_namespace(ctx: _Context, plan: Any) -> None:
    name = ".".join(_names_of_namespace(plan.namespace()))
    if not ctx.catalog.database_exists(name) and plan.ifExists():
        return
    tables = ctx.catalog.list_tables(name) if ctx.catalog.database_exists(name) else []
    ctx.catalog.drop_database(name, ignore_if_not_exists=bool(plan.ifExists()), cascade=bool(plan.cascade()))
    for t in tables:
        detach_table(ctx.spark, name, t)
    ctx.spark.sql(f"DROP DATABASE IF EXISTS `{name}` CASCADE")


def _names_of_namespace(node: Any) -> list[str]:
    return [str(p) for p in _seq(node.multipartIdentifier())]


# ------------------------------------------------------------------ ALTER TABLE
def _alter(ctx: _Context, plan: Any) -> None:
    from .. import schema_change as sc
    kind = plan.getClass().getSimpleName()
    ident = ctx.identifier(_names(plan.table()))
    changes: list = []
    if kind == "SetTableProperties":
        props = {k: str(v) for k, v in _map(plan.properties()).items()}
        comment = props.pop("comment", None)
        changes = [sc.SetOption(k, v) for k, v in props.items()]
        if comment is not None:
            changes.append(sc.UpdateComment(comment))
    elif kind == "UnsetTableProperties":
        changes = [sc.RemoveOption(str(k)) for k in _seq(plan.propertyKeys())]
    elif kind == "AddColumns":
        from .types import input_arrow_schema
        for col in _seq(plan.columnsToAdd()):
            parts = [str(p) for p in _seq(col.name())]
            if len(parts) != 1:
                raise SqlError(f"ADD COLUMNS: nested column {'.'.join(parts)} is not supported")
            from pyspark.sql.types import StructField, StructType
            arrow = input_arrow_schema(StructType([StructField(parts[0], _spark_type(col.dataType()),
                                                               bool(col.nullable()))]))
            position = _opt(col.position())
            changes.append(sc.AddColumn(parts[0], arrow.field(0).type, _opt_str(col.comment()),
                                        nullable=bool(col.nullable()), position=_position(position)))
    elif kind == "RenameColumn":
        changes = [sc.RenameColumn(_field_name(plan.column()), str(plan.newName()))]
    elif kind == "DropColumns":
        changes = [sc.DropColumn(_field_name(c)) for c in _seq(plan.columnsToDrop())]
    elif kind == "AlterColumns":  # ALTER COLUMN c TYPE t / DROP NOT NULL / COMMENT 'x'
        from pyspark.sql.types import StructField, StructType

        from .types import input_arrow_schema
        for spec in _seq(plan.specs()):
            name = _field_name(spec.column())
            if _opt(spec.newPosition()) is not None or _opt(spec.newDefaultExpression()) is not None:
                raise SqlError(f"ALTER COLUMN {name}: FIRST/AFTER and DEFAULT are not supported by paimon_ds.sql")
            dtype = _opt(spec.newDataType())
            if dtype is not None:
                arrow = input_arrow_schema(StructType([StructField(name, _spark_type(dtype), True)]))
                changes.append(sc.UpdateColumnType(name, arrow.field(0).type))
            nullable = _opt(spec.newNullability())
            if nullable is not None:
                changes.append(sc.UpdateColumnNullability(name, bool(nullable)))
            comment = _opt(spec.newComment())
            if comment is not None:
                changes.append(sc.UpdateColumnComment(name, str(comment)))
    else:
        raise SqlError(f"ALTER TABLE ({kind}) is not supported by paimon_ds.sql; supported: SET/UNSET TBLPROPERTIES, "
                       "ADD COLUMNS, RENAME COLUMN, DROP COLUMN(S), ALTER COLUMN (TYPE, DROP NOT NULL, COMMENT), "
                       "RENAME TO")
    ctx.catalog.alter_table(ident, changes)
    ctx.refresh(ident)


def _opt_str(o: Any) -> str | None:
    v = _opt(o)
    return str(v) if v is not None else None


def _position(position: Any) -> str | None:
    if position is None:
        return None
    text = str(position.position().toString()) if hasattr(position, "position") else str(position.toString())
    return text.strip().lower() or None


def _field_name(node: Any) -> str:
    parts = [str(p) for p in _seq(node.name())]
    if len(parts) != 1:
        raise SqlError(f"nested column {'.'.join(parts)} is not supported")
    return parts[0]


def _rename_table(ctx: _Context, plan: Any) -> None:
    old = ctx.identifier(_names(plan.child()))
    new = ctx.identifier([str(p) for p in _seq(plan.newName())])
    ctx.catalog.rename_table(old, new)
    ctx.refresh(old, dropped=True)
    attach(ctx.spark, ctx.warehouse, ctx.storage_options)


# ------------------------------------------------------------------ DML
def _delete(ctx: _Context, plan: Any) -> None:
    _, table = ctx.table(_names(plan.table()))
    condition = _sql(plan.condition())
    rowlevel.delete(ctx.spark, table.path, None if condition == "true" else condition, ctx.storage_options)


def _update(ctx: _Context, plan: Any) -> None:
    _, table = ctx.table(_names(plan.table()))
    assignments = {_assigned(a.key()): _sql(a.value()) for a in _seq(plan.assignments())}
    condition = _opt(plan.condition())
    rowlevel.update(ctx.spark, table.path, assignments, _sql(condition) if condition is not None else None,
                    ctx.storage_options)


def _assigned(key: Any) -> str:
    parts = [str(p) for p in _seq(key.nameParts())]
    return parts[-1]  # `t.col` and `col` name the same target column


def _merge(ctx: _Context, plan: Any) -> None:
    target = plan.targetTable()
    _, table = ctx.table(_names(target))
    target_alias = _alias(target, _names(target)[-1])
    source_plan = plan.sourceTable()
    source_kind = source_plan.getClass().getSimpleName()
    if source_kind == "SubqueryAlias":
        source_alias, source = str(source_plan.alias()), _dataframe(ctx.spark, source_plan.child())
    else:
        source_alias = _names(source_plan)[-1] if source_kind == "UnresolvedRelation" else "source"
        source = _dataframe(ctx.spark, source_plan)

    def clause(action: Any):
        name = action.getClass().getSimpleName()
        cond = _opt(action.condition())
        cond = _sql(cond) if cond is not None else None
        if name == "DeleteAction":
            return rowlevel.Delete(cond)
        if name == "UpdateStarAction":
            return rowlevel.Update(None, cond)
        if name == "UpdateAction":
            return rowlevel.Update({_assigned(a.key()): _sql(a.value()) for a in _seq(action.assignments())}, cond)
        if name == "InsertStarAction":
            return rowlevel.Insert(None, cond)
        if name == "InsertAction":
            return rowlevel.Insert({_assigned(a.key()): _sql(a.value()) for a in _seq(action.assignments())}, cond)
        raise SqlError(f"MERGE action {name} is not supported")

    rowlevel.merge(ctx.spark, table.path, source, _sql(plan.mergeCondition()),
                   [clause(a) for a in _seq(plan.matchedActions())],
                   [clause(a) for a in _seq(plan.notMatchedActions())],
                   [clause(a) for a in _seq(plan.notMatchedBySourceActions())],
                   target_alias, source_alias, ctx.storage_options)


def _insert(ctx: _Context, plan: Any) -> None:
    """INSERT INTO / OVERWRITE t [PARTITION (k='v', ...)] SELECT ...: static partition values become columns,
    and an overwrite replaces what the static part names (Paimon's default static overwrite mode).
    Dynamic-bucket tables are written through the package's bucket assigners (paimon_ds.write)."""
    _, table = ctx.table(_names(plan.table()))
    spec = {k: _opt(v) for k, v in _map(plan.partitionSpec()).items()}
    unknown = [k for k in spec if k not in table.partition_keys]
    if unknown:
        raise SqlError(f"PARTITION ({', '.join(unknown)}): not partition keys of {table.path} "
                       f"(partition keys: {table.partition_keys or 'none'})")
    static = {k: str(v) for k, v in spec.items() if v is not None}
    df = _dataframe(ctx.spark, plan.query())
    names = table.schema.field_names
    user_cols = [str(c) for c in _seq(plan.userSpecifiedCols())]
    data_cols = user_cols or [n for n in names if n not in static]
    if len(df.columns) != len(data_cols):
        given = ", ".join(f"{k}={v}" for k, v in static.items())
        raise SqlError(f"INSERT into {table.path} with PARTITION ({given}) expects {len(data_cols)} column(s) "
                       f"({', '.join(data_cols)}), the query gives {len(df.columns)}")
    from .types import spark_schema
    spark_types = {f.name: f.dataType for f in spark_schema(table.arrow_schema()).fields}
    df = df.toDF(*data_cols)
    df = df.select(*[(F.lit(static[n]) if n in static else F.col(n) if n in data_cols else F.lit(None))
                     .cast(spark_types[n]).alias(n) for n in names])
    overwrite = bool(plan.overwrite())
    options = {OVERWRITE_PARTITION_OPTION: json.dumps(static)} if overwrite and static else {}
    if table.schema.primary_keys and table.bucket == -1:
        from .cluster import write
        write(df, table.path, "overwrite" if overwrite else "append",
              {**storage_job_options(table.storage_options), **options})
        return
    writer = df.write.format("paimon").mode("overwrite" if overwrite else "append") \
        .options(**storage_job_options(table.storage_options))
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(table.path)


# ------------------------------------------------------------------ CALL sys.<procedure>
_PROCEDURE_ARGS = {
    "compact": ("table", "partitions", "compact_strategy", "order_strategy", "order_by", "where", "options"),
    "expire_snapshots": ("table", "retain_max", "retain_min", "older_than", "max_deletes"),
    "create_tag": ("table", "tag", "snapshot", "time_retained"),
    "delete_tag": ("table", "tag"),
    "rollback": ("table", "version"),
    "remove_orphan_files": ("table", "older_than", "dry_run"),
    "create_branch": ("table", "branch", "tag", "ignoreIfExists"),
    "delete_branch": ("table", "branch"),
    "rename_branch": ("table", "from_branch", "to_branch"),
    "fast_forward": ("table", "branch"),
}
# `db.t$branch_<name>`: a procedure's table on one of its branches, as Paimon's identifiers name it
BRANCH_SUFFIX = "$branch_"


def _call(ctx: _Context, plan: Any) -> DataFrame:
    from .. import procedures
    parts = _names(plan.procedure())
    name = parts[-1].lower()
    if len(parts) != 2 or parts[0].lower() != "sys" or name not in _PROCEDURE_ARGS:
        raise SqlError(f"unknown procedure {'.'.join(parts)}; available: "
                       + ", ".join(f"sys.{p}" for p in _PROCEDURE_ARGS))
    expected = _PROCEDURE_ARGS[name]
    by_lower = {e.lower(): e for e in expected}  # Spark's parser lower-cases named arguments
    args: dict[str, Any] = {}
    for i, arg in enumerate(_seq(plan.args())):
        if arg.getClass().getSimpleName() == "NamedArgumentExpression":
            key, value = str(arg.key()), _value(ctx.spark, arg.value())
        else:
            if i >= len(expected):
                raise SqlError(f"sys.{name} takes at most {len(expected)} arguments ({', '.join(expected)})")
            key, value = expected[i], _value(ctx.spark, arg)
        if key.lower() not in by_lower:
            raise SqlError(f"sys.{name} has no argument {key!r}; its arguments: {', '.join(expected)}")
        args[by_lower[key.lower()]] = value
    if "table" not in args:
        raise SqlError(f"sys.{name} needs table => 'database.table'")
    table_name, _, branch = str(args.pop("table")).partition(BRANCH_SUFFIX)
    _, table = ctx.table(table_name.split("."))
    if branch:
        table = Table.load(table.path, {"branch": branch}, table.storage_options)  # raises naming a missing one
    spark = ctx.spark
    if name in ("create_branch", "delete_branch", "rename_branch", "fast_forward"):
        return _branch_procedure(spark, name, table, args)
    if name == "compact":
        for unsupported in ("order_strategy", "order_by", "where"):
            if args.get(unsupported) not in (None, "", "none"):
                raise SqlError(f"sys.compact: {unsupported} is not supported by paimon_ds")
        strategy = str(args.get("compact_strategy") or "full").lower()
        if strategy not in ("full", "minor"):
            raise SqlError(f"sys.compact: compact_strategy must be 'full' or 'minor', got {strategy!r}")
        from .cluster import compact
        options = {**_parse_options(args.get("options")), **({"branch": branch} if branch else {})}
        snapshot = compact(spark, table.path, strategy == "full", options, args.get("partitions") or None)
        return spark.createDataFrame([(snapshot is not None,)], "result boolean")
    if name == "expire_snapshots":
        if args.get("max_deletes") is not None:
            raise SqlError("sys.expire_snapshots: max_deletes is not supported by paimon_ds")
        result = procedures.expire_snapshots(table, args.get("retain_max"), args.get("retain_min"),
                                             args.get("older_than"))
        return spark.createDataFrame([(len(result.expired),)], "deleted_snapshots_num int")
    if name == "create_tag":
        if args.get("time_retained") is not None:
            raise SqlError("sys.create_tag: time_retained is not supported by paimon_ds")
        if "tag" not in args:
            raise SqlError("sys.create_tag needs tag => 'name'")
        procedures.create_tag(table, str(args["tag"]), args.get("snapshot"))
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "delete_tag":
        if "tag" not in args:
            raise SqlError("sys.delete_tag needs tag => 'name'")
        for tag in str(args["tag"]).split(","):
            procedures.delete_tag(table, tag.strip())
        return spark.createDataFrame([(True,)], "result boolean")
    if name == "rollback":
        if args.get("version") is None:
            raise SqlError("sys.rollback needs version => snapshot id or tag name")
        procedures.rollback(table, args["version"])
        return spark.createDataFrame([(True,)], "result boolean")
    found = procedures.remove_orphan_files(table, args.get("older_than"), bool(args.get("dry_run") or False))
    return spark.createDataFrame([(f,) for f in found], "deleted_file string")


def _branch_procedure(spark: SparkSession, name: str, table: Table, args: dict[str, Any]) -> DataFrame:
    """sys.create_branch / delete_branch / rename_branch / fast_forward, with Paimon's argument names."""
    from .. import procedures
    needed = {"rename_branch": ("from_branch", "to_branch")}.get(name, ("branch",))
    missing = [a for a in needed if args.get(a) in (None, "")]
    if missing:
        raise SqlError(f"sys.{name} needs " + ", ".join(f"{a} => 'name'" for a in missing))
    if name == "create_branch":
        ignore = str(args.get("ignoreIfExists") or "false").strip().lower()
        if ignore not in ("true", "false"):
            raise SqlError(f"sys.create_branch: ignoreIfExists must be true or false, got {ignore!r}")
        tag = args.get("tag")
        procedures.create_branch(table, str(args["branch"]), str(tag) if tag not in (None, "") else None,
                                 ignore == "true")
    elif name == "delete_branch":
        procedures.delete_branch(table, str(args["branch"]))
    elif name == "rename_branch":
        procedures.rename_branch(table, str(args["from_branch"]), str(args["to_branch"]))
    else:
        procedures.fast_forward(table, str(args["branch"]))
    return spark.createDataFrame([(True,)], "result boolean")


def _parse_options(text: str | None) -> dict[str, str]:
    """Paimon's procedure options: `k1=v1,k2=v2`."""
    out = {}
    for pair in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = pair.partition("=")
        if not sep:
            raise SqlError(f"options {text!r}: expected key=value pairs separated by ','")
        out[key.strip()] = value.strip()
    return out


_HANDLERS: dict[str, Callable[[_Context, Any], Any]] = {
    "CreateTable": _create_table,
    "CreateTableAsSelect": _create_table_as_select,
    "DropTable": _drop_table,
    "CreateNamespace": _create_namespace,
    "DropNamespace": _drop_namespace,
    "SetTableProperties": _alter,
    "UnsetTableProperties": _alter,
    "AddColumns": _alter,
    "RenameColumn": _alter,
    "DropColumns": _alter,
    "AlterColumns": _alter,
    "ReplaceColumns": _alter,
    "RenameTable": _rename_table,
    "DeleteFromTable": _delete,
    "UpdateTable": _update,
    "MergeIntoTable": _merge,
    "InsertIntoStatement": _insert,
    "Call": _call,
}

_REFUSED = {
    "ReplaceTable": "CREATE OR REPLACE TABLE",
    "ReplaceTableAsSelect": "CREATE OR REPLACE TABLE ... AS SELECT",
}

__all__ = ["run", "SqlError", "TableNotFound"]
