"""The key-value file layout of primary-key tables.

A data file of a primary-key table holds `_KEY_<k>` for each trimmed primary-key field (the primary
key minus partition keys), `_SEQUENCE_NUMBER`, `_VALUE_KIND` (0 +I, 1 -U, 2 +U, 3 -D) and then
every column of the row. Files are sorted by key, then sequence number.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options.registry import Options
from ..schema.manager import TableSchema
from ..schema.types import DataField, SchemaError, to_arrow_field, total_order, total_order_value

SEQ = "_SEQUENCE_NUMBER"
KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


@dataclass(frozen=True)
class KeyValueLayout:
    schema: TableSchema

    @property
    def key_fields(self) -> list[DataField]:
        trimmed = [k for k in self.schema.primary_keys if k not in self.schema.partition_keys]
        if not trimmed:
            raise SchemaError("the primary key must have a column besides the partition keys")
        return [self.schema.field(k) for k in trimmed]

    @property
    def key_names(self) -> list[str]:
        return [f.name for f in self.key_fields]

    @property
    def key_columns(self) -> list[str]:
        return [KEY_PREFIX + n for n in self.key_names]

    @property
    def sequence_fields(self) -> list[str]:
        """User columns that order rows of one key before the sequence number (`sequence.field`)."""
        names = Options(self.schema.options).get("sequence.field") or []
        for n in names:
            self.schema.field(n)  # raises naming the column if it does not exist
        return names

    @property
    def sequence_order(self) -> str:
        """`sequence.field.sort-order`: ascending (the greatest sequence.field wins) or descending (the smallest)."""
        return Options(self.schema.options).get("sequence.field.sort-order")

    def arrow_schema(self) -> pa.Schema:
        return self.kv_schema

    @cached_property
    def kv_schema(self) -> pa.Schema:
        """The files' Arrow schema (built once: every buffered batch is put in it)."""
        keys = [pa.field(KEY_PREFIX + f.name, to_arrow_field(f.name, f.type).type, nullable=False)
                for f in self.key_fields]
        meta = [pa.field(SEQ, pa.int64(), nullable=False), pa.field(KIND, pa.int8(), nullable=False)]
        return pa.schema(keys + meta + list(self.schema.arrow_schema()))

    def to_kv(self, rows: pa.Table | pa.RecordBatch, seq: np.ndarray, kinds: np.ndarray) -> pa.Table:
        """Rows in table order -> the key-value layout (keys first, then sequence, kind, row)."""
        names = rows.schema.names
        arrays = [rows.column(names.index(n)) for n in self.key_names]
        arrays += [pa.array(seq, pa.int64()), pa.array(kinds, pa.int8())]
        arrays += list(rows.columns)
        return pa.Table.from_arrays(arrays, schema=self.arrow_schema())

    def sort(self, kv: pa.Table, in_sequence_order: bool = False) -> pa.Table:
        """Order by key, then sequence number.

        ``in_sequence_order``: the rows already ascend by sequence number (a write buffer), so a
        stable sort by key alone keeps them in sequence order within each key.
        """
        if kv.num_rows <= 1:
            return kv
        # a null sequence.field sorts first in either order (Paimon's comparator: nulls first, descending
        # negates only the comparison of two values)
        order = self.sequence_order
        keys = [(c, "ascending") for c in self.key_columns] + [(c, order) for c in self.sequence_fields]
        if in_sequence_order and len(keys) == 1:
            col = total_order(kv.column(keys[0][0]))
            if pa.types.is_integer(col.type) or pa.types.is_date(col.type):
                # numpy's stable sort of integers is a radix sort: much faster than a comparison sort
                values = col.combine_chunks().cast(pa.int64()) if not pa.types.is_int64(col.type) else col
                return kv.take(pa.array(stable_argsort(values.to_numpy())))
        if not in_sequence_order:
            keys.append((SEQ, "ascending"))
        return kv.take(sort_indices(comparable(kv, [c for c, _ in keys]), keys))

    def key_tuple(self, kv: pa.Table, i: int) -> tuple:
        """Row ``i``'s key as Python values that compare as Paimon's key comparator (see types.total_order)."""
        return tuple(total_order_value(kv.column(c)[i].as_py()) for c in self.key_columns)


SPLIT_BITS = 8
MIN_SPLIT_ROWS = 1 << 16


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """np.argsort(values, kind="stable") of int64 values, faster on large arrays.

    numpy's stable sort of integers is an LSD radix sort, whose passes over a large array miss the cache.
    So the values are first split by their top byte within [min, max] (a radix pass on one byte), and each
    of the up to 256 groups, small enough for the cache, is sorted on its own: 1.3x faster on 1.25M keys
    spread over their range (random or sequential); keys bunched in one group are sorted as numpy does. Both
    passes are stable, so equal values keep their order.
    """
    n = len(values)
    if n < MIN_SPLIT_ROWS:
        return np.argsort(values, kind="stable")
    lo, hi = int(values.min()), int(values.max())
    if lo == hi:
        return np.arange(n, dtype=np.int64)
    # offsets from the minimum: unsigned, wrapping subtraction is exact as hi - lo < 2**64
    offsets = values.view(np.uint64) - np.uint64(lo & 0xFFFFFFFFFFFFFFFF)
    shift = max(0, (hi - lo).bit_length() - SPLIT_BITS)
    top = (offsets >> np.uint64(shift)).astype(np.uint8)
    counts = np.bincount(top, minlength=1 << SPLIT_BITS)
    if counts.max() > 0.9 * n:  # bunched in one group (outliers stretch the range): the split gains nothing
        return np.argsort(values, kind="stable")
    first = np.argsort(top, kind="stable")
    grouped = offsets[first]
    order = np.empty(n, dtype=np.int64)
    start = 0
    for count in counts[counts > 0].tolist():
        end = start + count
        order[start:end] = first[start:end][np.argsort(grouped[start:end], kind="stable")]
        start = end
    return order


def sort_indices(table: pa.Table, keys: list[tuple[str, str]]) -> pa.Array:
    """Sort indices with nulls first (a null sequence.field sorts before any value, as in Paimon)."""
    try:  # pyarrow >= 25 takes the null placement per key
        return pc.sort_indices(table, sort_keys=[(c, o, "at_start") for c, o in keys])
    except (TypeError, ValueError):
        return pc.sort_indices(table, sort_keys=keys, null_placement="at_start")


def comparable(table: pa.Table, columns: list[str]) -> pa.Table:
    """``table`` with its FLOAT / DOUBLE ``columns`` replaced by integers that sort and compare as Paimon's
    comparator (types.total_order: one NaN above +Infinity, -0.0 below 0.0); the same table when there are none."""
    floating = [c for c in columns if pa.types.is_floating(table.schema.field(c).type)]
    for c in floating:
        table = table.set_column(table.schema.get_field_index(c), c, total_order(table.column(c)))
    return table


def group_starts(kv: pa.Table, key_columns: list[str]) -> np.ndarray:
    """Start index of each run of equal keys in a key-sorted table (int64, first is 0); keys are equal as Paimon's
    comparator says (every NaN one key, -0.0 and 0.0 two)."""
    n = kv.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for c in key_columns:
        col = total_order(kv.column(c))
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if n > 1:
            diff = pc.not_equal(col.slice(1), col.slice(0, n - 1))
            change[1:] |= diff.to_numpy(zero_copy_only=False)
    return np.flatnonzero(change)


def dense_rank(table: pa.Table) -> np.ndarray:
    """Dense rank (from 0) of each row of ``table`` in the ascending order of its columns, field by field with
    nulls first (Paimon's RecordComparator for sequence fields)."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = sort_indices(table, [(c, "ascending") for c in table.column_names])
    ordered = table.take(order)
    change = np.zeros(n, dtype=bool)
    for col in ordered.columns:
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if n > 1:
            a, b = col.slice(1), col.slice(0, n - 1)
            differ = pc.fill_null(pc.not_equal(a, b), False).to_numpy(zero_copy_only=False)
            differ |= a.is_valid().to_numpy(zero_copy_only=False) != b.is_valid().to_numpy(zero_copy_only=False)
            change[1:] |= differ
    ranks = np.empty(n, dtype=np.int64)
    ranks[order.to_numpy()] = np.cumsum(change)
    return ranks
