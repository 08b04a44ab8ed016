"""Merge engines: how the rows of one primary key become one row, as Paimon's MergeFunction does.

Here an engine works on a whole key-sorted table at once (rows of a key ordered by sequence number),
using the start index of each key group, instead of record by record. This module holds the base and
the two engines that keep one whole row (deduplicate, first-row); partial_update.py and aggregation.py
hold the others, merge.py picks one for a table and merges sorted runs with it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..options import OptionError, Options
from ..schema import TableSchema
from .kv import DELETE, KIND, UPDATE_BEFORE, KeyValueLayout, group_starts


def retract_mask(kv: pa.Table) -> np.ndarray:
    kinds = kv.column(KIND).to_numpy()
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def filter_rows(kv: pa.Table, keep: np.ndarray) -> pa.Table:
    return kv if keep.all() else kv.filter(pa.array(keep))


def group_ends(starts: np.ndarray, n: int) -> np.ndarray:
    return np.append(starts[1:], n) - 1


class MergeEngine:
    """Base: options shared by every engine."""

    def __init__(self, schema: TableSchema, options: Options) -> None:
        self.schema = schema
        self.layout = KeyValueLayout(schema)
        self.key_columns = self.layout.key_columns
        self.ignore_delete = options.get("ignore-delete")

    def check_input(self, kinds: np.ndarray) -> None:
        """Refuse input row kinds the engine cannot take (Paimon fails the same way)."""

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
    def check_input(self, kinds: np.ndarray) -> None:
        if not self.ignore_delete and ((kinds == UPDATE_BEFORE) | (kinds == DELETE)).any():
            raise OptionError("the first-row merge engine cannot take DELETE/UPDATE_BEFORE rows; "
                              "set 'ignore-delete' = 'true' to ignore them")

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        kv = self.drop_retracts(kv)
        if kv.num_rows == 0:
            return kv
        starts = group_starts(kv, self.key_columns)
        return kv if len(starts) == kv.num_rows else kv.take(pa.array(starts))


