"""paimon_ds.sql's DDL: CREATE TABLE [AS SELECT], DROP TABLE, CREATE / DROP DATABASE, ALTER TABLE and RENAME,
run through paimon_ds.Catalog, after which the session's named tables are brought in line (attach).

Spark drops a Python source table's OPTIONS / TBLPROPERTIES / LOCATION and calls nothing at CREATE time,
so these statements are read from the parsed plan (paimon_ds.spark.sql) and never reach Spark.
"""

from __future__ import annotations

import datetime as dt
import decimal
import zoneinfo
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    CharType,
    DataType,
    MapType,
    StringType,
    StructField,
    StructType,
    VarcharType,
)

from .. import procedures
from ..casts.java import java_float_str
from ..catalog import CatalogError
from ..format.binary_row import deserialize_row
from ..format.partition import escape_path_name, partition_filter
from ..options.registry import parse_list
from ..schema import change as sc
from ..schema.types import CHAR_TYPE_METADATA, DEFAULT_VALUE_METADATA
from .catalog import attach, detach_table
from .options import storage_job_options
from .session import activate
from .sql import (
    SqlContext,
    SqlError,
    constant_value,
    name_parts,
    plan_kind,
    query_dataframe,
    scala_dict,
    scala_list,
    scala_option,
    scala_option_str,
    spark_type,
)
from .system import quote
from .types import input_arrow_schema


def _table_spec(ctx: SqlContext, spec: Any) -> tuple[dict[str, str], str | None]:
    provider = scala_option(spec.provider())
    if provider is not None and str(provider).lower() != "paimon":
        raise SqlError(f"paimon_ds.sql creates Paimon tables: USING {provider} is not supported (omit USING or "
                       "write USING paimon)")
    if scala_option(spec.location()) is not None:
        raise SqlError("a catalog table lives in its warehouse (<warehouse>/<db>.db/<table>): LOCATION is not "
                       "supported; to use a table at another path, read or write it with format('paimon')")
    options = {k: str(v) for k, v in scala_dict(spec.properties()).items()}
    for pair in scala_list(spec.optionExpression().options()):
        options[str(pair._1())] = str(constant_value(ctx.spark, pair._2()))
    return options, scala_option_str(spec.comment())


def _partition_keys(transforms: Any) -> list[str]:
    keys = []
    for t in scala_list(transforms):
        refs = list(t.references())
        if str(t.name()) != "identity" or len(refs) != 1:
            raise SqlError(f"PARTITIONED BY takes columns, not {t.toString()}")
        keys.append(".".join(str(n) for n in refs[0].fieldNames()))
    return keys


def _keys(options: dict[str, str], partitioned_by: list[str]) -> tuple[list[str], list[str]]:
    """Partition and primary keys, from PARTITIONED BY and TBLPROPERTIES ('partition', 'primary-key')."""
    primary = parse_list(options.pop("primary-key", ""))
    from_properties = parse_list(options.pop("partition", ""))
    if partitioned_by and from_properties and partitioned_by != from_properties:
        raise SqlError(f"PARTITIONED BY ({', '.join(partitioned_by)}) and TBLPROPERTIES ('partition' = "
                       f"'{','.join(from_properties)}') disagree")
    return partitioned_by or from_properties, primary


def _arrow_type(name: str, jtype: Any, nullable: bool = True) -> pa.DataType:
    """A parsed column type as the Arrow type a table column of it gets."""
    return input_arrow_schema(StructType([StructField(name, spark_type(jtype), nullable)])).field(0).type


def _strings(dtype: DataType) -> DataType:
    """A parsed type with CHAR(n) / VARCHAR(n) as STRING, at any depth (Spark gives them no Arrow form)."""
    if isinstance(dtype, (CharType, VarcharType)):
        return StringType()
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, _strings(f.dataType), f.nullable, f.metadata) for f in dtype])
    if isinstance(dtype, ArrayType):
        return ArrayType(_strings(dtype.elementType), dtype.containsNull)
    if isinstance(dtype, MapType):
        return MapType(_strings(dtype.keyType), _strings(dtype.valueType), dtype.valueContainsNull)
    return dtype


def create_table(ctx: SqlContext, plan: Any) -> None:
    ident = ctx.identifier(name_parts(plan.name()))
    options, comment = _table_spec(ctx, plan.tableSpec())
    partition, primary = _keys(options, _partition_keys(plan.partitioning()))
    fields, field_metadata = [], {}
    for col in scala_list(plan.columns()):
        name = str(col.name())
        if scala_option(col.generationExpression()) is not None:
            raise SqlError(f"column {name}: generated columns are not supported by Paimon tables")
        dtype = spark_type(col.dataType())
        metadata = {}
        if isinstance(dtype, (CharType, VarcharType)):  # Paimon keeps the declared length; Arrow has none
            metadata[CHAR_TYPE_METADATA] = f"{'CHAR' if isinstance(dtype, CharType) else 'VARCHAR'}({dtype.length})"
        fields.append(StructField(name, _strings(dtype), bool(col.nullable())))
        if scala_option(col.comment()) is not None:
            metadata[b"comment"] = str(scala_option(col.comment()))
        default = _default_sql(col.defaultValue())
        if default is not None:  # stored as Paimon's Spark catalog stores it: the expression's SQL text
            metadata[DEFAULT_VALUE_METADATA] = default
        if metadata:
            field_metadata[name] = metadata
    arrow = input_arrow_schema(StructType(fields))
    arrow = pa.schema([f.with_metadata(field_metadata[f.name]) if f.name in field_metadata else f for f in arrow])
    ctx.catalog.create_table(ident, arrow, partition, primary, options, comment, bool(plan.ignoreIfExists()))
    ctx.refresh(ident)


def _default_sql(expression: Any) -> str | None:
    """The SQL text of a column's DEFAULT (Spark's DefaultValueExpression.originalSQL), None without one."""
    default = scala_option(expression)
    return None if default is None else str(default.originalSQL())


def create_table_as_select(ctx: SqlContext, plan: Any) -> None:
    ident = ctx.identifier(name_parts(plan.name()))
    options, comment = _table_spec(ctx, plan.tableSpec())
    partition, primary = _keys(options, _partition_keys(plan.partitioning()))
    if ctx.catalog.table_exists(ident):
        if plan.ignoreIfExists():
            return
        raise CatalogError(f"table {ident} already exists in {ctx.warehouse}")
    df = query_dataframe(ctx.spark, plan.query())
    table = ctx.catalog.create_table(ident, input_arrow_schema(df.schema), partition, primary, options, comment)
    activate(ctx.spark)  # this thread may be new: the source is looked up in its active session
    try:
        df.write.format("paimon").mode("append").options(**storage_job_options(table.storage_options)) \
            .save(table.path)
    except BaseException:
        ctx.catalog.drop_table(ident, ignore_if_not_exists=True)  # CTAS leaves no half-made table
        raise
    ctx.refresh(ident)


def drop_table(ctx: SqlContext, plan: Any) -> None:
    ident = ctx.identifier(name_parts(plan.child()))
    ctx.catalog.drop_table(ident, ignore_if_not_exists=bool(plan.ifExists()))
    ctx.refresh(ident, dropped=True)


def _namespace(node: Any) -> str:
    return ".".join(str(p) for p in scala_list(node.multipartIdentifier()))


def create_namespace(ctx: SqlContext, plan: Any) -> None:
    if "location" in {str(k).lower() for k in scala_dict(plan.properties())}:
        # as Paimon's filesystem catalog: a database is the directory <warehouse>/<db>.db
        raise SqlError("Cannot specify location for a database when using a filesystem catalog: a database of "
                       "the warehouse is the directory <warehouse>/<db>.db")
    name = _namespace(plan.name())
    existed = ctx.catalog.database_exists(name)
    ctx.catalog.create_database(name, ignore_if_exists=bool(plan.ifNotExists()))
    if existed:  # IF NOT EXISTS on a database another engine may have filled: its tables too
        attach(ctx.spark, ctx.warehouse, ctx.storage_options)
    else:
        ctx.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(name)}")


def drop_namespace(ctx: SqlContext, plan: Any) -> None:
    name = _namespace(plan.namespace())
    if not ctx.catalog.database_exists(name) and plan.ifExists():
        return
    tables = ctx.catalog.list_tables(name) if ctx.catalog.database_exists(name) else []
    ctx.catalog.drop_database(name, ignore_if_not_exists=bool(plan.ifExists()), cascade=bool(plan.cascade()))
    for t in tables:
        detach_table(ctx.spark, name, t)
    ctx.spark.sql(f"DROP DATABASE IF EXISTS `{name}` CASCADE")


# ------------------------------------------------------------------ ALTER TABLE
def alter_table(ctx: SqlContext, plan: Any) -> None:
    kind = plan_kind(plan)
    ident = ctx.identifier(name_parts(plan.table()))
    changes: list = []
    if kind == "SetTableProperties":
        props = {k: str(v) for k, v in scala_dict(plan.properties()).items()}
        comment = props.pop("comment", None)
        changes = [sc.SetOption(k, v) for k, v in props.items()]
        if comment is not None:
            changes.append(sc.UpdateComment(comment))
    elif kind == "UnsetTableProperties":
        keys = [str(k) for k in scala_list(plan.propertyKeys())]
        changes = [sc.RemoveOption(k) for k in keys if k != "comment"]
        if "comment" in keys:  # the table's comment, as SET TBLPROPERTIES ('comment' = ...) sets it
            changes.append(sc.UpdateComment(None))
    elif kind == "AddColumns":
        for col in scala_list(plan.columnsToAdd()):  # `s.x INT AFTER y`: a field of struct s (Paimon 1.0)
            parts = tuple(str(p) for p in scala_list(col.name()))
            if _default_sql(col.default()) is not None:  # as Paimon's SparkCatalog (checkNoDefaultValue)
                raise SqlError(f"Cannot add column {list(parts)} with default value {_default_sql(col.default())}: "
                               "add the column, then ALTER COLUMN ... SET DEFAULT")
            position = scala_option(col.position())
            changes.append(sc.AddColumn(parts if len(parts) > 1 else parts[0],
                                        _arrow_type(parts[-1], col.dataType(), bool(col.nullable())),
                                        scala_option_str(col.comment()), nullable=bool(col.nullable()),
                                        position=_position(position)))
    elif kind == "RenameColumn":
        changes = [sc.RenameColumn(_column_path(plan.column()), str(plan.newName()))]
    elif kind == "DropColumns":
        changes = [sc.DropColumn(_column_path(c)) for c in scala_list(plan.columnsToDrop())]
    elif kind == "AlterColumns":  # ALTER COLUMN c TYPE t / DROP NOT NULL / COMMENT 'x'
        for spec in scala_list(plan.specs()):
            name = _field_name(spec.column())
            if scala_option(spec.newPosition()) is not None:
                raise SqlError(f"ALTER COLUMN {name}: FIRST/AFTER is not supported by paimon_ds.sql")
            default = _default_sql(spec.newDefaultExpression())
            if default is not None or bool(spec.dropDefault()):  # SET DEFAULT v / DROP DEFAULT
                changes.append(sc.UpdateColumnDefaultValue(name, default))
            dtype = scala_option(spec.newDataType())
            if dtype is not None:
                changes.append(sc.UpdateColumnType(name, _arrow_type(name, dtype)))
            nullable = scala_option(spec.newNullability())
            if nullable is not None:
                changes.append(sc.UpdateColumnNullability(name, bool(nullable)))
            comment = scala_option(spec.newComment())
            if comment is not None:
                changes.append(sc.UpdateColumnComment(name, str(comment)))
    else:
        raise SqlError(f"ALTER TABLE ({kind}) is not supported by paimon_ds.sql; supported: SET/UNSET TBLPROPERTIES, "
                       "ADD COLUMNS, RENAME COLUMN, DROP COLUMN(S), ALTER COLUMN (TYPE, DROP NOT NULL, COMMENT, "
                       "SET / DROP DEFAULT), RENAME TO")
    ctx.catalog.alter_table(ident, changes)
    ctx.refresh(ident)


def _position(position: Any) -> sc.First | sc.After | None:
    """FIRST / AFTER c of an added column or field (Spark's UnresolvedFieldPosition of a ColumnPosition)."""
    if position is None:
        return None
    if hasattr(position, "position"):
        position = position.position()
    if plan_kind(position) == "After":
        return sc.After(str(position.column()))
    text = str(position.toString()).strip().lower()
    if text == "first":
        return sc.First()
    raise SqlError(f"column position {text!r} is not supported: FIRST or AFTER column")


def _column_path(node: Any) -> str | tuple[str, ...]:
    """A column's name, or the path of a nested field (`s.x`: field x of struct s)."""
    parts = tuple(str(p) for p in scala_list(node.name()))
    return parts if len(parts) > 1 else parts[0]


def _field_name(node: Any) -> str:
    parts = [str(p) for p in scala_list(node.name())]
    if len(parts) != 1:
        raise SqlError(f"nested column {'.'.join(parts)} is not supported")
    return parts[0]


def rename_table(ctx: SqlContext, plan: Any) -> None:
    old = ctx.identifier(name_parts(plan.child()))
    new = ctx.identifier([str(p) for p in scala_list(plan.newName())])
    ctx.catalog.rename_table(old, new)
    ctx.refresh(old, dropped=True)
    ctx.refresh(new)


# ------------------------------------------------------------------ TRUNCATE / DROP PARTITION
def truncate_table(ctx: SqlContext, plan: Any) -> None:
    """TRUNCATE TABLE t: one OVERWRITE snapshot without files (Paimon's truncateTable)."""
    ident = ctx.identifier(name_parts(plan.table()))
    procedures.truncate(ctx.catalog.get_table(ident))
    ctx.refresh(ident)


def drop_partitions(ctx: SqlContext, plan: Any) -> None:
    """ALTER TABLE t DROP [IF EXISTS] PARTITION (k = v), ... and TRUNCATE TABLE t PARTITION (k = v): one
    OVERWRITE snapshot removing the partitions' files (Paimon's dropPartitions / truncatePartition). As Spark's
    DropPartitions, a partition named in full that does not exist is an error unless IF EXISTS; a spec must name
    the partition keys or a prefix of them (which names every partition under it), as Paimon's."""
    ident = ctx.identifier(name_parts(plan.table()))
    table = ctx.catalog.get_table(ident)
    nodes = [plan.partitionSpec()] if plan_kind(plan) == "TruncatePartition" else scala_list(plan.parts())
    specs = [{str(k): (None if v is None else str(v)) for k, v in scala_dict(n.spec()).items()} for n in nodes]
    if plan_kind(plan) == "DropPartitions":
        for spec in specs:  # as Paimon's dropPartitions: a full spec, or a prefix of the keys naming all under it
            if set(spec) != set(table.partition_keys[:len(spec)]):
                raise SqlError(f"DROP PARTITION {spec}: the spec must name the partition keys {table.partition_keys} "
                               "or a prefix of them")
    if plan_kind(plan) == "DropPartitions" and not plan.ifExists():
        present = list(procedures.partitions(table))
        # a missing partition named in full is an error; a prefix naming nothing drops nothing (Paimon 1.4's
        # DDLTestBase "Drop Partition by partial spec")
        missing = [s for s in specs if len(s) == len(table.partition_keys)
                   and not any(partition_filter(table, [s])(p) for p in present)]
        if missing:
            raise SqlError(f"partitions {missing} do not exist in {ident} (use DROP IF EXISTS PARTITION)")
    procedures.drop_partitions(table, specs)
    ctx.refresh(ident)


# ------------------------------------------------------------------ SHOW PARTITIONS
def _spark_string(value: Any, root: str, zone: str) -> str:
    """A partition value as Spark's CAST(v AS STRING) prints it (`null` for null, as Spark's SHOW PARTITIONS)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if root == "TIMESTAMP_LTZ":  # an instant (Spark TIMESTAMP): printed in the session's time zone
            utc = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            value = utc.astimezone(zoneinfo.ZoneInfo(zone)).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, float):
        return java_float_str(value, root == "FLOAT")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def show_partitions(ctx: SqlContext, plan: Any) -> Any:
    """SHOW PARTITIONS t [PARTITION (k = v, ...)]: one row `k1=v1/k2=v2` per partition holding files, each value
    as Spark's CAST to STRING prints it, names and values path-escaped (Spark's ShowPartitionsExec). Spark
    refuses the statement on a Python source's table; a partial spec names every partition under it."""
    ident = ctx.identifier(name_parts(plan.table()))
    table = ctx.catalog.get_table(ident)
    if not table.partition_keys:
        raise SqlError(f"SHOW PARTITIONS: table {ident} is not partitioned")
    present = procedures.partitions(table)
    pattern = scala_option(plan.pattern())
    if pattern is not None:
        spec = {str(k): (None if v is None else str(v)) for k, v in scala_dict(pattern.spec()).items()}
        try:
            wanted = partition_filter(table, [spec])
        except ValueError as e:
            raise SqlError(f"SHOW PARTITIONS: {e}") from None
        present = [p for p in present if wanted(p)]
    types = [f.type for f in table.table_schema.partition_fields]
    zone = ctx.spark.conf.get("spark.sql.session.timeZone")
    lines = sorted("/".join(f"{escape_path_name(k)}={escape_path_name(_spark_string(v, t.root, zone))}"
                            for k, v, t in zip(table.partition_keys, deserialize_row(p, types), types))
                   for p in present)
    return ctx.spark.createDataFrame([(line,) for line in lines], "partition STRING")


# Plan node -> the DDL that runs it
DDL_HANDLERS: dict[str, Callable[[SqlContext, Any], Any]] = {
    "CreateTable": create_table,
    "CreateTableAsSelect": create_table_as_select,
    "DropTable": drop_table,
    "CreateNamespace": create_namespace,
    "DropNamespace": drop_namespace,
    "SetTableProperties": alter_table,
    "UnsetTableProperties": alter_table,
    "AddColumns": alter_table,
    "RenameColumn": alter_table,
    "DropColumns": alter_table,
    "AlterColumns": alter_table,
    "ReplaceColumns": alter_table,
    "RenameTable": rename_table,
    "TruncateTable": truncate_table,
    "TruncatePartition": drop_partitions,
    "DropPartitions": drop_partitions,
    "ShowPartitions": show_partitions,
}
