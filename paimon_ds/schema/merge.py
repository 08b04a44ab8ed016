"""Schema evolution on write (`write.merge-schema`, Paimon's Spark connector option): the data's columns merged
into the table's schema as Paimon's SchemaMergingUtils merges them (Paimon 1.x, up to 1.4.1), and the result
committed as the next schema file before any data is written.

Columns are matched by name, case-insensitively (as Spark's resolver aligns the data in Paimon's SchemaHelper); a
data column of another type changes the table column when an implicit cast widens the old type into it (or, with
`write.merge-schema.explicit-cast`, any cast paimon_ds reads back: ``casts``), decimals of one scale to the larger
precision (Paimon 1.0+), nested rows field by field; new columns are appended, nullable, with new field ids;
columns the data lacks stay, and the write fills them with nulls. Primary and bucket keys widen too (Paimon's
mergeSchema does not check them, unlike its ALTER); partition keys keep their types (paimon_ds).
"""

from __future__ import annotations

import time
from dataclasses import replace

import pyarrow as pa

from ..casts.rules import castable
from ..fs.file_io import FileIO
from ..snapshot.branch import MAIN_BRANCH, branch_path
from .change import MAX_ATTEMPTS, reassign_field_ids
from .checks import is_reserved_name
from .manager import SCHEMA_VERSION, SchemaManager, TableNotFound, TableSchema
from .types import (
    ArrayType,
    DataField,
    DataType,
    FieldIdAllocator,
    MapType,
    MultisetType,
    RowType,
    SchemaError,
    fields_from_arrow,
)

# Paimon's DataTypeCasts implicit casts between atomic types: target root -> source roots it widens from.
_NUMERIC = ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
_IMPLICIT = {
    "CHAR": ("CHAR",), "VARCHAR": ("CHAR", "VARCHAR"), "BOOLEAN": ("BOOLEAN",), "BINARY": ("BINARY",),
    "VARBINARY": ("BINARY", "VARBINARY"), "DECIMAL": _NUMERIC, "TINYINT": ("TINYINT",),
    "SMALLINT": ("TINYINT", "SMALLINT"), "INT": ("TINYINT", "SMALLINT", "INT"),
    "BIGINT": ("TINYINT", "SMALLINT", "INT", "BIGINT"), "FLOAT": ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT",
                                                                  "DECIMAL"),
    "DOUBLE": _NUMERIC, "DATE": ("DATE", "TIMESTAMP"), "TIME": ("TIME", "TIMESTAMP"),
    "TIMESTAMP": ("TIMESTAMP", "TIMESTAMP_LTZ"), "TIMESTAMP_LTZ": ("TIMESTAMP_LTZ", "TIMESTAMP"),
}
_LENGTH_ROOTS = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_PRECISION_ROOTS = ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ")


def _refuse(where: str, why: str = "") -> SchemaError:
    return SchemaError(f"cannot merge the data's schema into the table: {where}{why}")


def _merged_atomic(where: str, base: DataType, update: DataType, explicit: bool) -> DataType:
    """An atomic column's type after a write of ``update`` values (Paimon 1.x SchemaMergingUtils.merge)."""
    if base.root == update.root == "DECIMAL":
        # Paimon 1.0+: the same scale merges to the larger precision (0.9 refused any difference)
        if base.scale != update.scale:
            raise _refuse(where, " (Paimon does not merge decimals of different scale)")
        return DataType("DECIMAL", (max(base.precision, update.precision), base.scale), base.nullable)
    implicit = base.root in _IMPLICIT.get(update.root, ())
    if not implicit and not (explicit and castable(base, update)):
        hint = "" if explicit else " (write.merge-schema.explicit-cast=true allows explicit casts)"
        raise _refuse(where, hint)
    if not explicit and base.root in _LENGTH_ROOTS and update.root in _LENGTH_ROOTS \
            and update.params[0] < base.params[0]:
        raise _refuse(where, " (a smaller length)")
    if not explicit and base.root in _PRECISION_ROOTS and update.root in _PRECISION_ROOTS \
            and update.precision < base.precision:
        raise _refuse(where, " (a lower precision)")
    if not castable(base, update):
        raise _refuse(where, " (Paimon allows it, but paimon_ds cannot read the files already written as the new "
                             "type)")
    return update.copy(base.nullable)


def _match(fields: tuple[DataField, ...] | list[DataField], name: str) -> DataField | None:
    """The field named ``name``, compared case-insensitively (Spark's resolver with spark.sql.caseSensitive=false,
    which Paimon's SchemaHelper aligns the data by; Paimon master (#8034) merges by it too)."""
    exact = next((f for f in fields if f.name == name), None)
    return exact or next((f for f in fields if f.name.lower() == name.lower()), None)


def _merged_type(name: str, base: DataType, update: DataType, ids: FieldIdAllocator, explicit: bool,
                 widening: bool) -> DataType:
    """The column type after a write of ``update`` values (Paimon's SchemaMergingUtils.merge): rows merge field by
    field (new fields appended, nullable, with new ids), arrays and maps by their elements, atomic types widen."""
    if base.copy(True) == update.copy(True):
        return base
    where = f"column {name!r} is {base.sql()} in the table but {update.sql()} in the data"
    if isinstance(base, RowType) and isinstance(update, RowType):
        fields = []
        for f in base.fields:
            new = _match(update.fields, f.name)
            fields.append(f if new is None else replace(
                f, type=_merged_type(f"{name}.{f.name}", f.type, new.type, ids, explicit, widening)))
        for d in update.fields:
            if _match(base.fields, d.name) is None:
                dtype = reassign_field_ids(d.type, ids).copy(True)
                fields.append(DataField(ids.take(), d.name, dtype, d.description))
        return RowType("ROW", (), base.nullable, tuple(fields))
    if isinstance(base, MapType) and isinstance(update, MapType):
        return MapType("MAP", (), base.nullable,
                       _merged_type(f"{name} (key)", base.key, update.key, ids, explicit, widening),
                       _merged_type(f"{name} (value)", base.value, update.value, ids, explicit, widening))
    if isinstance(base, ArrayType) and isinstance(update, ArrayType):
        return ArrayType("ARRAY", (), base.nullable,
                         _merged_type(f"{name} (element)", base.element, update.element, ids, explicit, widening))
    if isinstance(base, MultisetType) and isinstance(update, MultisetType):
        return MultisetType("MULTISET", (), base.nullable,
                            _merged_type(f"{name} (element)", base.element, update.element, ids, explicit, widening))
    if not widening:
        return base  # Paimon master's type-widening=false: the table's type stays, the data is cast to it
    if type(base) is not DataType or type(update) is not DataType:
        raise _refuse(where)
    return _merged_atomic(where, base, update, explicit)


def merge_write_schema(schema: TableSchema, data: pa.Schema, explicit_cast: bool = False,
                       type_widening: bool = True) -> TableSchema:
    """The schema a write of ``data`` with `write.merge-schema` needs (``schema`` itself if nothing changes).

    As Paimon's Spark connector merges (SchemaMergingUtils.mergeSchemas, Paimon 1.x): columns are matched by name,
    case-insensitively; a data column of another type changes the table column to it when an implicit cast
    widens the old type into it (or, with ``explicit_cast``, any cast paimon_ds reads), a DECIMAL to the larger
    precision of the same scale, nested rows field by field; new data columns (and new fields of nested rows) are
    appended, nullable, with new field ids; table columns missing from the data stay (the write fills them with
    nulls). Primary and bucket keys widen as any column (Paimon's mergeSchema does not check them); partition keys
    keep their types (paimon_ds: the partition values in manifests and paths keep the old type's form).
    ``type_widening`` false (Paimon master's `write.merge-schema.type-widening`): existing types stay.
    """
    incoming, _ = fields_from_arrow(data)
    ids = FieldIdAllocator(schema.highest_field_id + 1)
    fields = []
    for f in schema.fields:
        new = _match(incoming, f.name)
        if new is None:
            fields.append(f)
            continue
        merged = _merged_type(f.name, f.type, new.type, ids, explicit_cast, type_widening)
        if merged != f.type and f.name in schema.partition_keys:
            raise SchemaError(f"cannot merge the data's schema into the table: column {f.name!r} is a partition "
                              f"key, whose type stays {f.type.sql()} (paimon_ds; write the data as "
                              f"{f.type.sql()})")
        fields.append(replace(f, type=merged))
    for d in incoming:
        if _match(schema.fields, d.name) is not None:
            continue
        if is_reserved_name(d.name):
            raise SchemaError(f"column name {d.name!r} is reserved by Paimon")
        dtype = reassign_field_ids(d.type, ids).copy(True)  # Paimon numbers a new column's nested fields first
        fields.append(DataField(ids.take(), d.name, dtype, d.description))
    if tuple(fields) == tuple(schema.fields):
        return schema
    return TableSchema(schema.id + 1, tuple(fields), max(schema.highest_field_id, ids.highest),
                       schema.partition_keys, schema.primary_keys, dict(schema.options), schema.comment,
                       int(time.time() * 1000), SCHEMA_VERSION)


def commit_merged_schema(io: FileIO, data: pa.Schema, explicit_cast: bool = False,
                         branch: str = MAIN_BRANCH, type_widening: bool = True) -> TableSchema:
    """Merge ``data``'s columns into the latest schema of the table's ``branch`` and write the result as the
    next schema file (create-if-absent; merged again onto a schema another writer created first)."""
    schemas = SchemaManager(io, branch_path(io.root, branch))
    for _ in range(MAX_ATTEMPTS):
        old = schemas.latest()
        if old is None:
            raise TableNotFound(f"no Paimon table at {io.root}")
        new = merge_write_schema(old, data, explicit_cast, type_widening)
        if new is old:
            return old
        if schemas.create(new) is new:
            return new
    raise SchemaError(f"could not merge the schema of {io.root}: other writers changed it {MAX_ATTEMPTS} times")
