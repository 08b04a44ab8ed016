"""Maintenance procedures on S3: tags, expiry, rollback and orphan removal list, date and delete objects."""

from __future__ import annotations

import time

import pyarrow as pa

from paimon_ds import Table, procedures

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])


def upsert(path: str, opts: dict[str, str], ids: range, v: int) -> None:
    table = Table.for_write(path, SCHEMA, {"primary-key": "id", "bucket": "2", **opts})
    write = table.new_write()
    write.write_arrow(pa.table({"id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA))
    table.new_commit().commit(write.prepare_commit())


def contents(path: str, opts: dict[str, str], **scan: str) -> list[tuple[int, int]]:
    rows = Table.load(path, scan, opts).to_arrow().to_pylist()
    return sorted((r["id"], r["v"]) for r in rows)


def objects(s3_server, path: str) -> set[str]:
    root = path.removeprefix("s3://")
    return {p[len(root) + 1:] for p in s3_server.fs().find(root)}


def test_tags_expiry_rollback_and_orphans_on_s3(s3_server, s3_table):
    path, opts = s3_table
    for i in range(4):
        upsert(path, opts, range(i, i + 3), v=i)
    expected = {sid: contents(path, opts, **{"scan.snapshot-id": str(sid)}) for sid in range(1, 5)}
    assert expected[4] == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 3), (5, 3)]

    procedures.create_tag(path, "second", 2, storage_options=opts)
    result = procedures.expire_snapshots(path, retain_max=2, retain_min=1, storage_options=opts)
    table = Table.load(path, None, opts)
    assert table.snapshot_manager.list_ids() == [3, 4]
    assert result is not None
    for sid in (3, 4):
        assert contents(path, opts, **{"scan.snapshot-id": str(sid)}) == expected[sid]
    assert contents(path, opts, **{"scan.tag-name": "second"}) == expected[2]  # the tag kept its files

    # a write that never committed leaves orphans; only files older than the margin go
    write = table.new_write()
    write.write_arrow(pa.table({"id": [50], "v": [0]}, schema=SCHEMA))
    orphans = {f"bucket-{m.bucket}/{f.file_name}" for m in write.prepare_commit() for f in m.new_files}
    before = objects(s3_server, path)
    assert orphans <= before
    assert procedures.remove_orphan_files(path, older_than=int(time.time() * 1000) - 3_600_000,
                                          storage_options=opts) == []
    removed = procedures.remove_orphan_files(path, older_than=int(time.time() * 1000) + 1000, storage_options=opts)
    assert len(removed) == len(orphans)
    assert objects(s3_server, path) == before - orphans
    assert contents(path, opts) == expected[4]

    procedures.rollback(path, "second", storage_options=opts)
    assert contents(path, opts) == expected[2]
    assert Table.load(path, None, opts).snapshot_manager.list_ids() == [2]
