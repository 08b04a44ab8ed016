"""Merge engines and the k-way merge of sorted runs, vectorised over Arrow tables.

A merge engine turns the rows of one key (sorted by sequence number) into one row, as Paimon's
MergeFunction does record by record; here it runs on a whole key-sorted table at once, using the
start index of each key group.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options import OptionError, Options
from ..schema import TableSchema
from .kv import DELETE, INSERT, KIND, SEQ, UPDATE_BEFORE, KeyValueLayout, group_starts

AGGREGATES = ("sum", "product", "min", "max", "last_value", "last_non_null_value", "first_value",
              "first_non_null_value", "bool_and", "bool_or", "listagg", "primary-key")


def _retract_mask(kv: pa.Table) -> np.ndarray:
    kinds = kv.column(KIND).to_numpy()
    return (kinds == UPDATE_BEFORE) | (kinds == DELETE)


def _filter(kv: pa.Table, keep: np.ndarray) -> pa.Table:
    return kv if keep.all() else kv.filter(pa.array(keep))


def _group_ends(starts: np.ndarray, n: int) -> np.ndarray:
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
        return _filter(kv, ~_retract_mask(kv))


class Deduplicate(MergeEngine):
    def merge(self, kv: pa.Table, drop_retract: bool) -> pa.Table:
        if self.ignore_delete:
            kv = self.drop_retracts(kv)
        if kv.num_rows == 0:
            return kv
        starts = group_starts(kv, self.key_columns)
        if len(starts) < kv.num_rows:
            kv = kv.take(pa.array(_group_ends(starts, kv.num_rows)))
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
        kv = self.drop_retracts(kv) if self.ignore_delete else _filter(kv, kinds != UPDATE_BEFORE)
        kinds = kv.column(KIND).to_numpy()
        if kv.num_rows == 0:
            return kv
        n = kv.num_rows
        starts = group_starts(kv, self.key_columns)
        group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
        is_delete = kinds == DELETE
        ends = _group_ends(starts, n)
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
        ends = _group_ends(starts, n)
        if len(starts) == n and not _retract_mask(kv).any():
            return kv  # one row per key: nothing to aggregate
        retract = _retract_mask(kv)
        group = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(np.append(starts, n)))
        work: dict[str, Any] = {"__g": pa.array(group)}
        aggs = []
        for name, fn in self.functions.items():
            col = kv.column(name)
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            if retract.any():
                if fn == "sum":
                    col = pc.if_else(pa.array(retract), pc.negate(col), col)
                elif self.ignore_retract[name] or fn == "primary-key":
                    col = pc.if_else(pa.array(retract), pa.nulls(n, col.type), col) if fn != "primary-key" else col
            work[name] = col
            hash_fn, options = _HASH_AGG[fn]
            aggs.append((name, hash_fn, options) if options is not None else (name, hash_fn))
        grouped = pa.table(work).group_by("__g", use_threads=False).aggregate(aggs)
        out_cols = []
        for i, name in enumerate(kv.schema.names):
            field = kv.schema.field(i)
            if name in self.functions:
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


def merge_engine(schema: TableSchema, options: Options) -> MergeEngine:
    engines = {"deduplicate": Deduplicate, "partial-update": PartialUpdate, "aggregation": Aggregation,
               "first-row": FirstRow}
    return engines[options.get("merge-engine")](schema, options)


# ------------------------------------------------------------------------------- k-way merge

class _RunCursor:
    """The current chunk of one sorted run, and where it stands."""

    def __init__(self, chunks: Iterator[pa.Table], layout: KeyValueLayout) -> None:
        self.chunks = chunks
        self.layout = layout
        self.chunk: pa.Table | None = None
        self.advance()

    def advance(self) -> None:
        self.chunk = None
        for chunk in self.chunks:
            if chunk.num_rows:
                self.chunk = chunk
                return

    def last_key(self) -> tuple:
        assert self.chunk is not None
        return self.layout.key_tuple(self.chunk, self.chunk.num_rows - 1)

    def take_upto(self, bound: tuple) -> pa.Table:
        """Remove and return the prefix of the chunk with keys <= bound (binary search)."""
        assert self.chunk is not None
        chunk = self.chunk
        keys = _KeyView(chunk, self.layout)
        cut = bisect.bisect_right(keys, bound)
        head = chunk.slice(0, cut)
        if cut == chunk.num_rows:
            self.advance()
        else:
            self.chunk = chunk.slice(cut)
        return head


class _KeyView:
    """Sequence view of a chunk's key tuples for bisect (only the probed rows are converted)."""

    def __init__(self, chunk: pa.Table, layout: KeyValueLayout) -> None:
        self.chunk = chunk
        self.layout = layout

    def __len__(self) -> int:
        return self.chunk.num_rows

    def __getitem__(self, i: int) -> tuple:
        return self.layout.key_tuple(self.chunk, i)


def merge_sorted_runs(runs: list[Iterator[pa.Table]], engine: MergeEngine, drop_retract: bool) -> Iterator[pa.Table]:
    """K-way merge of key-sorted runs (each with unique keys) into merged, key-sorted chunks.

    Vectorised by watermark: the smallest "last key" among the runs' current chunks bounds what is
    complete; every row up to it, from every run, is sorted and merged in one Arrow operation.
    Memory holds one chunk per run.
    """
    layout = engine.layout
    cursors = [c for c in (_RunCursor(r, layout) for r in runs) if c.chunk is not None]
    while cursors:
        if len(cursors) == 1:
            # one run left: its rows need no merging with anything else
            c = cursors[0]
            while c.chunk is not None:
                chunk = c.chunk
                c.advance()
                out = engine.drop_retracts(chunk) if drop_retract else chunk
                if out.num_rows:
                    yield out
            return
        bound = min(c.last_key() for c in cursors)
        pieces = [c.take_upto(bound) for c in cursors]
        cursors = [c for c in cursors if c.chunk is not None]
        batch = pa.concat_tables([p for p in pieces if p.num_rows])
        out = engine.merge(layout.sort(batch), drop_retract)
        if out.num_rows:
            yield out
