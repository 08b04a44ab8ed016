"""Schema evolution on write (`write.merge-schema`, Paimon's Spark connector option): the data's columns merged
into the table's schema as Paimon's SchemaMergingUtils merges them, and the result committed as the next schema
file before any data is written.

Columns are matched by name; a data column of another type changes the table column when an implicit cast widens
the old type into it (or, with `write.merge-schema.explicit-cast`, any cast paimon_ds reads back: ``casts``); new
columns are appended, nullable, with new field ids. Partition, primary and bucket keys keep their types, as ALTER
(``schema_change``) keeps them.
"""

from __future__ import annotations

import time

import pyarrow as pa

from .branch import MAIN_BRANCH, branch_path
from .casts.rules import castable
from .fs import FileIO
from .schema import SCHEMA_VERSION, SchemaManager, TableNotFound, TableSchema
from .schema_change import MAX_ATTEMPTS, ColumnAlreadyExists, reassign_field_ids
from .schema_checks import is_reserved_name
from .types import DataField, DataType, FieldIdAllocator, SchemaError, fields_from_arrow

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


def _merged_type(name: str, base: DataType, update: DataType, explicit: bool) -> DataType:
    """The column type after a write of ``update`` values (Paimon's SchemaMergingUtils.merge, atomic types)."""
    if base.copy(True) == update.copy(True):
        return base
    where = f"column {name!r} is {base.sql()} in the table but {update.sql()} in the data"
    if type(base) is not DataType or type(update) is not DataType:
        raise SchemaError(f"cannot merge the data's schema into the table: {where} (nested types must match)")
    if base.root == update.root == "DECIMAL":
        raise SchemaError(f"cannot merge the data's schema into the table: {where} (Paimon does not merge "
                          "decimals of different precision or scale)")
    implicit = base.root in _IMPLICIT.get(update.root, ())
    if not implicit and not (explicit and castable(base, update)):
        hint = "" if explicit else " (write.merge-schema.explicit-cast=true allows explicit casts)"
        raise SchemaError(f"cannot merge the data's schema into the table: {where}{hint}")
    if not explicit and base.root in _LENGTH_ROOTS and update.root in _LENGTH_ROOTS \
            and update.params[0] < base.params[0]:
        raise SchemaError(f"cannot merge the data's schema into the table: {where} (a smaller length)")
    if not explicit and base.root in _PRECISION_ROOTS and update.root in _PRECISION_ROOTS \
            and update.precision < base.precision:
        raise SchemaError(f"cannot merge the data's schema into the table: {where} (a lower precision)")
    if not castable(base, update):
        raise SchemaError(f"cannot merge the data's schema into the table: {where} (Paimon allows it, but paimon_ds "
                          "cannot read the files already written as the new type)")
    return update.copy(base.nullable)


def merge_write_schema(schema: TableSchema, data: pa.Schema, explicit_cast: bool = False) -> TableSchema:
    """The schema a write of ``data`` with `write.merge-schema` needs (``schema`` itself if nothing changes).

    As Paimon's Spark connector merges (SchemaMergingUtils.mergeSchemas): columns are matched by name; a
    data column of another type changes the table column to it when an implicit cast widens the old type
    into it (or, with ``explicit_cast``, any cast paimon_ds reads); new data columns are appended, nullable,
    with new field ids; table columns missing from the data stay. paimon_ds also keeps partition, primary
    and bucket keys' types (their bytes place rows), as its ALTER does.
    """
    incoming, _ = fields_from_arrow(data)
    by_name = {f.name: f for f in schema.fields}
    fields = []
    changed = False
    for f in schema.fields:
        new = next((d for d in incoming if d.name == f.name), None)
        if new is None:
            fields.append(f)
            continue
        merged = _merged_type(f.name, f.type, new.type, explicit_cast)
        if merged != f.type:
            if f.name in schema.partition_keys or f.name in schema.primary_keys or f.name in schema.bucket_keys:
                raise SchemaError(f"cannot merge the data's schema into the table: column {f.name!r} is a partition, "
                                  f"primary or bucket key, whose type stays {f.type.sql()}")
            changed = True
        fields.append(DataField(f.id, f.name, merged, f.description))
    ids = FieldIdAllocator(schema.highest_field_id + 1)
    for d in incoming:
        if d.name in by_name:
            continue
        clash = [n for n in by_name if n.lower() == d.name.lower()]
        if clash:
            raise ColumnAlreadyExists(f"cannot merge the data's schema into the table: column {d.name!r} differs "
                                      f"from the table's {clash[0]!r} only in case")
        if is_reserved_name(d.name):
            raise SchemaError(f"column name {d.name!r} is reserved by Paimon")
        dtype = reassign_field_ids(d.type, ids).copy(True)  # Paimon numbers a new column's nested fields first
        fields.append(DataField(ids.take(), d.name, dtype, d.description))
        changed = True
    if not changed:
        return schema
    return TableSchema(schema.id + 1, tuple(fields), max(schema.highest_field_id, ids.highest),
                       schema.partition_keys, schema.primary_keys, dict(schema.options), schema.comment,
                       int(time.time() * 1000), SCHEMA_VERSION)


def commit_merged_schema(io: FileIO, data: pa.Schema, explicit_cast: bool = False,
                         branch: str = MAIN_BRANCH) -> TableSchema:
    """Merge ``data``'s columns into the latest schema of the table's ``branch`` and write the result as the
    next schema file (create-if-absent; merged again onto a schema another writer created first)."""
    schemas = SchemaManager(io, branch_path(io.root, branch))
    for _ in range(MAX_ATTEMPTS):
        old = schemas.latest()
        if old is None:
            raise TableNotFound(f"no Paimon table at {io.root}")
        new = merge_write_schema(old, data, explicit_cast)
        if new is old:
            return old
        if schemas.create(new) is new:
            return new
    raise SchemaError(f"could not merge the schema of {io.root}: other writers changed it {MAX_ATTEMPTS} times")
