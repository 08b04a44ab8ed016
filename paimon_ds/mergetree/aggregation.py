"""The aggregation merge engine (Paimon's AggregateMergeFunction): each value column folds the rows of a key with
its aggregate function (aggregators.py); -U / -D rows retract (`fields.<f>.ignore-retract`: ignored).

Primary-key columns take the last row's value; a `sequence.field` column is last_value (Paimon 1.x; 0.9 gave it the
default function); other columns `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, else
last_non_null_value. The result is an INSERT row, even of retractions only. With
`aggregation.remove-record-on-delete` (Paimon 1.x) a -D row empties the row instead: the rows after it rebuild it
from nothing, and a key whose last row is a -D becomes that DELETE row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options.registry import OptionError, Options
from ..schema.manager import TableSchema
from .aggregators import (
    AGG,
    RETRACT,
    SKIP,
    Aggregator,
    LastValue,
    Plan,
    PrimaryKey,
    create_aggregator,
    field_option,
    run_plans,
)
from .engine import MergeEngine, column_array, group_ends, retract_mask
from .kv import DELETE, INSERT, KIND, UPDATE_BEFORE, group_starts


class Aggregation(MergeEngine):
    def __init__(self, schema: TableSchema, options: Options) -> None:
        super().__init__(schema, options)
        raw = options.raw
        default = options.get("fields.default-aggregate-function") or "last_non_null_value"
        self.remove_on_delete = options.get("aggregation.remove-record-on-delete")
        lower = {f.name.lower(): f.name for f in schema.fields}
        for key in raw:
            if key.startswith("fields.") and key.count(".") >= 2:
                name = key[len("fields."):key.rindex(".")]
                if name != "default-aggregate-function" and "," not in name and name.lower() not in lower:
                    raise OptionError(f"option {key!r} names column {name!r}, which is not in the table")
        sequence = self.layout.sequence_fields
        self.aggregators: dict[str, Aggregator] = {}
        self.ignore_retract: dict[str, bool] = {}
        for f in schema.fields:
            explicit = field_option(options, f.name, "aggregate-function")
            if f.name in sequence and explicit is not None:
                raise OptionError(f"Should not define aggregation on sequence field: '{f.name}'.")
            if f.name in schema.primary_keys:
                agg: Aggregator = PrimaryKey(f, options)
            elif f.name in sequence:
                agg = LastValue(f, options)
            else:
                agg = create_aggregator(explicit or default, f, options)
            self.aggregators[f.name] = agg
            self.ignore_retract[f.name] = field_option(options, f.name, "ignore-retract")
            if self.remove_on_delete and self.ignore_retract[f.name]:
                raise OptionError(f"aggregation.remove-record-on-delete and fields.{f.name}.ignore-retract have "
                                  "conflicting behavior so should not be enabled at the same time.")
        self.single_identity = all(a.single_identity for a in self.aggregators.values())

    def strict_problems(self) -> list[str]:
        return [f"Data type for list agg column must be STRING (unbounded VARCHAR) (column {n!r})"
                for n, a in self.aggregators.items()
                if a.name == "listagg" and self.schema.field(n).type.params != (2147483647,)]

    def check_input(self, kinds: np.ndarray, rows: pa.Table | pa.RecordBatch | None = None) -> None:
        retracting = (kinds == UPDATE_BEFORE) if self.remove_on_delete else (kinds == UPDATE_BEFORE) | (kinds == DELETE)
        if self.ignore_delete or not retracting.any():
            return
        bad = [n for n, a in self.aggregators.items() if not a.retractable and not self.ignore_retract[n]]
        if bad:
            raise OptionError(f"aggregate functions of column(s) {bad} cannot retract DELETE/UPDATE_BEFORE rows; "
                              "set 'ignore-delete' or 'fields.<f>.ignore-retract' = 'true'")

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        # no ignore-delete here: Paimon drops those rows before the writer (input_filter), and its
        # AggregateMergeFunction retracts whatever retraction a file holds
        if kv.num_rows == 0:
            return kv
        kv = kv.combine_chunks()
        n = kv.num_rows
        starts = group_starts(kv, self.key_columns)
        ends = group_ends(starts, n)
        kinds = kv.column(KIND).to_numpy()
        retract = retract_mask(kv)
        if len(starts) == n and self.single_identity and not retract.any():
            # one added row per key: nothing to aggregate (the row becomes an INSERT, as Paimon's result is)
            if not kinds.any():
                return kv
            k = kv.schema.get_field_index(KIND)
            return kv.set_column(k, kv.schema.field(k), pa.array(np.zeros(n, dtype=np.int8)))
        ops = np.where(retract, RETRACT, AGG).astype(np.int8)
        ends_in_delete = None
        if self.remove_on_delete:
            removed = kinds == DELETE
            if removed.any():
                last = np.maximum.reduceat(np.where(removed, np.arange(n), -1), starts)
                group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
                ops[np.arange(n) <= last[group]] = SKIP
                ends_in_delete = removed[ends]
        # the functions that are pyarrow hash aggregates run in one group_by
        results: dict[str, pa.Array] = {}
        plans: dict[str, Plan] = {}
        for name, agg in self.aggregators.items():
            col_ops = np.where(ops == RETRACT, SKIP, ops).astype(np.int8) if self.ignore_retract[name] else ops
            values = column_array(kv, name)
            plan = agg.plan(values, col_ops, starts)
            if plan is None:
                results[name] = agg.fold(values, col_ops, starts)
            else:
                plans[name] = plan
        results.update(zip(plans, run_plans(list(plans.values()), starts, n)))
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            if name in results:
                res = results[name]
                if ends_in_delete is not None and ends_in_delete.any():
                    res = pc.if_else(pa.array(ends_in_delete), kv.column(i).take(pa.array(ends)), res)
                field = kv.schema.field(i)
                out_cols.append(res if res.type == field.type else res.cast(field.type))
            elif name == KIND:
                kind = np.full(len(starts), INSERT, dtype=np.int8)
                if ends_in_delete is not None:
                    kind[ends_in_delete] = DELETE
                out_cols.append(pa.array(kind))
            else:  # key columns and sequence number: those of the group's last row
                out_cols.append(kv.column(i).take(pa.array(ends)))
        out = pa.Table.from_arrays(out_cols, schema=kv.schema)
        return self.drop_retracts(out) if drop_retract and ends_in_delete is not None else out
