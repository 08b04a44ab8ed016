"""The changelog rules of the lookup and full-compaction producers, and the lookup merge, on hand-made records.

Java Paimon 0.9's writers are the reference for the whole flow (tests/interop/test_changelog_producers.py); these
pin the rules of LookupChangelogMergeFunctionWrapper / FullChangelogMergeFunctionWrapper.setChangelog where 0.9
cannot be asked: `changelog-producer.row-deduplicate-ignore-fields` (Paimon 1.x), nulls and nested values in the
row-deduplicate comparison (RecordEqualiser: two nulls are equal).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paimon_ds.mergetree.changelog import ChangelogRules, NewestRecord, aligned_runs, lookup_compaction, lookup_merge
from paimon_ds.mergetree.kv import DELETE, INSERT, UPDATE_AFTER, KeyValueLayout
from paimon_ds.options.registry import Options
from paimon_ds.schema.manager import TableSchema

ROWS = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()), ("tags", pa.list_(pa.int32())),
                  ("ts", pa.int64())])
SCHEMA = TableSchema.from_arrow(ROWS, [], ["id"], {"bucket": "1"})
LAYOUT = KeyValueLayout(SCHEMA)
KIND_NAMES = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def kv(rows: list[tuple]) -> pa.Table:
    """(id, kind, v, tags, ts) records, sequence number = position."""
    data = pa.table({"id": [r[0] for r in rows], "v": [r[2] for r in rows], "tags": [r[3] for r in rows],
                     "ts": [r[4] for r in rows]}, schema=ROWS)
    return LAYOUT.to_kv(data, np.arange(len(rows), dtype=np.int64), np.array([r[1] for r in rows], dtype=np.int8))


def log(rules: ChangelogRules, before: list[tuple], after: list[tuple]) -> list[tuple]:
    out = rules.changelog(kv(before), kv(after))
    kinds, ids, values = (out.column(c).to_pylist() for c in ("_VALUE_KIND", "id", "v"))
    return [(KIND_NAMES[k], i, v) for k, i, v in zip(kinds, ids, values)]


def test_before_and_after_images():
    rules = ChangelogRules(LAYOUT, Options({}), first_row=False)
    before = [(1, INSERT, "a", [1], 1), (2, INSERT, "b", None, 2), (3, INSERT, "c", None, 3), (4, DELETE, "d", None, 4)]
    after = [(1, UPDATE_AFTER, "a2", [1], 5), (2, INSERT, "b", None, 2), (3, DELETE, None, None, 6),
             (4, INSERT, "d2", None, 7), (5, INSERT, "e", None, 8), (6, DELETE, None, None, 9)]
    # 1 updated; 2 "updated" to the same value (a pair without row-deduplicate); 3 deleted; 4 was deleted (no live
    # before): re-inserted; 5 new; 6 deleted but never there: nothing
    assert log(rules, before, after) == [("-U", 1, "a"), ("+U", 1, "a2"), ("-U", 2, "b"), ("+U", 2, "b"),
                                         ("-D", 3, "c"), ("+I", 4, "d2"), ("+I", 5, "e")]
    first_row = ChangelogRules(LAYOUT, Options({}), first_row=True)
    assert log(first_row, before[:2], after[:2] + [(5, INSERT, "e", None, 8)]) == [("+I", 5, "e")]


def test_row_deduplicate_compares_values_nulls_and_nested_ones_as_paimon():
    rules = ChangelogRules(LAYOUT, Options({"changelog-producer.row-deduplicate": "true"}), first_row=False)
    before = [(1, INSERT, None, [1, None], 1), (2, INSERT, "b", [2], 2), (3, INSERT, "c", None, 3)]
    after = [(1, UPDATE_AFTER, None, [1, None], 1), (2, UPDATE_AFTER, "b", [2, 3], 2), (3, INSERT, "c", None, 4)]
    assert log(rules, before, after) == [("-U", 2, "b"), ("+U", 2, "b"), ("-U", 3, "c"), ("+U", 3, "c")]
    ignoring = ChangelogRules(LAYOUT, Options({"changelog-producer.row-deduplicate": "true",
                                               "changelog-producer.row-deduplicate-ignore-fields": "ts"}), False)
    assert log(ignoring, before, after) == [("-U", 2, "b"), ("+U", 2, "b")]


def test_newest_record_and_aligned_runs():
    older = kv([(1, INSERT, "a", None, 0), (2, INSERT, "b", None, 0), (4, INSERT, "d", None, 0)])
    newer = kv([(1, UPDATE_AFTER, "a2", None, 0), (3, DELETE, None, None, 0), (4, INSERT, "d2", None, 0)])
    newer = newer.set_column(1, newer.schema.field(1), pa.array([5, 6, 7], pa.int64()))  # newer numbers
    merged = NewestRecord(LAYOUT).merge(LAYOUT.sort(pa.concat_tables([older, newer])), drop_retract=False)
    assert list(zip(merged.column("id").to_pylist(), merged.column("v").to_pylist())) == \
        [(1, "a2"), (2, "b"), (3, None), (4, "d2")]
    pieces = list(aligned_runs([iter([older.slice(0, 2), older.slice(2)]), iter([newer])], LAYOUT))
    assert [[p.column("id").to_pylist() for p in item] for item in pieces] == [[[1, 2], [1]], [[4], [3, 4]]]


def test_which_tables_compact_and_merge_with_lookup():
    assert lookup_compaction(Options({"changelog-producer": "lookup"}), False)
    assert lookup_compaction(Options({"deletion-vectors.enabled": "true"}), False)
    assert lookup_compaction(Options({"force-lookup": "true"}), False)
    assert lookup_compaction(Options({}), True) and not lookup_merge(Options({}), True)
    assert not lookup_compaction(Options({"changelog-producer": "full-compaction"}), False)
    assert not lookup_compaction(Options({"changelog-producer": "input"}), False)
