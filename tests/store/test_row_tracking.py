"""Row tracking in the core, without Spark: row ids assigned by the commit (also when commits race),
`nextRowId`, sequence numbers, compaction that keeps ids, and what is refused on such tables.

Interop with pypaimon 2.1 (the reference for these Paimon 1.x features) is in
tests/interop/test_row_tracking_interop.py.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from paimon_ds.manifest.files import ManifestFile, ManifestList
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.scan import TableScan
from paimon_ds.options.registry import OptionError
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.schema.change import SetOption, commit_changes
from paimon_ds.snapshot.manager import Snapshot, SnapshotManager
from paimon_ds.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
TRACKED = {"row-tracking.enabled": "true"}
COLUMNS = {"paimon_ds.row-tracking-columns": "true"}


def rows(ids: range | list[int], dt: str | None = None) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt or f"d{i % 3}" for i in ids],
                     "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def write(path: str, data: pa.Table, options: dict[str, str] | None = None):
    table = Table.for_write(path, SCHEMA, {**TRACKED, **(options or {})})
    w = table.new_write()
    w.write_arrow(data)
    return table, w.prepare_commit()


def append(path: str, data: pa.Table, options: dict[str, str] | None = None) -> Snapshot:
    table, messages = write(path, data, options)
    snapshot = table.new_commit().commit(messages)
    assert snapshot is not None
    return snapshot


def tracked(path: str, **options: str) -> pa.Table:
    """The table with its _ROW_ID and _SEQUENCE_NUMBER, by row id."""
    return Table.load(path, {**COLUMNS, **options}).to_arrow().sort_by("_ROW_ID")


def ids_by_key(t: pa.Table) -> dict[int, tuple[int, int]]:
    return {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in t.to_pylist()}


def snapshot_json(path: str, sid: int) -> dict[str, Any]:
    return json.loads(Path(path, "snapshot", f"snapshot-{sid}").read_text())


def live_files(path: str) -> list:
    t = Table.load(path)
    return [e.file for e in TableScan(t).read_entries(t.latest_snapshot())]


def assert_no_leaked_manifests(path: str) -> None:
    table = Table.load(path)
    sm, ml = table.snapshot_manager, ManifestList(table.io, table.root)
    used: set[str] = set()
    for sid in sm.list_ids():
        s = sm.snapshot(sid)
        for name in (s.base_manifest_list, s.delta_manifest_list):
            used.add(name)
            used |= {m.file_name for m in ml.read(name)}
    assert set(os.listdir(Path(path, "manifest"))) == used


# ------------------------------------------------------------------ ids assigned by the commit

def test_commits_assign_consecutive_ids_partition_by_partition(table_path: str) -> None:
    """Each commit hands out ids from the snapshot's nextRowId: files of one partition consecutively
    (row-tracking.partition-group-on-commit), every new row's sequence number the snapshot id."""
    append(table_path, rows(range(9)), {"partition": "dt"})
    append(table_path, rows(range(9, 14)), {"partition": "dt"})
    assert [snapshot_json(table_path, s)["nextRowId"] for s in (1, 2)] == [9, 14]
    t = tracked(table_path)
    assert t["_ROW_ID"].to_pylist() == list(range(14))
    assert t["_SEQUENCE_NUMBER"].to_pylist() == [1] * 9 + [2] * 5
    for f in live_files(table_path):
        assert f.first_row_id is not None and f.min_sequence_number == f.max_sequence_number in (1, 2)
    # within a commit, a partition's rows have consecutive ids
    by_dt: dict[str, list[int]] = {}
    for r in t.to_pylist():
        if r["id"] < 9:
            by_dt.setdefault(r["dt"], []).append(r["_ROW_ID"])
    for ids in by_dt.values():
        assert ids == list(range(ids[0], ids[0] + 3))
    # the plain read has no system columns
    assert Table.load(table_path).to_arrow().column_names == ["id", "dt", "v"]


def test_overwrite_and_compaction_keep_next_row_id(table_path: str) -> None:
    """Ids are never handed out twice: an overwrite's rows get new ids, a COMPACT snapshot carries nextRowId."""
    append(table_path, rows(range(5)))
    table, messages = write(table_path, rows(range(100, 103)))
    table.new_commit().overwrite(messages)
    assert snapshot_json(table_path, 2)["nextRowId"] == 8
    append(table_path, rows(range(200, 202)))
    before = tracked(table_path)
    assert before["_ROW_ID"].to_pylist() == [5, 6, 7, 8, 9]
    snap = compact_in_process(Table.load(table_path), None, full=True)
    assert snap is not None and snap.commit_kind == "COMPACT" and snapshot_json(table_path, snap.id)["nextRowId"] == 10
    assert tracked(table_path).equals(before)
    append(table_path, rows(range(300, 301)))
    assert tracked(table_path)["_ROW_ID"].to_pylist() == [5, 6, 7, 8, 9, 10]


def test_compaction_keeps_ids_and_sequence_numbers(table_path: str) -> None:
    """Compacted files hold _ROW_ID and _SEQUENCE_NUMBER physically (as Paimon's compaction writes them); a
    file whose ids run without a gap also gets _FIRST_ROW_ID, one with gaps (partitions interleaved) not."""
    for i in range(4):
        append(table_path, rows(range(10 * i, 10 * i + 6)), {"partition": "dt"})
    before = tracked(table_path)
    snap = compact_in_process(Table.load(table_path), None, full=True)
    assert snap is not None
    after_files = live_files(table_path)
    assert len(after_files) == 3  # one per partition
    for f in after_files:
        assert f.file_source == 1 and f.write_cols == ("id", "dt", "v", "_ROW_ID", "_SEQUENCE_NUMBER")
        assert f.first_row_id is None  # each partition's rows interleave with the others' ids
        assert (f.min_sequence_number, f.max_sequence_number) == (1, 4)
    assert tracked(table_path).equals(before)
    # predicates on the system columns filter merged rows; _ROW_ID also prunes by a file's range
    t = Table.load(table_path, COLUMNS)
    got = t.to_arrow(Leaf("=", "_SEQUENCE_NUMBER", (3,))).sort_by("_ROW_ID")
    assert got.equals(before.filter(pa.compute.equal(before["_SEQUENCE_NUMBER"], 3)))


def test_compaction_of_one_partition_gets_first_row_id(table_path: str) -> None:
    for i in range(3):
        append(table_path, rows(range(10 * i, 10 * i + 4)))
    before = tracked(table_path)
    compact_in_process(Table.load(table_path), None, full=True)
    (f,) = live_files(table_path)
    assert f.first_row_id == 0 and f.row_count == 12
    assert tracked(table_path).equals(before)
    pruned = Table.load(table_path, COLUMNS).new_scan(Leaf("=", "_ROW_ID", (99,))).plan()
    assert pruned == []  # the file's range [0, 11] cannot hold id 99


# ------------------------------------------------------------------ concurrent commits

def test_lost_race_takes_ids_after_the_winner(table_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit that loses the race for snapshot-N re-reads nextRowId: the two commits' ids never overlap,
    and the manifest of the losing attempt is deleted."""
    append(table_path, rows(range(5)))
    table, mine = write(table_path, rows(range(10, 13)))
    other, theirs = write(table_path, rows(range(20, 27)))
    original = SnapshotManager.try_commit
    calls: list[int] = []

    def other_lands_first(self: SnapshotManager, snapshot: Snapshot) -> bool:
        calls.append(snapshot.id)
        if len(calls) == 1:  # between our read of the latest snapshot and our create, another commit lands
            monkeypatch.setattr(SnapshotManager, "try_commit", original)
            assert other.new_commit().commit(theirs).next_row_id == 12
            monkeypatch.setattr(SnapshotManager, "try_commit", other_lands_first)
        return original(self, snapshot)

    monkeypatch.setattr(SnapshotManager, "try_commit", other_lands_first)
    s = table.new_commit().commit(mine)
    assert calls == [2, 3] and s.id == 3 and s.next_row_id == 15
    t = tracked(table_path)
    assert ids_by_key(t) == {**{i: (i, 1) for i in range(5)}, **{20 + i: (5 + i, 2) for i in range(7)},
                             10: (12, 3), 11: (13, 3), 12: (14, 3)}
    assert_no_leaked_manifests(table_path)


def _race_worker(path: str, worker: int, commits: int, barrier: Any) -> int:
    barrier.wait()  # all workers start together, so their commits overlap
    lost = 0
    for c in range(commits):
        start = worker * 1000 + c * 3
        table, messages = write(path, rows(range(start, start + 3)), {"commit.max-retries": "100"})
        commit = table.new_commit(f"worker-{worker}")
        commit.commit(messages)
        lost += commit.lost_races
    return lost


def test_racing_processes_never_share_an_id(table_path: str) -> None:
    append(table_path, rows(range(1)))
    workers, commits = 4, 8
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(workers) as pool:
        barrier = manager.Barrier(workers)
        lost = pool.starmap(_race_worker, [(table_path, w, commits, barrier) for w in range(workers)])
    total = 1 + workers * commits * 3
    t = tracked(table_path)
    assert t["_ROW_ID"].to_pylist() == list(range(total))  # every id once, no gap
    latest = Table.load(table_path).latest_snapshot()
    assert latest.next_row_id == total and latest.id == 1 + workers * commits
    # each commit's rows took one range, and later snapshots took later ranges
    by_seq: dict[int, list[int]] = {}
    for r in t.to_pylist():
        by_seq.setdefault(r["_SEQUENCE_NUMBER"], []).append(r["_ROW_ID"])
    ranges = [by_seq[s] for s in sorted(by_seq)]
    assert all(r == list(range(r[0], r[0] + len(r))) for r in ranges)
    assert [r[0] for r in ranges] == sorted(r[0] for r in ranges)
    print(f"lost races: {sum(lost)}")
    assert_no_leaked_manifests(table_path)


# ------------------------------------------------------------------ refused before anything is written

@pytest.mark.parametrize("options, message", [
    ({"primary-key": "id"}, "primary key"),
    ({"bucket": "2", "bucket-key": "id"}, "bucket = -1"),
    ({"row-tracking.enabled": "false", "data-evolution.enabled": "true"}, "needs row-tracking.enabled"),
])
def test_tables_paimon_refuses_are_refused(table_path: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        Table.for_write(table_path, SCHEMA, {**TRACKED, **options})
    assert not Path(table_path).exists() or not os.listdir(table_path)


def test_system_column_names_are_refused(table_path: str) -> None:
    schema = SCHEMA.append(pa.field("_ROW_ID", pa.int64()))
    with pytest.raises(OptionError, match="clash with the row-tracking system columns"):
        Table.for_write(table_path, schema, TRACKED)


def test_row_tracking_cannot_be_switched_after_data(table_path: str) -> None:
    append(table_path, rows(range(3)))
    for key in ("row-tracking.enabled", "data-evolution.enabled"):
        with pytest.raises(OptionError, match="cannot change once the table holds data"):
            commit_changes(table_path, [SetOption(key, "false" if key == "row-tracking.enabled" else "true")])
    assert Table.load(table_path).schema().id == 0


def test_data_evolution_tables_are_not_compacted(table_path: str) -> None:
    for i in range(3):
        append(table_path, rows(range(i * 3, i * 3 + 3)), {"data-evolution.enabled": "true"})
    before = sorted(os.listdir(table_path))
    with pytest.raises(OptionError, match="compaction of data-evolution table"):
        compact_in_process(Table.load(table_path), None, full=True)
    assert sorted(os.listdir(table_path)) == before and Table.load(table_path).latest_snapshot().id == 3


def test_row_tracking_columns_need_a_row_tracking_table(table_path: str) -> None:
    table = Table.for_write(table_path, SCHEMA, {})
    w = table.new_write()
    w.write_arrow(rows(range(2)))
    table.new_commit().commit(w.prepare_commit())
    from paimon_ds.store.row_tracking import with_row_tracking_columns
    t = Table.load(table_path, COLUMNS)
    with pytest.raises(OptionError, match="row-tracking.enabled is not true"):
        with_row_tracking_columns(t.store, t.arrow_schema())


def test_manifest_entries_carry_first_row_id(table_path: str) -> None:
    append(table_path, rows(range(4)))
    t = Table.load(table_path)
    s = t.latest_snapshot()
    ml, mf = ManifestList(t.io, t.root), ManifestFile(t.io, t.root, [], t.table_schema.id)
    (entry,) = [e for m in ml.read(s.delta_manifest_list) for e in mf.read(m.file_name)]
    assert (entry.file.first_row_id, entry.file.min_sequence_number, entry.file.max_sequence_number) == (0, 1, 1)
    assert entry.file.write_cols is None
