"""The changelog compaction produces (`changelog-producer` = lookup or full-compaction), and the lookup merge.

Paimon writes these changelogs while it compacts a bucket (ChangelogMergeTreeRewriter): for each key a compaction
changes it compares the key's value before with its merged value after, and writes the difference as changelog
records, committed with the COMPACT snapshot:

- lookup (LookupChangelogMergeFunctionWrapper): a compaction that lifts level-0 files to a level above 0 emits, for
  every key of those files, the difference between the key's newest record above level 0 (in the compacted runs,
  else looked up in the runs above the output level) and the merge of that record with the key's level-0 records.
  First-row tables (FirstRowMergeFunctionWrapper) emit only `+I` of keys new to the levels above 0.
- full-compaction (FullChangelogMergeFunctionWrapper): a compaction whose output is the top level emits, for every
  key with a record below the top level, the difference between its top-level record and the merge of all of them.

The difference (`before` -> `after`): no live before and an added after: `+I after`; a live before and no added
after: `-D before`; both: `-U before`, `+U after`, unless `changelog-producer.row-deduplicate` and their values
are equal (fields in `changelog-producer.row-deduplicate-ignore-fields` aside).

Tables that compact with lookup (Paimon's `needLookup`: the lookup producer, deletion vectors, `force-lookup`)
keep a key's whole merged value in its newest record above level 0, so merging a key reads only that record and
the level-0 records (LookupMergeFunction): older records above level 0 are superseded, not merged again (an
aggregation would count them twice). First-row tables keep a key in one run and are merged as usual.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..options.registry import Options
from .engine import Deduplicate, group_ends
from .kv import DELETE, INSERT, KIND, UPDATE_AFTER, UPDATE_BEFORE, KeyValueLayout, group_starts
from .merge import RunCursor

LOOKUP = "lookup"
FULL_COMPACTION = "full-compaction"
_ROW = "_paimon_ds_row"  # a row's index, while rows are matched by key
_SIDE = "_paimon_ds_side"
_ORDER = "_paimon_ds_order"


def lookup_compaction(options: Options, first_row: bool) -> bool:
    """Paimon's CoreOptions.needLookup: the bucket's writers lift every level-0 file on each compaction
    (ForceUpLevel0Compaction) and merge it with the key's records looked up above."""
    return (first_row or options.get("changelog-producer") == LOOKUP or options.get("deletion-vectors.enabled")
            or options.get("force-lookup"))


def lookup_merge(options: Options, first_row: bool) -> bool:
    """Whether merges of the table read only a key's newest record above level 0 (LookupMergeFunction, which
    Paimon wraps around every merge engine but first-row's)."""
    return not first_row and lookup_compaction(options, first_row)


class NewestRecord(Deduplicate):
    """Keeps each key's last record in merge order (sequence fields, then sequence number), retractions
    included: a key's newest record above level 0 in a lookup table. Not a table's merge engine."""

    def __init__(self, layout: KeyValueLayout) -> None:  # no options of its own: not MergeEngine.__init__
        self.layout = layout
        self.key_columns = layout.key_columns
        self.ignore_delete = False


class ChangelogRules:
    """How a table's compactions turn a key's value before and after into changelog records."""

    def __init__(self, layout: KeyValueLayout, options: Options, first_row: bool) -> None:
        self.layout = layout
        self.first_row = first_row
        self.row_deduplicate = options.get("changelog-producer.row-deduplicate")
        ignored = set(options.get("changelog-producer.row-deduplicate-ignore-fields") or [])
        self.compared = [f.name for f in layout.schema.fields if f.name not in ignored]

    def changelog(self, before: pa.Table, after: pa.Table) -> pa.Table:
        """The changelog records of the keys of ``after`` (the merged records of the changed keys, one per key,
        any kind) given ``before`` (each such key's record before the compaction, if it had one), in key order,
        `-U` before `+U` within a key."""
        if after.num_rows == 0:
            return after
        keys = self.layout.key_columns
        sides = [_tagged(before.select(keys), 0), _tagged(after.select(keys), 1)]
        both = pa.concat_tables(sides)
        both = both.take(pc.sort_indices(both, sort_keys=[(k, "ascending") for k in keys] + [(_SIDE, "ascending")]))
        side = both.column(_SIDE).to_numpy()
        row = both.column(_ROW).to_numpy()
        starts = group_starts(both, keys)
        ends = group_ends(starts, both.num_rows)
        has_before = side[starts] == 0
        has_after = side[ends] == 1
        groups = np.flatnonzero(has_after)  # every changed key has a merged record (or none at all)
        b_row = np.where(has_before, row[starts], -1)[groups]
        a_row = row[ends][groups]
        before_kinds = before.column(KIND).to_numpy()
        after_kinds = after.column(KIND).to_numpy()
        had = b_row >= 0
        live_before = np.zeros_like(had)
        live_before[had] = _is_add(before_kinds[b_row[had]])
        live_after = _is_add(after_kinds[a_row])
        if self.first_row:  # the first row stays: only keys new above level 0 are news
            inserts, deletes, updates = ~had & live_after, np.zeros_like(had), np.zeros_like(had)
        else:
            inserts = ~live_before & live_after
            deletes = live_before & ~live_after
            updates = live_before & live_after
            if self.row_deduplicate and updates.any():
                idx = np.flatnonzero(updates)
                same = self._equal(before.take(pa.array(b_row[idx])), after.take(pa.array(a_row[idx])))
                updates[idx[same]] = False
        order = np.arange(len(groups), dtype=np.int64) * 2
        parts = [
            _with_kind(before, b_row[deletes], DELETE, order[deletes]),
            _with_kind(before, b_row[updates], UPDATE_BEFORE, order[updates]),
            _with_kind(after, a_row[updates], UPDATE_AFTER, order[updates] + 1),
            _with_kind(after, a_row[inserts], INSERT, order[inserts] + 1),
        ]
        out = pa.concat_tables(parts)
        return out.take(pc.sort_indices(out, sort_keys=[(_ORDER, "ascending")])).drop_columns([_ORDER])

    def _equal(self, left: pa.Table, right: pa.Table) -> np.ndarray:
        """Row by row, whether the compared value columns are equal (two nulls are equal), as Paimon's
        RecordEqualiser compares a before and an after value."""
        same = np.ones(left.num_rows, dtype=bool)
        for name in self.compared:
            a, b = left.column(name).combine_chunks(), right.column(name).combine_chunks()
            both_null = (a.is_null().to_numpy(zero_copy_only=False) & b.is_null().to_numpy(zero_copy_only=False))
            try:
                eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
            except (pa.ArrowNotImplementedError, pa.ArrowInvalid, TypeError):
                # nested types Arrow cannot compare: value by value (only with row-deduplicate, on updated keys)
                eq = np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist())], dtype=bool)
            same &= eq | both_null
        return same


def _is_add(kinds: np.ndarray) -> np.ndarray:
    return (kinds == INSERT) | (kinds == UPDATE_AFTER)


def _tagged(keys: pa.Table, side: int) -> pa.Table:
    n = keys.num_rows
    return (keys.append_column(_SIDE, pa.array(np.full(n, side, dtype=np.int8)))
            .append_column(_ROW, pa.array(np.arange(n, dtype=np.int64))))


def _with_kind(kv: pa.Table, rows: np.ndarray, kind: int, order: np.ndarray) -> pa.Table:
    picked = kv.take(pa.array(rows, pa.int64()))
    i = picked.schema.get_field_index(KIND)
    picked = picked.set_column(i, picked.schema.field(i), pa.array(np.full(len(rows), kind, dtype=np.int8)))
    return picked.append_column(_ORDER, pa.array(order, pa.int64()))


def key_set(tables: list[pa.Table], layout: KeyValueLayout) -> pa.Table:
    """The distinct keys of ``tables`` (key columns only)."""
    keys = layout.key_columns
    parts = [t.select(keys) for t in tables if t.num_rows]
    if not parts:
        return layout.arrow_schema().empty_table().select(keys)
    return pa.concat_tables(parts).group_by(keys, use_threads=False).aggregate([])


def rows_with_keys(kv: pa.Table, keys: pa.Table, key_columns: list[str]) -> pa.Table:
    """The rows of ``kv`` whose key is in ``keys``, in their order (joined on the keys and row numbers only:
    value columns of any type ride along)."""
    if kv.num_rows == 0 or keys.num_rows == 0:
        return kv.slice(0, 0)
    numbered = kv.select(key_columns).append_column(_ROW, pa.array(np.arange(kv.num_rows, dtype=np.int64)))
    found = numbered.join(keys, keys=key_columns, join_type="left semi", use_threads=False)
    return kv.take(pa.array(np.sort(found.column(_ROW).to_numpy())))


def aligned_runs(runs: list[Iterator[pa.Table]], layout: KeyValueLayout) -> Iterator[list[pa.Table]]:
    """Key-sorted runs cut at common keys: each item holds, run by run, that run's rows of one key range (all its
    rows of those keys), the items in key order. Memory holds one chunk per run, as merge_sorted_runs."""
    cursors = [RunCursor(r, layout) for r in runs]
    empty = layout.arrow_schema().empty_table()
    while True:
        live = [i for i, c in enumerate(cursors) if c.chunk is not None]
        if not live:
            return
        if len(live) == 1:  # one run left: its chunks as they come
            only = cursors[live[0]]
            while only.chunk is not None:
                chunk = only.chunk
                only.advance()
                yield [chunk if i == live[0] else empty for i in range(len(runs))]
            return
        bound = min(cursors[i].last_key() for i in live)
        yield [cursors[i].take_upto(bound) if i in live else empty for i in range(len(runs))]
