"""The read-side cast: a column written under an older type read as the column's type now, each value as
Paimon's cast rule for the pair reads it (the rules in ``casts.rules``, their executors in the other modules)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ..schema.types import ArrayType, DataType, MapType, RowType, conform_array, to_arrow_type
from .from_string import (
    binary_to_binary,
    string_to_binary,
    string_to_boolean,
    string_to_date,
    string_to_decimal,
    string_to_number,
    string_to_time,
    string_to_timestamp,
)
from .numeric import (
    boolean_to_number,
    decimal_to_decimal,
    decimal_to_number,
    number_to_boolean,
    number_to_decimal,
    number_to_number,
)
from .rules import STRING, CastError, castable, resolve
from .temporal import (
    date_to_timestamp,
    local_zone,
    number_to_timestamp,
    time_to_timestamp,
    timestamp_to_date,
    timestamp_to_number,
    timestamp_to_time,
    timestamp_to_timestamp,
)
from .to_string import (
    binary_to_string,
    boolean_to_string,
    date_to_string,
    nested_to_string,
    number_to_string,
    string_to_string,
    time_to_string,
    timestamp_to_string,
)


def cast_column(col: pa.Array | pa.ChunkedArray, src: DataType | None, dst: DataType,
                arrow_dst: pa.DataType | None = None, zone: str | None = None) -> pa.Array:
    """``col`` (values of Paimon type ``src``, None: unknown) read as ``dst``, with Paimon's cast semantics, in
    the Arrow type ``arrow_dst`` (default: ``dst``'s). ``zone``: the local time zone (default: the process's)."""
    arrow_dst = arrow_dst if arrow_dst is not None else to_arrow_type(dst)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if src is None or src.copy(True) == dst.copy(True):
        return conform_array(col, arrow_dst)
    nested = _evolved_nested(col, src, dst, arrow_dst, zone)
    if nested is not None:
        return nested
    rule = resolve(src, dst) if castable(src, dst) else None
    if rule is None:
        raise CastError(f"a column changed from {src.sql()} to {dst.sql()}: Paimon has no cast that reads the "
                        "files written before the change")
    col = conform_array(col, to_arrow_type(src))
    out = _CASTS[rule](col, src, dst, zone or local_zone())
    return conform_array(out, arrow_dst)


def _evolved_nested(col: pa.Array, src: DataType, dst: DataType, arrow_dst: pa.DataType,
                    zone: str | None) -> pa.Array | None:
    """A nested column whose fields evolved (Paimon 1.x: ALTER TABLE on nested fields, or a merge-schema write,
    added, renamed, dropped or widened fields inside a ROW, also under ARRAY / MAP), read by field id: each ROW
    field of ``dst`` from the field of the same id in ``src`` (a renamed field keeps its values, an added one is
    null, a dropped one is gone), leaf values cast as Paimon casts them (SchemaEvolutionUtil / NestedSchemaUtils).
    None: not two types of the same nesting."""
    if type(src) is not type(dst) or not isinstance(src, (RowType, ArrayType, MapType)):
        return None
    col = conform_array(col, to_arrow_type(src))
    if not isinstance(src, RowType) and col.offset:
        col = col.take(pa.array(range(len(col)), pa.int64()))  # a slice's keys / items would not line up
    mask = col.is_null() if col.null_count else None
    if isinstance(src, RowType) and isinstance(dst, RowType):
        children = col.flatten()  # the struct's children, its offset applied
        by_id = {f.id: i for i, f in enumerate(src.fields)}
        arrays = []
        for field, arrow_field in zip(dst.fields, arrow_dst):
            i = by_id.get(field.id)
            arrays.append(pa.nulls(len(col), arrow_field.type) if i is None else
                          cast_column(children[i], src.fields[i].type, field.type, arrow_field.type, zone))
        return pa.StructArray.from_arrays(arrays, fields=list(arrow_dst), mask=mask)
    if isinstance(src, MapType) and isinstance(dst, MapType):
        keys = cast_column(col.keys, src.key, dst.key, arrow_dst.key_type, zone)
        items = cast_column(col.items, src.value, dst.value, arrow_dst.item_type, zone)
        return pa.MapArray.from_arrays(col.offsets, keys, items, type=arrow_dst, mask=mask)
    assert isinstance(src, ArrayType) and isinstance(dst, ArrayType)
    values = cast_column(col.values, src.element, dst.element, arrow_dst.value_type, zone)
    return pa.ListArray.from_arrays(col.offsets, values, type=arrow_dst, mask=mask)


def _nested_to_string(col: pa.Array, src: DataType, dst: DataType, zone: str) -> pa.Array:
    return nested_to_string(col, src, lambda values, t: cast_column(values, t, STRING, pa.string(), zone))


# rule name (``casts.rules``) -> its executor: (values, source type, target type, local time zone) -> values read
_CASTS: dict[str, Callable[[pa.Array, DataType, DataType, str], pa.Array]] = {
    "decimal_to_decimal": decimal_to_decimal, "number_to_decimal": number_to_decimal,
    "decimal_to_number": decimal_to_number, "number_to_number": number_to_number,
    "number_to_timestamp": number_to_timestamp, "boolean_to_number": boolean_to_number,
    "number_to_boolean": number_to_boolean, "number_to_string": number_to_string,
    "boolean_to_string": boolean_to_string, "timestamp_to_string": timestamp_to_string,
    "time_to_string": time_to_string, "date_to_string": date_to_string, "string_to_string": string_to_string,
    "array_to_string": _nested_to_string, "map_to_string": _nested_to_string, "row_to_string": _nested_to_string,
    "string_to_boolean": string_to_boolean, "string_to_decimal": string_to_decimal,
    "string_to_number": string_to_number, "string_to_date": string_to_date, "string_to_time": string_to_time,
    "string_to_timestamp": string_to_timestamp, "string_to_binary": string_to_binary,
    "timestamp_to_timestamp": timestamp_to_timestamp, "timestamp_to_date": timestamp_to_date,
    "timestamp_to_time": timestamp_to_time, "date_to_timestamp": date_to_timestamp,
    "time_to_timestamp": time_to_timestamp, "timestamp_to_number": timestamp_to_number,
    "binary_to_binary": binary_to_binary, "binary_to_string": binary_to_string,
}
