"""The partial-update merge engine: each column keeps the last non-null value written for the key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..options import OptionError, Options
from ..schema import TableSchema
from .engine import MergeEngine, filter_rows, group_ends
from .kv import DELETE, INSERT, KIND, SEQ, UPDATE_BEFORE, group_starts


class PartialUpdate(MergeEngine):
    def __init__(self, schema: TableSchema, options: Options) -> None:
        super().__init__(schema, options)
        self.remove_on_delete = options.get("partial-update.remove-record-on-delete")
        if any(k.startswith("fields.") and k.endswith(".sequence-group") for k in options.raw):
            raise OptionError("partial-update sequence groups ('fields.<f>.sequence-group') are not supported "
                              "by paimon_ds yet")

    def check_input(self, kinds: np.ndarray) -> None:
        retract = (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.ignore_delete or self.remove_on_delete or not retract.any():
            return  # with remove-record-on-delete, Paimon takes DELETE rows and ignores UPDATE_BEFORE ones
        raise OptionError("the partial-update merge engine cannot take delete rows; set 'ignore-delete' or "
                          "'partial-update.remove-record-on-delete' = 'true'")

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        kinds = kv.column(KIND).to_numpy()
        # UPDATE_BEFORE rows change nothing (remove-record-on-delete, too, ignores them, as Paimon does)
        kv = self.drop_retracts(kv) if self.ignore_delete else filter_rows(kv, kinds != UPDATE_BEFORE)
        kinds = kv.column(KIND).to_numpy()
        if kv.num_rows == 0:
            return kv
        n = kv.num_rows
        starts = group_starts(kv, self.key_columns)
        group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
        is_delete = kinds == DELETE
        ends = group_ends(starts, n)
        if is_delete.any():
            # A DELETE wipes what came before it: keep only rows after each group's last DELETE.
            pos = np.where(is_delete, np.arange(n), -1)
            last_delete = np.maximum.reduceat(pos, starts)[group]
            keep = np.arange(n) > last_delete
            # a group whose last row is a DELETE becomes that DELETE row
            ends_in_delete = is_delete[ends]
        else:
            keep = np.ones(n, dtype=bool)
            ends_in_delete = np.zeros(len(starts), dtype=bool)
        idx = np.arange(n)
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            col = kv.column(i)
            if name in self.key_columns or name == SEQ:
                out_cols.append(col.take(pa.array(ends)))
                continue
            if name == KIND:
                out_cols.append(pa.array(np.where(ends_in_delete, DELETE, INSERT).astype(np.int8)))
                continue
            valid = keep & col.is_valid().to_numpy(zero_copy_only=False)
            last_valid = np.maximum.reduceat(np.where(valid, idx, -1), starts)
            pick = np.where(ends_in_delete, ends, last_valid)
            out_cols.append(col.take(pa.array(pick, mask=pick < 0)))
        out = pa.Table.from_arrays(out_cols, schema=kv.schema)
        return self.drop_retracts(out) if drop_retract else out
