"""Deletion-vector tables written by paimon_ds: readers skip level 0 and read each file with its vector,
so every commit lifts level 0 with lookup compaction. Java Paimon 0.9 and pypaimon 2.1 must read exactly
what paimon_ds reads, and the tables must stay consistent across writers, compaction and maintenance."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
from conftest import sort_table

from paimon_ds import Table
from paimon_ds.deletionvectors.index_file import read_index_file
from paimon_ds.index.manifest import DELETION_VECTORS_INDEX, IndexManifestFile
from paimon_ds.index.paths import index_file_path
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files

from .java_scripts import pk_writes

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64()), ("op", pa.string())])
DV = {"deletion-vectors.enabled": "true"}
JAVA_FILES = """
import json
t = catalog.get_table(ident + "$files")
rb = t.new_read_builder()
a = rb.new_read().to_arrow(rb.new_scan().plan().splits())
print(json.dumps([[r["file_path"], r["level"], r["record_count"]] for r in a.to_pylist()]))
"""


def commit(path: str, rows: list[tuple], options: dict[str, str]) -> None:
    data = pa.table({name: [r[i] for r in rows] for i, name in enumerate(SCHEMA.names)}, schema=SCHEMA)
    t = Table.for_write(path, SCHEMA, options)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("dv-test").commit(w.prepare_commit())


def rounds(n: int, parts: list[str], count: int = 5) -> list[list[tuple]]:
    """Upserts over overlapping ids and deletes of some, per partition, ``count`` commits."""
    out = []
    for r in range(count):
        ups = [(i, p, f"{p}-r{r}-{i}", r * 1000 + i, "+I") for p in parts for i in range(r * 5, n, 3 + r)]
        written = {(i, p) for i, p, *_ in ups}
        out.append(ups + [(i, p, None, None, "-D") for p in parts for i in range(r, n, 17)
                          if (i, p) not in written])
    return out


def expected(commits: list[list[tuple]]) -> dict[tuple, tuple]:
    live: dict[tuple, tuple] = {}
    for rows in commits:
        for i, p, v, n, op in rows:
            if op == "+I":
                live[(i, p)] = (v, n)
            else:
                live.pop((i, p), None)
    return live


def contents(t: pa.Table) -> dict[tuple, tuple]:
    rows = zip(*(t.column(c).to_pylist() for c in ("id", "p", "v", "n")))
    return {(i, p): (v, n) for i, p, v, n in rows}


def assert_valid_dvs(path: str) -> int:
    """Every live DV range names a live data file of its bucket, at level > 0, with positions inside it;
    no level-0 file is left for readers to skip. Returns the number of deleted positions."""
    t = Table.load(path)
    snap = t.latest_snapshot()
    files = {(e.partition, e.bucket, e.file.file_name): e.file for e in t.new_scan().read_entries(snap)}
    assert all(f.level > 0 for f in files.values())
    deleted = 0
    entries = IndexManifestFile(t.io, t.root).read(snap.index_manifest) if snap.index_manifest else []
    for e in entries:
        if e.index_file.index_type != DELETION_VECTORS_INDEX:
            continue
        path = index_file_path(t.store, e.partition, e.bucket, e.index_file)
        assert path == f"{t.root}/index/{e.index_file.file_name}" and t.io.exists(path)
        for name, positions in read_index_file(t.io, path, e.index_file).items():
            f = files[(e.partition, e.bucket, name)]
            assert len(positions) and 0 <= positions.min() and positions.max() < f.row_count
            deleted += len(positions)
    return deleted


def assert_oracles_agree(path: str, java_oracle, pypaimon_oracle, want: dict[tuple, Any]) -> None:
    ours = Table.load(path).to_arrow().select(["id", "p", "v", "n"])
    assert contents(ours) == want and ours.num_rows == len(want)
    for oracle in (java_oracle, pypaimon_oracle):
        theirs = oracle.read(path).select(["id", "p", "v", "n"])
        assert sort_table(theirs, ["id", "p"]).equals(sort_table(ours.cast(theirs.schema), ["id", "p"])), oracle.impl


def test_upserts_and_deletes(java_oracle, pypaimon_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/t")
    opts = {**DV, "primary-key": "id,p", "partition": "p", "bucket": "2", "rowkind.field": "op"}
    commits = rounds(300, ["a", "b"])
    for rows in commits:
        commit(path, rows, opts)
    assert assert_valid_dvs(path) > 0
    assert_oracles_agree(path, java_oracle, pypaimon_oracle, expected(commits))
    # every snapshot a reader may pick: the APPEND one (level 0 skipped) and the COMPACT one after it
    t = Table.load(path)
    kinds = [t.snapshot_manager.snapshot(i).commit_kind for i in t.snapshot_manager.list_ids()]
    assert kinds == ["APPEND", "COMPACT"] * len(commits)
    java = java_oracle.read(path, snapshot=7)
    ours = Table.load(path, {"scan.snapshot-id": "7"}).to_arrow()
    assert contents(ours) == contents(java) == expected(commits[:3])
    # `$files` lists the same files as Java's (which shows file names only)
    from paimon_ds.readers.system_tables import system_table
    mine = system_table(Table.load(path).store, "files")
    mine = sorted((p.rsplit("/", 1)[-1], lvl, n) for p, lvl, n in zip(
        mine["file_path"].to_pylist(), mine["level"].to_pylist(), mine["record_count"].to_pylist()))
    out = java_oracle.exec(path, JAVA_FILES)
    assert mine == sorted(tuple(x) for x in json.loads(out.strip().splitlines()[-1]))


def test_partial_update_merges_older_levels(java_oracle, pypaimon_oracle, tmp_path) -> None:
    """Lookup compaction merges the older version of a key into the rewritten row: partial updates
    of other columns survive although Paimon's readers do not merge files."""
    path = str(tmp_path / "wh/db.db/pu")
    opts = {**DV, "primary-key": "id,p", "partition": "p", "bucket": "1", "merge-engine": "partial-update",
            "target-file-size": "1kb"}  # several files per level: lookups skip files by key range
    want: dict[tuple, tuple] = {}
    for r in range(4):
        rows = [(i, "a", f"v{r}-{i}" if r % 2 == 0 else None, r * 100 + i if r % 2 else None, "+I")
                for i in range(r, 120, 2 + r)]
        for i, p, v, n, _ in rows:
            old = want.get((i, p), (None, None))
            want[(i, p)] = (v if v is not None else old[0], n if n is not None else old[1])
        commit(path, rows, opts)
    assert assert_valid_dvs(path) > 0
    assert_oracles_agree(path, java_oracle, pypaimon_oracle, want)


def test_java_and_paimon_ds_take_turns(java_oracle, pypaimon_oracle, tmp_path) -> None:
    """Each writer restores the other's deletion vectors: Java 0.9's maintainer reads ours and we read its."""
    path = str(tmp_path / "wh/db.db/turns")
    java_rows = [[("+I", i, "a", f"j0-{i}") for i in range(150)],
                 [("+I", i, "a", f"j1-{i}") for i in range(0, 150, 4)]
                 + [("-D", i, "a", None) for i in range(1, 150, 9)]]
    options = {**DV, "bucket": "1"}
    java_oracle.exec(path, pk_writes(java_rows, options, str(tmp_path / "io"), partition=["p"]))
    want: dict[tuple, tuple] = {}
    for rows in java_rows:
        for k, i, p, v in rows:
            if k == "+I":
                want[(i, p)] = (v, None)
            else:
                want.pop((i, p), None)
    # the Java table has no `n` / `op` columns: paimon_ds writes its own columns
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                        ("v", pa.string())])
    for r in range(2):
        ids = list(range(r * 3, 150, 5))
        t = Table.for_write(path, schema, {})
        w = t.new_write()
        w.write_arrow(pa.table({"id": pa.array(ids, pa.int32()), "p": ["a"] * len(ids),
                                "v": [f"d{r}-{i}" for i in ids]}, schema=schema))
        t.new_commit("dv-test").commit(w.prepare_commit())
        want.update({(i, "a"): (f"d{r}-{i}", None) for i in ids})
    assert assert_valid_dvs(path) > 0
    java_rows2 = [[("+I", i, "a", f"j2-{i}") for i in range(2, 150, 6)]
                  + [("-D", i, "a", None) for i in range(0, 150, 10)]]
    java_oracle.exec(path, pk_writes(java_rows2, options, str(tmp_path / "io")))
    for k, i, p, v in java_rows2[0]:
        if k == "+I":
            want[(i, p)] = (v, None)
        else:
            want.pop((i, p), None)
    ours = Table.load(path).to_arrow()
    assert {(i, p): v for i, p, v in zip(ours["id"].to_pylist(), ours["p"].to_pylist(), ours["v"].to_pylist())} == {
        k: v for k, (v, _) in want.items()}
    java = java_oracle.read(path)
    assert sort_table(java, ["id"]).equals(sort_table(ours.cast(java.schema), ["id"]))


def test_full_compaction_and_maintenance(java_oracle, pypaimon_oracle, tmp_path) -> None:
    path = str(tmp_path / "wh/db.db/m")
    opts = {**DV, "primary-key": "id,p", "partition": "p", "bucket": "2", "rowkind.field": "op"}
    commits = rounds(200, ["x"], 4)
    for rows in commits:
        commit(path, rows, opts)
    assert assert_valid_dvs(path) > 0
    # expiring all but the latest snapshot and removing orphans keeps the live vectors
    table = Table.load(path)
    expire_snapshots(table, retain_min=1, retain_max=1)
    remove_orphan_files(Table.load(path), older_than_ms=0)
    assert assert_valid_dvs(path) > 0  # every live index file is still there
    # and only those: the replaced vectors' files went with the expired snapshots
    t = Table.load(path)
    snap = t.latest_snapshot()
    live = {e.index_file.file_name for e in IndexManifestFile(t.io, t.root).read(snap.index_manifest)}
    assert set(t.io.list_names(f"{t.root}/index")) == live
    assert_oracles_agree(path, java_oracle, pypaimon_oracle, expected(commits))
    # a full compaction rewrites every bucket into one file: no vector is left
    compact_in_process(Table.load(path), None, full=True)
    assert assert_valid_dvs(path) == 0
    assert_oracles_agree(path, java_oracle, pypaimon_oracle, expected(commits))


def test_append_table_compaction_keeps_deletions(java_oracle, tmp_path) -> None:
    """An append table with Java-written deletion vectors, compacted by paimon_ds: the deleted rows stay
    deleted (not rewritten) and the compacted files' vectors leave the index."""
    from .java_scripts import append_deletes
    path = str(tmp_path / "wh/db.db/ap")
    data = pa.table({"id": pa.array(range(60), pa.int32()), "v": [f"v{i}" for i in range(60)]})
    for _ in range(2):  # a full compaction takes any two small files
        java_oracle.write(path, data, bucket=1, options={**DV, "bucket-key": "id"})
    java_oracle.exec(path, append_deletes(0, 4))
    before = java_oracle.read(path)
    assert before.num_rows == 2 * 45
    compact_in_process(Table.load(path), None, full=True)
    t = Table.load(path)
    assert t.latest_snapshot().commit_kind == "COMPACT"
    ours = t.to_arrow()
    assert sort_table(ours).equals(sort_table(before.cast(ours.schema)))
    assert sort_table(java_oracle.read(path)).equals(sort_table(before))
    live = {e.file.file_name for e in t.new_scan().read_entries(t.latest_snapshot())}
    snap = t.latest_snapshot()
    names = [n for e in IndexManifestFile(t.io, t.root).read(snap.index_manifest) if snap.index_manifest
             for n, *_ in e.index_file.dv_ranges or ()]
    assert set(names) <= live and np.all([n in live for n in names])


def test_append_table_delete_and_update(spark, java_oracle, pypaimon_oracle, tmp_path) -> None:
    """On an append table with deletion vectors, paimon_ds.delete writes vectors (no file is rewritten), as
    Paimon's Spark DELETE does; paimon_ds.update rewrites the touched files (copy-on-write) without their
    deleted rows and drops their vectors."""
    import paimon_ds

    from .java_scripts import append_deletes
    path = str(tmp_path / "wh/db.db/ad")
    data = pa.table({"id": pa.array(range(80), pa.int32()), "v": [f"v{i}" for i in range(80)]})
    java_oracle.write(path, data, bucket=2, options={**DV, "bucket-key": "id"})
    java_oracle.write(path, data.slice(0, 40), options=DV)  # files the UPDATE does not touch
    java_oracle.exec(path, append_deletes(0, 3))
    visible = java_oracle.read(path)
    t = Table.load(path)
    files_before = {e.file.file_name for e in t.new_scan().read_entries(t.latest_snapshot())}

    snap = paimon_ds.delete(spark, path, "id % 5 = 1 OR id >= 75")
    assert snap.commit_kind == "OVERWRITE"  # rows were deleted: Paimon 1.4's kind (0.9 committed COMPACT)
    mask = [not (i % 5 == 1 or i >= 75) for i in visible["id"].to_pylist()]
    want = visible.filter(pa.array(mask))
    t = Table.load(path)
    assert {e.file.file_name for e in t.new_scan().read_entries(t.latest_snapshot())} == files_before
    ours = t.to_arrow()
    assert sort_table(ours).equals(sort_table(want.cast(ours.schema)))
    assert sort_table(java_oracle.read(path)).equals(sort_table(want))
    assert assert_append_dvs(path) == 120 - want.num_rows  # every deleted row is in a vector
    read = spark.read.format("paimon").load(path).toArrow()  # the Spark source applies the vectors too
    assert sort_table(read).equals(sort_table(want.cast(read.schema)))

    paimon_ds.update(spark, path, {"v": "'new'"}, "id >= 60")
    want = pa.table({"id": want["id"], "v": [("new" if i >= 60 else v) for i, v in zip(
        want["id"].to_pylist(), want["v"].to_pylist())]})
    ours = Table.load(path).to_arrow()
    assert sort_table(ours).equals(sort_table(want.cast(ours.schema)))
    assert sort_table(java_oracle.read(path)).equals(sort_table(want))
    assert assert_append_dvs(path) > 0  # the untouched files keep theirs


def assert_append_dvs(path: str) -> int:
    """DV entries name live files only; the number of deleted positions."""
    t = Table.load(path)
    snap = t.latest_snapshot()
    live = {e.file.file_name: e.file for e in t.new_scan().read_entries(snap)}
    count = 0
    for e in IndexManifestFile(t.io, t.root).read(snap.index_manifest):
        for name, positions in read_index_file(t.io, index_file_path(t.store, e.partition, e.bucket, e.index_file),
                                               e.index_file).items():
            assert positions.max() < live[name].row_count
            count += len(positions)
    return count


def test_overwrite_lifts_level0(java_oracle, tmp_path) -> None:
    """An overwrite's new files are compacted up too (readers skip level 0); the replaced files' vectors
    leave with them."""
    path = str(tmp_path / "wh/db.db/ow")
    opts = {**DV, "primary-key": "id,p", "partition": "p", "bucket": "1", "rowkind.field": "op"}
    for rows in rounds(100, ["a", "b"], 3):
        commit(path, rows, opts)
    rows = [(i, "a", f"o{i}", i, "+I") for i in range(0, 50, 2)]
    data = pa.table({name: [r[i] for r in rows] for i, name in enumerate(SCHEMA.names)}, schema=SCHEMA)
    t = Table.for_write(path, SCHEMA, opts)
    w = t.new_write()
    w.write_arrow(data)
    t.new_commit("dv-test").overwrite(w.prepare_commit(), partitions=_partitions(t, "a"))
    want = {k: v for k, v in expected(rounds(100, ["a", "b"], 3)).items() if k[1] == "b"}
    want.update({(i, "a"): (v, n) for i, _, v, n, _ in rows})
    ours = Table.load(path).to_arrow()
    assert contents(ours) == want
    assert contents(java_oracle.read(path)) == want
    assert_valid_dvs(path)


def _partitions(t: Table, value: str) -> set[bytes]:
    """The serialized partition row(s) of p = value among the table's files."""
    scan = t.new_scan()
    return {e.partition for e in scan.read_entries(t.latest_snapshot())
            if scan.partition_dir(e.partition) == f"p={value}"}
