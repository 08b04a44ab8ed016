"""Paimon data types and their one mapping to and from Arrow.

Paimon stores types in `schema-N` as SQL strings for atomic types (``"BIGINT NOT NULL"``,
``"DECIMAL(10, 2)"``) and as JSON objects for ARRAY, MAP, MULTISET and ROW. Spark reaches this
module only through Arrow, so there is exactly one mapping to keep right.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import EXIT_BAD_INPUT, PaimonDsError

MAX_LENGTH = 2147483647
# Arrow field metadata naming a string column's declared CHAR(n) / VARCHAR(n) (Arrow's string has no length)
CHAR_TYPE_METADATA = b"paimon.char-type"


class SchemaError(PaimonDsError, ValueError):
    """A schema or type that Paimon (or this package) cannot represent."""

    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class DataType:
    """An atomic Paimon type: ``root`` is the SQL name, ``params`` its numeric arguments."""

    root: str
    params: tuple[int, ...] = ()
    nullable: bool = True

    def sql(self) -> str:
        if self.root == "VARCHAR" and self.params == (MAX_LENGTH,):
            text = "STRING"
        elif self.root == "VARBINARY" and self.params == (MAX_LENGTH,):
            text = "BYTES"
        elif self.root == "TIMESTAMP_LTZ":
            text = f"TIMESTAMP({self.params[0]}) WITH LOCAL TIME ZONE"
        elif self.params:
            text = f"{self.root}({', '.join(str(p) for p in self.params)})"
        else:
            text = self.root
        return text if self.nullable else text + " NOT NULL"

    def to_json(self) -> Any:
        return self.sql()

    def copy(self, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    @property
    def precision(self) -> int:
        return self.params[0]

    @property
    def scale(self) -> int:
        return self.params[1] if len(self.params) > 1 else 0


@dataclass(frozen=True)
class ArrayType(DataType):
    element: DataType = None  # type: ignore[assignment]

    def to_json(self) -> Any:
        return {"type": "ARRAY" if self.nullable else "ARRAY NOT NULL", "element": self.element.to_json()}

    def sql(self) -> str:
        return f"ARRAY<{self.element.sql()}>" + ("" if self.nullable else " NOT NULL")


@dataclass(frozen=True)
class MultisetType(DataType):
    element: DataType = None  # type: ignore[assignment]

    def to_json(self) -> Any:
        return {"type": "MULTISET" if self.nullable else "MULTISET NOT NULL", "element": self.element.to_json()}

    def sql(self) -> str:
        return f"MULTISET<{self.element.sql()}>" + ("" if self.nullable else " NOT NULL")


@dataclass(frozen=True)
class MapType(DataType):
    key: DataType = None  # type: ignore[assignment]
    value: DataType = None  # type: ignore[assignment]

    def to_json(self) -> Any:
        return {"type": "MAP" if self.nullable else "MAP NOT NULL",
                "key": self.key.to_json(), "value": self.value.to_json()}

    def sql(self) -> str:
        return f"MAP<{self.key.sql()}, {self.value.sql()}>" + ("" if self.nullable else " NOT NULL")


# the Arrow field metadata key of a column's default value (DataField.default_value)
DEFAULT_VALUE_METADATA = b"default-value"


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: str | None = None
    # Paimon 1.x's column default (DataField.defaultValue): the text a writer casts to the column's type and
    # writes in place of a null (TableWriteImpl's DefaultValueRow); see ``default_values``
    default_value: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type.to_json()}
        if self.description is not None:
            out["description"] = self.description
        if self.default_value is not None:
            out["defaultValue"] = self.default_value
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> DataField:
        return DataField(obj["id"], obj["name"], parse_type(obj["type"]), obj.get("description"),
                         obj.get("defaultValue"))

    @property
    def nullable(self) -> bool:
        return self.type.nullable

    def __repr__(self) -> str:
        described = f", description={self.description!r}" if self.description is not None else ""
        return f"DataField(id={self.id}, name={self.name!r}, type={self.type.sql()}{described})"


@dataclass(frozen=True)
class RowType(DataType):
    fields: tuple[DataField, ...] = field(default_factory=tuple)

    def to_json(self) -> Any:
        return {"type": "ROW" if self.nullable else "ROW NOT NULL", "fields": [f.to_json() for f in self.fields]}

    def sql(self) -> str:
        inner = ", ".join(f"{f.name} {f.type.sql()}" for f in self.fields)
        return f"ROW<{inner}>" + ("" if self.nullable else " NOT NULL")


ATOMIC_ROOTS = {
    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "CHAR",
    "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "VARIANT", "BLOB",
}
# Paimon's VARIANT: its value and metadata bytes (the Parquet Variant encoding), as Paimon's files hold it and
# pypaimon reads it; the metadata field's tag is how Spark's Arrow form marks a VariantType
VARIANT_ARROW = pa.struct([pa.field("value", pa.binary(), nullable=False),
                           pa.field("metadata", pa.binary(), nullable=False, metadata={b"variant": b"true"})])
_ALIASES = {"INTEGER": "INT", "DEC": "DECIMAL", "NUMERIC": "DECIMAL"}
_DEFAULT_PARAMS = {
    "DECIMAL": (10, 0), "CHAR": (1,), "VARCHAR": (1,), "BINARY": (1,), "VARBINARY": (1,),
    "TIME": (0,), "TIMESTAMP": (6,), "TIMESTAMP_LTZ": (6,),
}
_ATOMIC_RE = re.compile(
    r"^\s*(?P<name>[A-Z_]+(?:\s+[A-Z_]+)*?)\s*(?:\((?P<params>[^)]*)\))?"
    r"(?P<ltz>\s+WITH\s+LOCAL\s+TIME\s+ZONE)?(?P<notnull>\s+NOT\s+NULL)?\s*$",
    re.IGNORECASE,
)


def _parse_atomic(text: str) -> DataType:
    m = _ATOMIC_RE.match(text)
    if not m:
        raise SchemaError(f"cannot parse Paimon type {text!r}")
    name = m.group("name").upper()
    nullable = m.group("notnull") is None
    if name == "STRING":
        return DataType("VARCHAR", (MAX_LENGTH,), nullable)
    if name == "BYTES":
        return DataType("VARBINARY", (MAX_LENGTH,), nullable)
    if name in ("TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE") or (name == "TIMESTAMP" and m.group("ltz")):
        name = "TIMESTAMP_LTZ"
    name = _ALIASES.get(name, name)
    if name not in ATOMIC_ROOTS:
        raise SchemaError(f"unknown Paimon type {text!r}")
    params = tuple(int(p) for p in m.group("params").split(",")) if m.group("params") else _DEFAULT_PARAMS.get(name, ())
    return DataType(name, params, nullable)


def parse_type(obj: Any) -> DataType:
    """Parse a type as it appears in a Paimon schema file."""
    if isinstance(obj, str):
        return _parse_atomic(obj)
    kind = obj["type"].upper()
    nullable = "NOT NULL" not in kind
    root = kind.replace("NOT NULL", "").strip()
    if root == "ARRAY":
        return ArrayType("ARRAY", (), nullable, parse_type(obj["element"]))
    if root == "MULTISET":
        return MultisetType("MULTISET", (), nullable, parse_type(obj["element"]))
    if root == "MAP":
        return MapType("MAP", (), nullable, parse_type(obj["key"]), parse_type(obj["value"]))
    if root == "ROW":
        return RowType("ROW", (), nullable, tuple(DataField.from_json(f) for f in obj["fields"]))
    raise SchemaError(f"unknown Paimon type {obj!r}")


# ------------------------------------------------------------------------------------ Arrow

def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type data of a Paimon type is read into and written from."""
    r = t.root
    if isinstance(t, RowType):
        return pa.struct([to_arrow_field(f.name, f.type) for f in t.fields])
    if isinstance(t, MapType):
        return pa.map_(to_arrow_type(t.key), to_arrow_field("value", t.value))
    if isinstance(t, MultisetType):  # Paimon's files and Spark connector: element -> its count
        return pa.map_(to_arrow_type(t.element), pa.field("value", pa.int32(), nullable=False))
    if isinstance(t, ArrayType):
        return pa.list_(to_arrow_field("element", t.element))
    simple = {
        "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
        "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
        "CHAR": pa.string(), "VARCHAR": pa.string(), "BINARY": pa.binary(), "VARBINARY": pa.binary(),
    }
    if r in simple:
        return simple[r]
    if r == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if r == "VARIANT":
        return VARIANT_ARROW
    if r == "BLOB":  # its values live in .blob files of data-evolution tables, which paimon_ds does not read
        raise SchemaError("Paimon type BLOB (large objects kept in .blob files of data-evolution tables) is not "
                          "supported by paimon_ds")
    if r == "TIME":  # Paimon keeps TIME(p) as milliseconds of the day, whatever p
        return pa.time32("ms")
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = t.precision
        unit = "s" if p == 0 else "ms" if p <= 3 else "us" if p <= 6 else "ns"
        return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)
    raise SchemaError(f"Paimon type {t.sql()} has no Arrow mapping")


_UNIT_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}
_FLOOR_UNIT = {"s": "second", "ms": "millisecond", "us": "microsecond"}


def _compact(arr: pa.Array) -> pa.Array:
    """A nested array copied so that its children start at its first element (a sliced list or map array
    keeps its whole child array; rebuilding it from offsets needs them to line up)."""
    return arr.take(pa.array(range(len(arr)), pa.int64())) if arr.offset else arr


def nulls_under_required(arr: pa.Array) -> bool:
    """Whether a struct array has nulls in a NOT NULL child (Spark sends a null VARIANT's value and metadata as
    nulls; the parquet writer refuses them even under a null parent)."""
    return pa.types.is_struct(arr.type) and any(
        not f.nullable and arr.field(i).null_count for i, f in enumerate(arr.type))


def _required(child: pa.Array, field: pa.Field) -> pa.Array:
    """A NOT NULL binary child's nulls (only under null parents, where no reader looks) made empty values."""
    if field.nullable or not child.null_count or not (pa.types.is_binary(child.type) or pa.types.is_string(child.type)):
        return child
    return child.fill_null(pa.scalar(b"" if pa.types.is_binary(child.type) else "", child.type))


def conform_array(arr: pa.Array | pa.ChunkedArray, target: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """``arr`` in the Arrow type ``target`` (the same Paimon type, another Arrow form of it): Arrow's cast,
    except that a timestamp of a finer unit is floored, as Paimon's ``Timestamp.toMicros`` and its writers
    truncate (Arrow's cast refuses the lost digits, or rounds toward zero before 1970), nested types
    included. Vectorised; only columns whose type differs are touched."""
    if isinstance(arr, pa.ChunkedArray):
        if arr.type == target and not any(nulls_under_required(c) for c in arr.chunks):
            return arr
        return pa.chunked_array([conform_array(c, target) for c in arr.chunks], target)
    if arr.type == target and not nulls_under_required(arr):
        return arr
    t = arr.type
    if pa.types.is_timestamp(t) and pa.types.is_timestamp(target):
        if _UNIT_ORDER[t.unit] > _UNIT_ORDER[target.unit]:
            arr = pc.floor_temporal(arr, unit=_FLOOR_UNIT[target.unit])
        return arr.cast(target)
    if pa.types.is_time(t) and pa.types.is_time(target) and t != target:
        return arr.cast(target)  # TIME holds milliseconds: any finer unit is exact
    if pa.types.is_struct(t) and pa.types.is_struct(target) and t.num_fields == target.num_fields:
        children = [_required(conform_array(arr.field(i), target.field(i).type), target.field(i))
                    for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_map(t) and pa.types.is_map(target):
        arr = _compact(arr)
        return pa.MapArray.from_arrays(arr.offsets, conform_array(arr.keys, target.key_type),
                                       conform_array(arr.items, target.item_type), type=target,
                                       mask=arr.is_null() if arr.null_count else None)
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_list(target):
        arr = _compact(arr)
        offsets = arr.offsets if pa.types.is_list(t) else arr.offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, conform_array(arr.values, target.value_type), type=target,
                                        mask=arr.is_null() if arr.null_count else None)
    return arr.cast(target)


def name_index(names: Sequence[str], name: str) -> int:
    """Where ``name`` is among ``names``: the exact name, else the first equal ignoring case (Spark's resolver with
    spark.sql.caseSensitive=false); -1 if none."""
    if name in names:
        return list(names).index(name)
    lower = name.lower()
    return next((i for i, n in enumerate(names) if n.lower() == lower), -1)


def align_by_name(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` in the Arrow type ``target``, struct fields matched by name (case-insensitively) at every depth,
    fields the data lacks null, values cast (safely) as ``conform_array`` casts: a write of data whose schema was
    merged into the table's (Paimon's SchemaHelper.alignColumns). Vectorised."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([align_by_name(c, target) for c in arr.chunks], target)
    t = arr.type
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        names = [t.field(i).name for i in range(t.num_fields)]
        children = []
        for f in target:
            i = name_index(names, f.name)
            child = arr.field(i) if i >= 0 else pa.nulls(len(arr), f.type)
            children.append(_required(align_by_name(child, f.type), f))
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null() if arr.null_count else None)
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_list(target):
        arr = _compact(arr)
        offsets = arr.offsets if pa.types.is_list(t) else arr.offsets.cast(pa.int32())
        return pa.ListArray.from_arrays(offsets, align_by_name(arr.values, target.value_type), type=target,
                                        mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_map(t) and pa.types.is_map(target):
        arr = _compact(arr)
        return pa.MapArray.from_arrays(arr.offsets, align_by_name(arr.keys, target.key_type),
                                       align_by_name(arr.items, target.item_type), type=target,
                                       mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
    return conform_array(arr, target)


def to_arrow_field(name: str, t: DataType) -> pa.Field:
    return pa.field(name, to_arrow_type(t), nullable=t.nullable)


def to_arrow_schema(fields: list[DataField] | tuple[DataField, ...]) -> pa.Schema:
    out = []
    for f in fields:
        try:
            out.append(to_arrow_field(f.name, f.type))
        except SchemaError as e:
            raise SchemaError(f"column {f.name!r} ({f.type.sql()}): {e}") from None
    return pa.schema(out)


def any_leaf_type(t: pa.DataType, predicate: Any) -> bool:
    """Whether ``predicate`` holds for ``t`` or any type nested in it (struct fields, map keys and items, list
    elements)."""
    if predicate(t):
        return True
    if pa.types.is_struct(t):
        return any(any_leaf_type(f.type, predicate) for f in t)
    if pa.types.is_map(t):
        return any_leaf_type(t.key_type, predicate) or any_leaf_type(t.item_type, predicate)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return any_leaf_type(t.value_type, predicate)
    return False


def is_variant(t: pa.DataType) -> bool:
    """Whether an Arrow struct is a VARIANT's (value and metadata bytes, as pypaimon and Spark give one)."""
    return pa.types.is_struct(t) and t.num_fields == 2 and {f.name for f in t} == {"value", "metadata"} and all(
        (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)) for f in t)


class FieldIdAllocator:
    """Hands out field ids the way Paimon does: depth-first, nested ROW fields included."""

    def __init__(self, start: int = 0) -> None:
        self.next_id = start

    def take(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    @property
    def highest(self) -> int:
        return self.next_id - 1


def from_arrow_type(t: pa.DataType, nullable: bool, ids: FieldIdAllocator) -> DataType:
    """The Paimon type for an Arrow type (what Spark's schema becomes through Arrow)."""
    n = nullable
    if pa.types.is_boolean(t):
        return DataType("BOOLEAN", (), n)
    for check, root in ((pa.types.is_int8, "TINYINT"), (pa.types.is_int16, "SMALLINT"),
                        (pa.types.is_int32, "INT"), (pa.types.is_int64, "BIGINT"),
                        (pa.types.is_float32, "FLOAT"), (pa.types.is_float64, "DOUBLE"),
                        (pa.types.is_date32, "DATE")):
        if check(t):
            return DataType(root, (), n)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return DataType("VARCHAR", (MAX_LENGTH,), n)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return DataType("VARBINARY", (MAX_LENGTH,), n)
    if pa.types.is_fixed_size_binary(t):
        return DataType("BINARY", (t.byte_width,), n)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"DECIMAL({t.precision}, {t.scale}) exceeds Paimon's maximum precision 38")
        return DataType("DECIMAL", (t.precision, t.scale), n)
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return DataType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", (precision,), n)
    if pa.types.is_time(t):
        return DataType("TIME", (3 if t.unit in ("s", "ms") else 6,), n)
    if pa.types.is_map(t):
        key = from_arrow_type(t.key_type, False, ids)
        value = from_arrow_type(t.item_type, t.item_field.nullable, ids)
        return MapType("MAP", (), n, key, value)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ArrayType("ARRAY", (), n, from_arrow_type(t.value_type, t.value_field.nullable, ids))
    if is_variant(t):
        return DataType("VARIANT", (), n)
    if pa.types.is_struct(t):
        fields = []
        for child in t:
            fid = ids.take()
            fields.append(DataField(fid, child.name, from_arrow_type(child.type, child.nullable, ids)))
        return RowType("ROW", (), n, tuple(fields))
    raise SchemaError(f"Arrow type {t} has no Paimon mapping")


def fields_from_arrow(schema: pa.Schema) -> tuple[list[DataField], int]:
    """Top-level fields with ids allocated as Paimon does, and the highest field id used."""
    ids = FieldIdAllocator()
    out = []
    for f in schema:
        fid = ids.take()
        # a column COMMENT and DEFAULT (paimon_ds.sql CREATE TABLE)
        comment = (f.metadata or {}).get(b"comment")
        default = (f.metadata or {}).get(DEFAULT_VALUE_METADATA)
        dtype = from_arrow_type(f.type, f.nullable, ids)
        declared = (f.metadata or {}).get(CHAR_TYPE_METADATA)  # CHAR(n) / VARCHAR(n) (paimon_ds.sql CREATE TABLE)
        if declared is not None and dtype.root == "VARCHAR":
            root, length = declared.decode().rstrip(")").split("(")
            dtype = DataType(root, (int(length),), f.nullable)
        out.append(DataField(fid, f.name, dtype, comment.decode() if comment is not None else None,
                             default.decode() if default is not None else None))
    return out, ids.highest


def same_type_ignoring_nullability(a: DataType, b: DataType) -> bool:
    """Whether data of type ``b`` goes into a column of type ``a`` as it is (nullability and nested field ids
    aside): the same type, or another length of a string or binary, another precision of a TIME or of a
    timestamp of the same kind (written in the column's precision: finer digits are truncated, as Paimon's
    writers do; Spark's microseconds reach TIMESTAMP(9) exactly), or a MULTISET's Arrow and Spark form, a map
    of element to INT count."""
    if isinstance(a, MultisetType) and isinstance(b, MapType):
        return same_type_ignoring_nullability(a.element, b.key) and b.value.root == "INT"
    if type(a) is not type(b):
        return False
    if isinstance(a, RowType):
        return len(a.fields) == len(b.fields) and all(  # type: ignore[attr-defined]
            x.name == y.name and same_type_ignoring_nullability(x.type, y.type)
            for x, y in zip(a.fields, b.fields))  # type: ignore[attr-defined]
    if isinstance(a, MapType):
        return same_type_ignoring_nullability(a.key, b.key) and same_type_ignoring_nullability(a.value, b.value)  # type: ignore[attr-defined]
    if isinstance(a, (ArrayType, MultisetType)):
        return same_type_ignoring_nullability(a.element, b.element)  # type: ignore[attr-defined]
    string_like = {"CHAR", "VARCHAR"}
    binary_like = {"BINARY", "VARBINARY"}
    if a.root in string_like and b.root in string_like:
        return True
    if a.root in binary_like and b.root in binary_like:
        return True
    if a.root == b.root and a.root in ("TIME", "TIMESTAMP", "TIMESTAMP_LTZ"):
        return True
    return a.root == b.root and a.params == b.params


# ------------------------------------------------------------------ floating-point values as Paimon compares them
# Paimon's key comparator is Java's Double.compare / Float.compare (GenerateUtils.generateCompare from Paimon 2.0,
# apache/paimon#8295; its predicates' CompareUtils and InternalRowUtils.compare always were): every NaN is one value,
# above +Infinity, and -0.0 is a value of its own, below 0.0. Arrow's equality and sort follow IEEE instead (NaN
# equals nothing, -0.0 equals 0.0), and its hashing compares bits (NaNs of different payloads differ). BinaryRow
# keeps a double's raw bits (MemorySegment.putDouble), so a NaN's payload would decide the bucket and the key bytes:
# keys, partitions and bucket keys hold the canonical NaN (Java's Double.NaN, 0x7ff8000000000000) instead.
_CANONICAL_NAN = {64: np.int64(0x7FF8000000000000), 32: np.int32(0x7FC00000)}


def canonical_nans(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A FLOAT / DOUBLE column with every NaN the canonical one (other columns, or none NaN: unchanged)."""
    if not pa.types.is_floating(arr.type) or arr.null_count == len(arr):
        return arr
    nan = pc.is_nan(arr)
    if not pc.any(nan).as_py():
        return arr
    return pc.if_else(nan, pa.scalar(float("nan"), arr.type), arr)


def canonical_nan_bits(values: np.ndarray) -> np.ndarray:
    """The bits of float32 / float64 values (int32 / int64), every NaN the canonical one."""
    width = values.dtype.itemsize * 8
    bits = values.view(np.int64 if width == 64 else np.int32)
    nan = np.isnan(values)
    return np.where(nan, _CANONICAL_NAN[width], bits) if nan.any() else bits


def total_order(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A FLOAT / DOUBLE column as integers that order and compare equal as Java's Float / Double.compare (nulls
    kept); any other column unchanged. Equal keys are then equal integers, for sorts, run boundaries and joins."""
    if not pa.types.is_floating(arr.type):
        return arr
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    values = arr.fill_null(0).to_numpy(zero_copy_only=False)
    if values.dtype == np.float16:
        values = values.astype(np.float32)
    bits = canonical_nan_bits(values)
    # a negative value's magnitude bits flipped: the signed integers then ascend as the floats do, -0.0 (-1) below
    # 0.0 (0) and the canonical NaN above +Infinity (the radix-sort key of Paimon's SortUtil.putDoubleNormalizedKey)
    shift = bits.dtype.itemsize * 8 - 1
    ordered = bits ^ ((bits >> shift) & np.iinfo(bits.dtype).max)
    return pa.array(ordered, mask=arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None)


def total_order_value(value: Any) -> Any:
    """One value as ``total_order`` ranks it (a float as its ordered integer; anything else as it is), for Python
    comparisons of keys and partition values."""
    if not isinstance(value, float):
        return value
    bits = struct.unpack("<q", struct.pack("<d", value))[0] if value == value else int(_CANONICAL_NAN[64])
    return bits ^ (0x7FFFFFFFFFFFFFFF if bits < 0 else 0)
