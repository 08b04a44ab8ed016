"""Index files beside the data (`index-file-in-data-file-dir`, Paimon 1.x; pypaimon 2.1 is the oracle).

With the option a bucket's hash index and deletion-vector files live in its data directory
(`<partition>/bucket-N/index-<uuid>-<n>`), named by file name only in the index manifest; readers derive
the directory from the option. Under `data-file.external-paths` they go under an external root and the entry
records `_EXTERNAL_PATH`. pypaimon 2.1 writes hash indexes this way (dynamic-bucket tables); neither oracle
writes deletion vectors this way for ordinary tables (Java 0.9 predates the option; pypaimon 2.1 writes
vectors only for data-evolution deletes by row id), so Java 0.9's deletion-vector tables are moved into
Paimon 1.x's layout here: the same files, in the bucket directories, the option set in the schema, exactly
what a 1.x writer leaves (its manifest entries carry no location either).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import sort_table
from deletionvectors.java_scripts import append_deletes, pk_writes

import paimon_ds
from paimon_ds import Table
from paimon_ds.index.bucket_assigner import snapshot_index_entries
from paimon_ds.index.hash_index import read_hash_index
from paimon_ds.index.manifest import DELETION_VECTORS_INDEX, HASH_INDEX, IndexManifestFile
from paimon_ds.index.paths import IN_DATA_DIR, bucket_dir
from paimon_ds.operation.compact import compact_in_process, plan_compaction, run_compaction
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.options.registry import OptionError
from paimon_ds.schema.change import SetOption, commit_changes
from paimon_ds.snapshot.manager import SnapshotManager

IN_DIR = {IN_DATA_DIR: "true"}
SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.string())])


def data(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "p": ["a" if i % 3 else "b" for i in ids],
                     "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["p"], r["v"]) for r in t.to_pylist())


def spark_rows(spark, path: str, **options: str) -> list[tuple]:
    return sorted((r.id, r.p, r.v) for r in spark.read.format("paimon").options(**options).load(path).collect())


def index_entries(path: str, snapshot_id: int | None = None) -> list:
    t = Table.load(path)
    snap = t.snapshot_manager.snapshot(snapshot_id) if snapshot_id else t.latest_snapshot()
    return IndexManifestFile(t.io, t.root).read(snap.index_manifest) if snap.index_manifest else []


def index_files_on_disk(path: str) -> list[str]:
    """Table-relative paths of every index file under the table (not index manifests)."""
    root = Path(path)
    return sorted(str(p.relative_to(root)) for p in root.rglob("index-*") if "manifest" not in p.parts)


def assert_beside_the_data(path: str, kinds: set[str]) -> None:
    """Every index file the latest snapshot lists lies in its bucket's directory, under the name the entry gives;
    `index/` holds nothing."""
    t = Table.load(path)
    entries = index_entries(path)
    assert {e.index_file.index_type for e in entries} == kinds
    for e in entries:
        assert e.index_file.external_path is None
        assert (Path(path) / bucket_dir(t.store, e.partition, e.bucket) / e.index_file.file_name).is_file()
    assert not (Path(path) / "index").exists() or not os.listdir(Path(path) / "index")


def assert_one_bucket_per_key(path: str) -> None:
    """Each key in one bucket of its partition, and in that bucket's hash index (which also keeps the hashes of
    deleted keys, as Paimon's does); no hash in two buckets' indexes of one partition."""
    from paimon_ds.index.bucket_assigner import key_hashes
    t = Table.load(path)
    found: dict[tuple, set[int]] = {}
    for split in t.new_scan().plan():
        for b in t.new_read().read(split):
            hashes = key_hashes(t.store, pa.Table.from_batches([b]))
            found.setdefault((split.partition, split.bucket), set()).update(hashes.tolist())
    indexed = {(e.partition, e.bucket): set(read_hash_index(t.store, e.partition, e.bucket, e.index_file).tolist())
               for e in snapshot_index_entries(t.store, t.latest_snapshot())}
    assert all(hs <= indexed[key] for key, hs in found.items())
    for (p, b), hs in indexed.items():
        assert not any(hs & other for (p2, b2), other in indexed.items() if p2 == p and b2 != b)


# ---------------------------------------------------------------- hash indexes: pypaimon writes, paimon_ds reads
@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_pypaimon_dynamic_bucket_table_is_read_and_continued(pypaimon_oracle, spark, table_path, file_format):
    options = {**IN_DIR, "bucket": "-1", "dynamic-bucket.target-row-num": "25", "file.format": file_format}
    pypaimon_oracle.write(table_path, data(range(0, 100), "a"), primary_key="id,p", partition="p", options=options)
    pypaimon_oracle.write(table_path, data(range(50, 150), "b"), primary_key="id,p", partition="p", options=options)
    assert_beside_the_data(table_path, {HASH_INDEX})
    expected = rows(pypaimon_oracle.read(table_path))
    assert len(expected) == 150
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert spark_rows(spark, table_path) == expected
    assert_one_bucket_per_key(table_path)

    # paimon_ds continues it: known keys stay in their buckets, new ones fill the index beside the data
    spark.createDataFrame(data(range(120, 200), "c").to_pylist(), "id int, p string, v string") \
        .write.format("paimon").mode("append").save(table_path)
    assert_beside_the_data(table_path, {HASH_INDEX})
    assert_one_bucket_per_key(table_path)
    model = {(i, p): v for i, p, v in expected} | {(i, p): v for i, p, v in rows(data(range(120, 200), "c"))}
    expected = sorted((i, p, v) for (i, p), v in model.items())
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert rows(pypaimon_oracle.read(table_path)) == expected
    # ... and pypaimon continues paimon_ds's index: no key lands in a second bucket
    pypaimon_oracle.write(table_path, data(range(190, 230), "d"), primary_key="id,p", partition="p", options=options)
    model |= {(i, p): v for i, p, v in rows(data(range(190, 230), "d"))}
    expected = sorted((i, p, v) for (i, p), v in model.items())
    assert rows(Table.load(table_path).to_arrow()) == expected == rows(pypaimon_oracle.read(table_path))
    assert_one_bucket_per_key(table_path)


# ---------------------------------------------------------------- deletion vectors: Java's, in 1.x's layout
def upsert_commits(n: int, parts: list[str]) -> list[list]:
    """Ids 0..n-1 per partition, then four commits of upserts and deletes over overlapping ids."""
    commits = [[("+I", i, p, f"{p}-a{i}") for p in parts for i in range(n)]]
    for r in range(4):
        commits.append([("+I", i, p, f"{p}-r{r}-{i}") for p in parts for i in range(r * 5, n + 20, 7)]
                       + [("-D", i, p, None) for p in parts for i in range(r, n, 11 + r)])
    return commits


def move_index_files_beside_the_data(path: str) -> int:
    """Paimon 1.x's layout for a table Java 0.9 wrote: every index file any snapshot lists moves from `index/` to
    its bucket's directory, and the option goes into every schema file. Returns the files moved."""
    t = Table.load(path)
    moved = 0
    for sid in t.snapshot_manager.list_ids():
        for e in index_entries(path, sid):
            src = Path(path) / "index" / e.index_file.file_name
            if src.exists():
                dst = Path(path) / bucket_dir(t.store, e.partition, e.bucket) / e.index_file.file_name
                dst.parent.mkdir(parents=True, exist_ok=True)
                src.rename(dst)
                moved += 1
    for schema_file in (Path(path) / "schema").glob("schema-*"):
        schema = json.loads(schema_file.read_text())
        schema["options"][IN_DATA_DIR] = "true"
        schema_file.write_text(json.dumps(schema, indent=2))
    return moved


@pytest.mark.parametrize("file_format", ["parquet", "orc", "avro"])
def test_java_deletion_vectors_beside_the_data(java_oracle, spark, tmp_path, file_format):
    pk = str(tmp_path / "wh/db.db/pk")
    java_oracle.exec(pk, pk_writes(upsert_commits(60, ["a", "b"]), {"deletion-vectors.enabled": "true", "bucket": "2",
                                                                   "file.format": file_format},
                                   str(tmp_path / "io"), partition=["p"]))
    append = str(tmp_path / "wh/db.db/ap")
    append_data = pa.table({"id": pa.array(range(90), pa.int32()), "p": ["a", "b", "c"] * 30,
                            "v": [f"v{i}" for i in range(90)]})
    java_oracle.write(append, append_data, partition="p", bucket=-1,
                      options={"deletion-vectors.enabled": "true", "file.format": file_format})
    java_oracle.exec(append, append_deletes(1, 4))
    for path in (pk, append):
        ids = Table.load(path).snapshot_manager.list_ids()
        with_vectors = [sid for sid in ids if any(e.index_file.dv_ranges for e in index_entries(path, sid))]
        picked = sorted({with_vectors[-1], ids[-1]})  # the latest snapshot holding vectors, and the latest
        java = {sid: sort_table(java_oracle.read(path, snapshot=sid)) for sid in picked}
        assert move_index_files_beside_the_data(path) > 0
        assert_beside_the_data(path, {DELETION_VECTORS_INDEX})
        for sid in picked:
            ours = Table.load(path, {"scan.snapshot-id": str(sid)}).to_arrow()
            assert sort_table(ours).equals(java[sid].cast(ours.schema)), f"{path} snapshot {sid}"
        latest = rows(java[ids[-1]])
        assert spark_rows(spark, path) == latest and len(latest) < (90 if path == append else 120)


# ---------------------------------------------------------------- paimon_ds writes, pypaimon reads
def write(path: str, table: pa.Table, options: dict[str, str]) -> None:
    t = Table.for_write(path, table.schema, options)
    w = t.new_write()
    w.write_arrow(table)
    t.new_commit().commit(w.prepare_commit())


@pytest.mark.parametrize("bucket", ["2", "-1"])
def test_paimon_ds_deletion_vectors_and_hash_index_beside_the_data_read_by_pypaimon(pypaimon_oracle, spark,
                                                                                   table_path, bucket):
    """A primary-key table with deletion vectors (fixed or dynamic buckets: then hash indexes too), upserted
    and deleted in several commits, its lookup compaction writing vectors into the bucket directories."""
    options = {**IN_DIR, "primary-key": "id,p", "partition": "p", "bucket": bucket,
               "deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "20"}
    model: dict[tuple, str] = {}
    for r, (lo, hi) in enumerate([(0, 60), (30, 90), (10, 50), (70, 120)]):
        batch = data(range(lo, hi, 1 + r % 2), f"r{r}-")
        write(table_path, batch, options)
        model |= {(i, p): v for i, p, v in rows(batch)}
    paimon_ds.delete(spark, table_path, "id % 7 = 0")
    model = {k: v for k, v in model.items() if k[0] % 7}
    expected = sorted((i, p, v) for (i, p), v in model.items())
    kinds = {DELETION_VECTORS_INDEX} | ({HASH_INDEX} if bucket == "-1" else set())
    assert_beside_the_data(table_path, kinds)
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert spark_rows(spark, table_path) == expected
    assert rows(pypaimon_oracle.read(table_path)) == expected
    if bucket == "-1":
        assert_one_bucket_per_key(table_path)


def test_append_deletion_vectors_beside_the_data_read_by_pypaimon(pypaimon_oracle, spark, table_path):
    """DELETE on an append table with deletion vectors (unaware buckets: the vectors of bucket 0's files)."""
    options = {**IN_DIR, "partition": "p", "deletion-vectors.enabled": "true"}
    write(table_path, data(range(0, 80), "a"), options)
    write(table_path, data(range(80, 120), "b"), options)
    paimon_ds.delete(spark, table_path, "id % 5 = 1")
    paimon_ds.delete(spark, table_path, "id % 5 = 2 AND p = 'a'")
    expected = [r for r in rows(data(range(0, 80), "a")) + rows(data(range(80, 120), "b"))
                if r[0] % 5 != 1 and not (r[0] % 5 == 2 and r[1] == "a")]
    assert_beside_the_data(table_path, {DELETION_VECTORS_INDEX})
    assert rows(Table.load(table_path).to_arrow()) == sorted(expected)
    assert spark_rows(spark, table_path) == sorted(expected)
    assert rows(pypaimon_oracle.read(table_path)) == sorted(expected)


def test_external_paths_hold_index_files_with_their_location(pypaimon_oracle, table_path, tmp_path):
    """With `data-file.external-paths` an index file goes under an external root as data files do, and its
    manifest entry records where (`_EXTERNAL_PATH`, then written in the index manifest)."""
    ext = tmp_path / "ext"
    ext.mkdir()
    options = {**IN_DIR, "primary-key": "id,p", "partition": "p", "bucket": "-1", "deletion-vectors.enabled": "true",
               "data-file.external-paths": f"file://{ext}", "data-file.external-paths.strategy": "round-robin"}
    # the second write's level-0 runs are far smaller than the first's level-5 files, so universal compaction
    # merges them into level 4 (size ratio), deleting the older versions of their keys by vectors
    write(table_path, data(range(0, 400), "a"), options)
    write(table_path, data(range(20, 60), "b"), options)
    entries = index_entries(table_path)
    assert sorted(e.index_file.index_type for e in entries) == [DELETION_VECTORS_INDEX] * 2 + [HASH_INDEX] * 2
    store = Table.load(table_path).store
    for e in entries:
        assert e.index_file.external_path == f"file:{ext}/{bucket_dir(store, e.partition, e.bucket)}" \
                                             f"/{e.index_file.file_name}"
        assert Path(e.index_file.external_path[len("file:"):]).is_file()
    assert index_files_on_disk(table_path) == []
    latest = {(i, p): v for i, p, v in rows(data(range(0, 400), "a")) + rows(data(range(20, 60), "b"))}
    expected = sorted(latest.items())
    expected = [(i, p, v) for (i, p), v in expected]
    assert rows(Table.load(table_path).to_arrow()) == expected
    assert rows(pypaimon_oracle.read(table_path)) == expected


# ---------------------------------------------------------------- maintenance, abort, refusals
def test_expiry_orphans_and_abort_beside_the_data(pypaimon_oracle, table_path, monkeypatch):
    options = {**IN_DIR, "primary-key": "id,p", "partition": "p", "bucket": "-1", "deletion-vectors.enabled": "true",
               "dynamic-bucket.target-row-num": "20"}
    write(table_path, data(range(0, 200), "a"), options)
    for r in range(1, 4):
        write(table_path, data(range(r * 15, r * 15 + 20), f"r{r}-"), options)
    t = Table.load(table_path)
    live = {f"{bucket_dir(t.store, e.partition, e.bucket)}/{e.index_file.file_name}" for e in index_entries(table_path)}
    before = set(index_files_on_disk(table_path))
    assert live < before  # older snapshots' index files are still there
    expected = rows(Table.load(table_path).to_arrow())

    # a commit that cannot land deletes the hash index files it merged beside the data, abort its data files
    w = Table.for_write(table_path, SCHEMA, options).new_write()
    w.write_arrow(data(range(200, 260), "x"))
    messages = w.prepare_commit()
    monkeypatch.setattr(SnapshotManager, "try_commit", lambda self, snapshot: False)
    with pytest.raises(CommitConflict, match="gave up committing"):
        Table.load(table_path, {"commit.max-retries": "0"}).new_commit().commit(messages)
    monkeypatch.undo()
    Table.load(table_path).new_commit().abort(messages)
    assert set(index_files_on_disk(table_path)) == before
    # a compaction whose commit is abandoned: the deletion-vector files it wrote beside the data go with abort()
    write(table_path, data(range(0, 200, 40), "y"), {**options, "write-only": "true"})  # a few keys into level 0
    before = set(index_files_on_disk(table_path))
    compactions = [run_compaction(Table.load(table_path), task, False)
                   for task in plan_compaction(Table.load(table_path))]
    written = {f"{m.directory_rel}/{f.file_name}" for m in compactions for f in m.new_index_files}
    assert written and written <= set(index_files_on_disk(table_path)) - before
    Table.load(table_path).new_commit().abort(compactions)
    assert set(index_files_on_disk(table_path)) == before
    compact_in_process(Table.load(table_path), None)  # lifts level 0 for real
    t = Table.load(table_path)
    live = {f"{bucket_dir(t.store, e.partition, e.bucket)}/{e.index_file.file_name}" for e in index_entries(table_path)}
    before = set(index_files_on_disk(table_path))
    expected = rows(t.to_arrow())
    assert expected == rows(pypaimon_oracle.read(table_path))

    # expiry: the expired snapshots' index files go from the bucket directories, the live ones stay
    result = expire_snapshots(Table.load(table_path), retain_min=1, retain_max=1)
    assert result.expired
    assert set(index_files_on_disk(table_path)) == live
    assert sorted(f for f in result.deleted_files if "/bucket-" in f and "/index-" in f) == sorted(before - live)

    # orphans: an unreferenced index file beside the data goes once old enough; referenced ones stay
    stray = Path(table_path) / next(iter(live)).rsplit("/", 1)[0] / "index-00000000-0000-0000-0000-000000000000-0"
    stray.write_bytes(b"\x00\x00\x00\x01")
    old = time.time() - 3 * 86400
    os.utime(stray, (old, old))
    for rel in live:
        os.utime(Path(table_path) / rel, (old, old))
    assert remove_orphan_files(Table.load(table_path), dry_run=True) == [str(stray.relative_to(table_path))]
    remove_orphan_files(Table.load(table_path))
    assert not stray.exists() and set(index_files_on_disk(table_path)) == live
    assert rows(Table.load(table_path).to_arrow()) == expected == rows(pypaimon_oracle.read(table_path))


def test_the_option_cannot_move_index_files_of_a_table(table_path):
    write(table_path, data(range(10), "a"), {**IN_DIR, "primary-key": "id,p", "partition": "p", "bucket": "-1"})
    before = sorted(str(p) for p in Path(table_path).rglob("*"))
    with pytest.raises(OptionError, match="index-file-in-data-file-dir"):
        Table.load(table_path, {IN_DATA_DIR: "false"})
    with pytest.raises(OptionError, match="index-file-in-data-file-dir"):
        write(table_path, data(range(10, 20), "b"), {IN_DATA_DIR: "false"})
    with pytest.raises(OptionError, match="index-file-in-data-file-dir"):
        commit_changes(table_path, SetOption(IN_DATA_DIR, "false"))
    assert sorted(str(p) for p in Path(table_path).rglob("*")) == before
