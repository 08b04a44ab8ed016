"""Arrow column rewrites shared by the per-format readers and writers (parquet_file, orc_file, avro_file).

Formats hold some Paimon types in plainer Arrow types than the ones paimon_ds hands out: a parquet file with
TIMESTAMP(7..9) keeps its other timestamps as plain INT64, an ORC file keeps TIME as an INT of milliseconds.
Writers rewrite the leaves of (possibly nested) columns into those forms (`map_leaf_types`, `cast_leaves`);
readers turn them back into the Paimon type's Arrow form (`holds_plain_ints`, `paimon_form`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

Column = pa.ChunkedArray | pa.Array


def empty_batch(num_rows: int) -> pa.RecordBatch:
    """A batch of ``num_rows`` rows and no columns (reads that only count rows)."""
    return pa.RecordBatch.from_struct_array(
        pa.StructArray.from_arrays([], fields=[], mask=pa.nulls(num_rows, pa.bool_()).is_null()))


def _compact(arr: pa.Array) -> pa.Array:
    """A list or map array whose children start at element 0 (``from_arrays`` takes the offsets as they are)."""
    return arr.take(pa.array(range(len(arr)), pa.int64())) if arr.offset else arr


# ---------------------------------------------------------------------------------- reading: Paimon's forms

def holds_plain_ints(t: pa.DataType, paimon: Any) -> bool:
    """Whether an Arrow type holds plain integers where the Paimon type has TIMESTAMP or TIME (nested too)."""
    root = getattr(paimon, "root", None)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME"):
        return pa.types.is_integer(t)
    return any(holds_plain_ints(ct, cp) for ct, cp in _child_pairs(t, paimon))


def _child_pairs(t: pa.DataType, paimon: Any) -> list[tuple[pa.DataType, Any]]:
    """(Arrow child type, Paimon child type) of a nested type, the Arrow children the file has."""
    if pa.types.is_struct(t) and hasattr(paimon, "fields"):
        return [(t.field(i).type, f.type) for i, f in enumerate(paimon.fields[:t.num_fields])]
    if pa.types.is_map(t) and hasattr(paimon, "key"):
        return [(t.key_type, paimon.key), (t.item_type, paimon.value)]
    if pa.types.is_map(t) and getattr(paimon, "root", None) == "MULTISET":
        return [(t.key_type, paimon.element)]
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and getattr(paimon, "element", None) is not None:
        return [(t.value_type, paimon.element)]
    return []


def paimon_form(arr: pa.Array, paimon: Any) -> pa.Array:
    """Plain integers where the Paimon type has TIMESTAMP / TIME, as Paimon's readers take them: a timestamp's
    INT64 is millis up to precision 3, else micros; a TIME's INT is millis (ORC files hold TIME so)."""
    root = getattr(paimon, "root", None)
    t = arr.type
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ") and pa.types.is_integer(t):
        unit = "ms" if paimon.precision <= 3 else "us"
        return arr.cast(pa.int64()).cast(pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None))
    if root == "TIME" and pa.types.is_integer(t):
        return arr.cast(pa.int32()).cast(pa.time32("ms"))
    pairs = _child_pairs(t, paimon)
    if not pairs or not any(holds_plain_ints(ct, cp) for ct, cp in pairs):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(t):
        children = [paimon_form(arr.field(i), cp) for i, (_, cp) in enumerate(pairs)]
        children += [arr.field(i) for i in range(len(pairs), t.num_fields)]
        return pa.StructArray.from_arrays(children, names=[f.name for f in t], mask=mask)
    arr = _compact(arr)
    if pa.types.is_map(t):
        items = paimon_form(arr.items, pairs[1][1]) if len(pairs) > 1 else arr.items
        return pa.MapArray.from_arrays(arr.offsets, paimon_form(arr.keys, pairs[0][1]), items, mask=mask)
    return type(arr).from_arrays(arr.offsets, paimon_form(arr.values, pairs[0][1]), mask=mask)


# ---------------------------------------------------------------------------------- writing: the files' forms

def map_leaf_types(t: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with each leaf type replaced by ``leaf(type)``, nested types kept."""
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(map_leaf_types(f.type, leaf)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(map_leaf_types(t.key_type, leaf)),
                       t.item_field.with_type(map_leaf_types(t.item_type, leaf)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(map_leaf_types(t.value_type, leaf)))
    return leaf(t)


def cast_leaves(col: Column, target: pa.DataType, cast: Callable[[pa.Array, pa.DataType], pa.Array]) -> Column:
    """``col`` in ``target`` (from `map_leaf_types`): leaves whose type changes go through ``cast(array, type)``."""
    if col.type == target:
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([cast_leaves(c, target, cast) for c in col.chunks], target)
    t = col.type
    mask = col.is_null() if col.null_count else None
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([cast_leaves(col.field(i), target.field(i).type, cast)
                                           for i in range(t.num_fields)], fields=list(target), mask=mask)
    if pa.types.is_map(t) or pa.types.is_list(t):
        col = _compact(col)
        if pa.types.is_map(t):
            return pa.MapArray.from_arrays(col.offsets, cast_leaves(col.keys, target.key_type, cast),
                                           cast_leaves(col.items, target.item_type, cast), type=target, mask=mask)
        return pa.ListArray.from_arrays(col.offsets, cast_leaves(col.values, target.value_type, cast), type=target,
                                        mask=mask)
    return cast(col, target)
