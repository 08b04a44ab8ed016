"""The aggregation merge engine: each value column folds the rows of a key with its aggregate function."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options import OptionError, Options
from ..schema import TableSchema
from .engine import MergeEngine, group_ends, retract_mask
from .kv import DELETE, INSERT, KIND, UPDATE_BEFORE, group_starts
from .sketches import SKETCH_FUNCTIONS, union_groups

AGGREGATES = ("sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
              "first_non_null_value", "bool_and", "bool_or", "listagg", *SKETCH_FUNCTIONS, "primary-key")


# (pyarrow hash aggregate, options) for each Paimon aggregate function
_HASH_AGG: dict[str, tuple[str, Any]] = {
    "sum": ("sum", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "product": ("product", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "min": ("min", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "max": ("max", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "last_value": ("last", pc.ScalarAggregateOptions(skip_nulls=False, min_count=0)),
    "last_non_null_value": ("last", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "first_value": ("first", pc.ScalarAggregateOptions(skip_nulls=False, min_count=0)),
    "first_non_null_value": ("first", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "bool_and": ("all", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "bool_or": ("any", pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)),
    "listagg": ("list", None),
    "primary-key": ("last", pc.ScalarAggregateOptions(skip_nulls=False, min_count=0)),
}
_RETRACTABLE = {"sum"}


class Aggregation(MergeEngine):
    def __init__(self, schema: TableSchema, options: Options) -> None:
        super().__init__(schema, options)
        raw = options.raw
        default = options.get("fields.default-aggregate-function") or "last_non_null_value"
        self.functions: dict[str, str] = {}
        self.ignore_retract: dict[str, bool] = {}
        self.delimiters: dict[str, str] = {}
        self.distinct: dict[str, bool] = {}
        lower = {f.name.lower(): f.name for f in schema.fields}
        for key in raw:
            if key.startswith("fields.") and key.count(".") >= 2:
                name = key[len("fields."):key.rindex(".")]
                if name != "default-aggregate-function" and name.lower() not in lower:
                    raise OptionError(f"option {key!r} names column {name!r}, which is not in the table")
        for f in schema.fields:
            def opt(suffix: str, _f: str = f.name) -> Any:
                given = [k for k in (f"fields.{_f}.{suffix}", f"fields.{_f.lower()}.{suffix}") if k in raw]
                return options.get(given[0] if given else f"fields.{_f}.{suffix}")
            fn = "primary-key" if f.name in schema.primary_keys else opt("aggregate-function") or default
            if fn == "count":
                raise OptionError("'count' is not an aggregate function of Paimon's aggregation engine "
                                  "(use sum over a column of 1s)")
            if fn not in AGGREGATES:
                raise OptionError(f"unknown aggregate function {fn!r} for column {f.name!r}; "
                                  f"supported: {', '.join(a for a in AGGREGATES if a != 'primary-key')}")
            if fn in SKETCH_FUNCTIONS and f.type.root != "VARBINARY":  # Java: checkArgument(VarBinaryType)
                raise OptionError(f"aggregate function {fn!r} of column {f.name!r} needs a VARBINARY (BYTES) "
                                  f"column, not {f.type.sql()}")
            self.functions[f.name] = fn
            self.ignore_retract[f.name] = opt("ignore-retract")
            self.delimiters[f.name] = opt("list-agg-delimiter") or ","
            self.distinct[f.name] = opt("distinct")

    def check_input(self, kinds: np.ndarray) -> None:
        if self.ignore_delete or not ((kinds == UPDATE_BEFORE) | (kinds == DELETE)).any():
            return
        bad = [n for n, fn in self.functions.items()
               if fn not in _RETRACTABLE and fn != "primary-key" and not self.ignore_retract[n]]
        if bad:
            raise OptionError(f"aggregate functions of column(s) {bad} cannot retract DELETE/UPDATE_BEFORE rows; "
                              "set 'ignore-delete' or 'fields.<f>.ignore-retract' = 'true'")

    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        if self.ignore_delete:
            kv = self.drop_retracts(kv)
        if kv.num_rows == 0:
            return kv
        n = kv.num_rows
        starts = group_starts(kv, self.key_columns)
        ends = group_ends(starts, n)
        if len(starts) == n and not retract_mask(kv).any():
            return kv  # one row per key: nothing to aggregate
        retract = retract_mask(kv)
        group = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n)))
        work: dict[str, Any] = {"__g": pa.array(group)}
        aggs = []
        sketched: dict[str, pa.Array] = {}
        for name, fn in self.functions.items():
            col = kv.column(name)
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            if retract.any():
                if fn == "sum":
                    col = pc.if_else(pa.array(retract), pc.negate(col), col)
                elif self.ignore_retract[name] or fn == "primary-key":
                    col = pc.if_else(pa.array(retract), pa.nulls(n, col.type), col) if fn != "primary-key" else col
            if fn in SKETCH_FUNCTIONS:  # a union per key, not a pyarrow hash aggregate
                sketched[name] = union_groups(fn, col, starts)
                continue
            work[name] = col
            hash_fn, options = _HASH_AGG[fn]
            aggs.append((name, hash_fn, options) if options is not None else (name, hash_fn))
        grouped = pa.table(work).group_by("__g", use_threads=False).aggregate(aggs)
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            field = kv.schema.field(i)
            if name in sketched:
                out_cols.append(sketched[name].cast(field.type))
            elif name in self.functions:
                fn = self.functions[name]
                hash_fn = _HASH_AGG[fn][0]
                res = grouped.column(f"{name}_{hash_fn}")
                if fn == "listagg":
                    res = self._listagg(res, name)
                out_cols.append(res.cast(field.type))
            elif name == KIND:
                out_cols.append(pa.array(np.full(len(starts), INSERT, dtype=np.int8)))
            else:  # key columns and sequence number: those of the group's last row
                out_cols.append(kv.column(i).take(pa.array(ends)))
        return pa.Table.from_arrays(out_cols, schema=kv.schema)

    def _listagg(self, lists: pa.ChunkedArray, name: str) -> pa.Array:
        delim = self.delimiters[name]
        out = []
        for values in lists.to_pylist():  # one Python join per key, only for listagg columns
            vals = [v for v in values if v is not None and v != ""]
            if self.distinct[name]:
                seen: list[str] = []
                for piece in (p for v in vals for p in v.split(delim)):
                    if piece not in seen:
                        seen.append(piece)
                vals = seen
            out.append(delim.join(vals) if vals else None)
        return pa.array(out, pa.string())
