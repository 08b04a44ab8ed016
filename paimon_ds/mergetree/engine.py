"""Merge engines: how the rows of one primary key become one row, as Paimon's MergeFunction does.

Here an engine works on a whole key-sorted table at once (rows of a key ordered by sequence number),
using the start index of each key group, instead of record by record. This module holds the base and
the two engines that keep one whole row (deduplicate, first-row); partial_update.py and aggregation.py
hold the others, merge.py picks one for a table and merges sorted runs with it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..options.registry import OptionError, Options
from ..schema.manager import TableSchema
from .kv import DELETE, KIND, UPDATE_BEFORE, KeyValueLayout, group_starts


def retract_mask(kv: pa.Table) -> np.ndarray:
    kinds = kv.column(KIND).to_numpy()
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def column_array(kv: pa.Table, name: str | int) -> pa.Array:
    """A column of ``kv`` as one Array."""
    col = kv.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def filter_rows(kv: pa.Table, keep: np.ndarray) -> pa.Table:
    return kv if keep.all() else kv.filter(pa.array(keep))


def row_kind_filter(kinds: np.ndarray, ignore_delete: bool, ignore_update_before: bool) -> np.ndarray | None:
    """The input rows a writer keeps (None: all): Paimon 1.x's RowKindFilter drops -U and -D rows with
    `ignore-delete` and -U rows with `ignore-update-before` before they reach any writer (primary-key tables
    of every engine, and append tables)."""
    if ignore_delete:
        drop = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
    elif ignore_update_before:
        drop = kinds == UPDATE_BEFORE
    else:
        return None
    return ~drop if drop.any() else None


def group_ends(starts: np.ndarray, n: int) -> np.ndarray:
    return np.append(starts[1:], n) - 1


class MergeEngine:
    """Base: options shared by every engine."""

    def __init__(self, schema: TableSchema, options: Options) -> None:
        self.schema = schema
        self.layout = KeyValueLayout(schema)
        self.key_columns = self.layout.key_columns
        self.ignore_delete = options.get("ignore-delete")
        self.ignore_update_before = options.get("ignore-update-before")
        self.layout.sequence_order  # noqa: B018 - an invalid sequence.field.sort-order is refused here

    def input_filter(self, kinds: np.ndarray) -> np.ndarray | None:
        """The input rows a writer keeps (None: all), see row_kind_filter."""
        return row_kind_filter(kinds, self.ignore_delete, self.ignore_update_before)

    def check_input(self, kinds: np.ndarray, rows: pa.Table | pa.RecordBatch | None = None) -> None:
        """Refuse input row kinds the engine cannot take (Paimon fails the same way), before anything is written."""

    def strict_problems(self) -> list[str]:
        """Configurations Paimon 1.x refuses at table creation that older tables (read here) may carry."""
        return []

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        """One row per key from a key- and sequence-sorted table; without retract rows if asked."""
        raise NotImplementedError

    @staticmethod
    def drop_retracts(kv: pa.Table) -> pa.Table:
        return filter_rows(kv, ~retract_mask(kv))


class Deduplicate(MergeEngine):
    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        if self.ignore_delete:
            kv = self.drop_retracts(kv)
        if kv.num_rows == 0:
            return kv
        starts = group_starts(kv, self.key_columns)
        if len(starts) < kv.num_rows:
            kv = kv.take(pa.array(group_ends(starts, kv.num_rows)))
        return self.drop_retracts(kv) if drop_retract else kv


class FirstRow(MergeEngine):
    def check_input(self, kinds: np.ndarray, rows: pa.Table | pa.RecordBatch | None = None) -> None:
        if not self.ignore_delete and ((kinds == UPDATE_BEFORE) | (kinds == DELETE)).any():
            raise OptionError("the first-row merge engine cannot take DELETE/UPDATE_BEFORE rows; "
                              "set 'ignore-delete' = 'true' to ignore them")

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        kv = self.drop_retracts(kv)
        if kv.num_rows == 0:
            return kv
        starts = group_starts(kv, self.key_columns)
        return kv if len(starts) == kv.num_rows else kv.take(pa.array(starts))


