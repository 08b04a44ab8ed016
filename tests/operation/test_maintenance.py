"""Expiring snapshots never deletes a file that a retained snapshot or a tag still references."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import create_tag, delete_tag, expire_snapshots, remove_orphan_files, rollback
from paimon_ds.snapshot.manager import SnapshotNotFound

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
OPTIONS = {"primary-key": "id", "bucket": "2", "write-only": "true"}


def upsert(path: str, ids: range, v: int) -> None:
    table = Table.for_write(path, SCHEMA, OPTIONS)
    write = table.new_write()
    write.write_arrow(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def contents(path: str, **options: str) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in Table.load(path, options).to_arrow().to_pylist())


def files_on_disk(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_expire_keeps_every_retained_snapshot_and_tag_readable(tmp_path):
    path = str(tmp_path / "t")
    for i in range(8):  # overlapping upserts: later commits shadow earlier rows
        upsert(path, range(i * 5, i * 5 + 20), v=i)
        if i in (2, 5):  # compactions remove files that older snapshots still use
            table = Table.load(path)
            assert compact_in_process(table, {(s.partition, s.bucket) for s in table.new_scan().plan()}, full=True)
    table = Table.load(path)
    ids = table.snapshot_manager.list_ids()
    assert len(ids) == 10
    create_tag(table, "kept", snapshot_id=ids[2])
    expected = {sid: contents(path, **{"scan.snapshot-id": str(sid)}) for sid in ids}
    tagged = contents(path, **{"scan.tag-name": "kept"})
    before = files_on_disk(tmp_path / "t")

    result = expire_snapshots(Table.load(path), retain_min=3, retain_max=3)

    assert result.expired == ids[:7]
    assert Table.load(path).snapshot_manager.list_ids() == ids[7:]
    assert (tmp_path / "t/snapshot/EARLIEST").read_text() == str(ids[7])
    for sid in ids[7:]:
        assert contents(path, **{"scan.snapshot-id": str(sid)}) == expected[sid]
    assert contents(path, **{"scan.tag-name": "kept"}) == tagged
    for sid in ids[:7]:
        with pytest.raises(SnapshotNotFound):
            contents(path, **{"scan.snapshot-id": str(sid)})
    after = files_on_disk(tmp_path / "t")
    deleted = before - after
    assert deleted  # the compacted-away files and expired metadata did go
    assert {f"snapshot/snapshot-{sid}" for sid in ids[:7]} <= deleted
    assert sorted(deleted - {f"snapshot/snapshot-{sid}" for sid in ids[:7]}) == sorted(result.deleted_files)

    # deleting the tag deletes the files only it still held; then only the latest snapshot remains
    held = delete_tag(Table.load(path), "kept")
    assert held and all(not (tmp_path / "t" / f).exists() for f in held)
    for sid in ids[7:]:
        assert contents(path, **{"scan.snapshot-id": str(sid)}) == expected[sid]
    expire_snapshots(Table.load(path), retain_min=1, retain_max=1)
    assert contents(path) == expected[ids[-1]]
    live = {f"bucket-{s.bucket}/{f.file_name}" for s in Table.load(path).new_scan().plan() for f in s.files}
    data_left = {f for f in files_on_disk(tmp_path / "t") if f.startswith("bucket-")}
    assert data_left == live  # nothing but the latest snapshot's files


def test_expire_respects_time_retained(tmp_path):
    path = str(tmp_path / "t")
    for i in range(5):
        upsert(path, range(3), v=i)
    table = Table.load(path)
    times = [table.snapshot_manager.snapshot(i).time_millis for i in table.snapshot_manager.list_ids()]
    # everything is younger than the retention: nothing expires even above retain_min
    assert expire_snapshots(table, retain_min=1, time_retained_ms=3_600_000, now_ms=times[-1]).expired == []
    # an hour later all but retain_min go
    assert expire_snapshots(table, retain_min=2, time_retained_ms=3_600_000,
                            now_ms=times[-1] + 3_600_001).expired == [1, 2, 3]
    with pytest.raises(ValueError, match="min"):
        expire_snapshots(table, retain_min=0)


def test_rollback_to_snapshot_and_to_an_expired_tag(tmp_path):
    path = str(tmp_path / "t")
    for i in range(6):
        upsert(path, range(i * 3, i * 3 + 6), v=i)
    table = Table.load(path)
    expected = {sid: contents(path, **{"scan.snapshot-id": str(sid)}) for sid in range(1, 7)}
    create_tag(table, "two", snapshot_id=2)
    before = files_on_disk(tmp_path / "t")

    with pytest.raises(SnapshotNotFound, match="snapshot 9"):
        rollback(table, snapshot_id=9)
    with pytest.raises(SnapshotNotFound, match="tag 'nope'"):
        rollback(table, tag="nope")
    assert files_on_disk(tmp_path / "t") == before  # refused: nothing changed

    rollback(Table.load(path), snapshot_id=4)
    assert Table.load(path).snapshot_manager.list_ids() == [1, 2, 3, 4]
    assert contents(path) == expected[4]
    for sid in range(1, 5):
        assert contents(path, **{"scan.snapshot-id": str(sid)}) == expected[sid]
    upsert(path, range(100, 102), v=9)  # writing continues from the rolled-back state
    assert contents(path) == sorted(expected[4] + [(100, 9), (101, 9)])

    expire_snapshots(Table.load(path), retain_min=1, retain_max=1)  # snapshot 2 expires; the tag holds it
    rollback(Table.load(path), tag="two")
    sm = Table.load(path).snapshot_manager
    assert sm.list_ids() == [2] and sm.earliest_id() == 2 and sm.latest_id() == 2
    assert contents(path) == expected[2]
    data_left = {f for f in files_on_disk(tmp_path / "t") if f.startswith("bucket-")}
    live = {f"bucket-{s.bucket}/{f.file_name}" for s in Table.load(path).new_scan().plan() for f in s.files}
    assert data_left == live


def test_remove_orphan_files_deletes_only_old_unreferenced_files(tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        upsert(path, range(i, i + 4), v=i)
    table = Table.load(path)
    create_tag(table, "first", snapshot_id=1)
    expected = {sid: contents(path, **{"scan.snapshot-id": str(sid)}) for sid in (1, 2, 3)}
    # a write that never committed (a killed job): its data files are orphans
    write = table.new_write()
    write.write_arrow(pa.table({"id": [50, 51], "v": [0, 0]}, schema=SCHEMA))
    orphan_files = {f"bucket-{m.bucket}/{f.file_name}" for m in write.prepare_commit() for f in m.new_files}
    (tmp_path / "t/manifest/manifest-orphan-0").write_bytes(b"x")  # a commit that died before its snapshot
    orphans = orphan_files | {"manifest/manifest-orphan-0"}
    before = files_on_disk(tmp_path / "t")

    # within the margin nothing goes: the files could belong to a write still in flight
    assert remove_orphan_files(Table.load(path), older_than_ms=3_600_000) == []
    assert files_on_disk(tmp_path / "t") == before
    assert remove_orphan_files(Table.load(path), older_than_ms=0, dry_run=True) == sorted(orphans)
    assert files_on_disk(tmp_path / "t") == before

    assert remove_orphan_files(Table.load(path), older_than_ms=0) == sorted(orphans)
    assert files_on_disk(tmp_path / "t") == before - orphans
    for sid, rows in expected.items():
        assert contents(path, **{"scan.snapshot-id": str(sid)}) == rows
    assert contents(path, **{"scan.tag-name": "first"}) == expected[1]
