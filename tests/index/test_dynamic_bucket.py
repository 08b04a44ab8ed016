"""Dynamic-bucket tables (bucket=-1, Paimon's HASH_DYNAMIC) in the core: hash index files, index
manifests, the bucket assigner, the writers' index upkeep, commit conflicts, overwrite, compaction,
expiry and orphan removal. Interop with Java Paimon 0.9 and pypaimon: tests/interop.
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
import time
from collections import Counter

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.binary_row import deserialize_row, serialize_row
from paimon_ds.index.bucket_assigner import (
    BUCKET_COLUMN,
    DynamicBucketAssigner,
    PartitionIndex,
    assigner_ids,
    key_hashes,
    partition_hash,
    partition_hashes,
    snapshot_index_entries,
)
from paimon_ds.index.hash_index import IndexFileNamer, read_hash_index, write_hash_index
from paimon_ds.index.manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry, IndexManifestFile, combine
from paimon_ds.manifest.meta import FileKind
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import expire_snapshots, remove_orphan_files
from paimon_ds.options.registry import OptionError
from paimon_ds.schema.types import SchemaError

SCHEMA = pa.schema([("id", pa.int32()), ("dt", pa.string()), ("op", pa.string()), ("v", pa.int64())])
TARGET = 50
OPTIONS = {"primary-key": "id,dt", "partition": "dt", "bucket": "-1", "rowkind.field": "op",
           "dynamic-bucket.target-row-num": str(TARGET)}
DTS = ("2024-05-01", "2024-05-02", "2024-05-03")


def rows_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def write(path: str, rows: list[dict], options: dict | None = None, **write_kw):
    table = Table.for_write(path, SCHEMA, options or OPTIONS)
    w = table.new_write(**write_kw)
    w.write_arrow(rows_table(rows))
    return table.new_commit().commit(w.prepare_commit())


def contents(path: str) -> dict[tuple[int, str], int]:
    rows = Table.load(path).to_arrow().to_pylist()
    out = {(r["id"], r["dt"]): r["v"] for r in rows}
    assert len(out) == len(rows), "a key is stored twice"
    return out


def key_buckets(path: str) -> dict[tuple[int, str], int]:
    """The bucket every live key is read from (one split per bucket of a primary-key table)."""
    table = Table.load(path)
    out: dict[tuple[int, str], int] = {}
    for split in table.new_scan().plan():
        for batch in table.new_read().read(split):
            for r in batch.to_pylist():
                assert (r["id"], r["dt"]) not in out, f"key {(r['id'], r['dt'])} lives in two buckets"
                out[(r["id"], r["dt"])] = split.bucket
    return out


def hash_index(path: str) -> dict[tuple[str, int], np.ndarray]:
    """(dt, bucket) -> the bucket's hashes, from the latest snapshot's index manifest."""
    table = Table.load(path)
    out = {}
    for e in snapshot_index_entries(table.store, table.latest_snapshot()):
        dt = partition_value(table, e.partition)
        assert (dt, e.bucket) not in out
        hashes = read_hash_index(table.store, e.partition, e.bucket, e.index_file)
        assert e.index_file.row_count == len(hashes) == len(np.unique(hashes))
        assert e.index_file.file_size == 4 * len(hashes)
        out[(dt, e.bucket)] = hashes
    return out


def partition_value(table: Table, partition: bytes) -> str:
    return deserialize_row(partition, [f.type for f in table.table_schema.partition_fields])[0]


def hash_of(path: str, key: tuple[int, str]) -> int:
    table = Table.load(path)
    batch = pa.table({"id": pa.array([key[0]], pa.int32()), "dt": [key[1]]})
    return int(key_hashes(table.store, batch)[0])


# ------------------------------------------------------------------------------------ file formats
def test_hash_index_file_is_big_endian_int32(tmp_path):
    table = Table.for_write(str(tmp_path / "t"), SCHEMA, OPTIONS)
    hashes = np.array([1, -1, 2**31 - 1, -(2**31), 0x01020304], dtype=np.int32)
    meta = write_hash_index(table.store, b"", 0, hashes, IndexFileNamer("abcdef012345"))
    assert meta == IndexFileMeta(HASH_INDEX, meta.file_name, 20, 5)
    assert meta.file_name.startswith("index-abcdef01-2345-") and meta.file_name.endswith("-0")
    raw = (tmp_path / "t" / "index" / meta.file_name).read_bytes()
    assert raw == struct.pack(">5i", 1, -1, 2**31 - 1, -(2**31), 0x01020304)
    (tmp_path / "t" / "index" / meta.file_name).write_bytes(raw + b"\x07\x07")  # a torn tail is not a hash
    assert read_hash_index(table.store, b"", 0, meta).tolist() == hashes.tolist()


def test_index_manifest_has_paimon_09_layout(tmp_path):
    table = Table.for_write(str(tmp_path / "t"), SCHEMA, OPTIONS)
    part = serialize_row(["2024-05-01"], [table.table_schema.field("dt").type])
    entries = [IndexManifestEntry(FileKind.ADD, part, 3, IndexFileMeta(HASH_INDEX, "index-x-0", 8, 2)),
               IndexManifestEntry(FileKind.ADD, part, 0, IndexFileMeta("DELETION_VECTORS", "index-y-0", 30, 1,
                                                                     (("data-a.parquet", 1, 12),)))]
    mf = IndexManifestFile(table.io, table.root)
    name = mf.write(entries)
    assert name.startswith("index-manifest-") and name.endswith("-0")
    reader = fastavro.reader(io.BytesIO((tmp_path / "t" / "manifest" / name).read_bytes()))
    schema = reader.writer_schema
    assert schema["name"] == "org.apache.paimon.avro.generated.record"
    assert [(f["name"], f["type"]) for f in schema["fields"][:8]] == [
        ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
        ("_INDEX_TYPE", "string"), ("_FILE_NAME", "string"), ("_FILE_SIZE", "long"), ("_ROW_COUNT", "long")]
    ranges = schema["fields"][8]
    assert ranges["name"] == "_DELETIONS_VECTORS_RANGES" and ranges["default"] is None
    item = ranges["type"][1]["items"][1]
    assert item["name"] == "org.apache.paimon.avro.generated.record__DELETIONS_VECTORS_RANGES"
    assert [(f["name"], f["type"]) for f in item["fields"]] == [("f0", "string"), ("f1", "int"), ("f2", "int")]
    assert reader.metadata["avro.codec"] == "zstandard"
    records = list(reader)
    assert [r["_VERSION"] for r in records] == [1, 1]
    assert records[1]["_DELETIONS_VECTORS_RANGES"] == [{"f0": "data-a.parquet", "f1": 1, "f2": 12}]
    assert mf.read(name) == entries


def test_combine_replaces_a_bucket_hash_file_and_keeps_the_rest():
    def e(bucket, name, kind=FileKind.ADD, itype=HASH_INDEX, part=b"p"):
        return IndexManifestEntry(kind, part, bucket, IndexFileMeta(itype, name, 4, 1))
    prev = [e(0, "a"), e(1, "b"), e(0, "dv1", itype="DELETION_VECTORS"), e(0, "dv2", itype="DELETION_VECTORS"),
            e(0, "c", part=b"q")]
    got = combine(prev, [e(1, "b2"), e(2, "n"), e(0, "a", FileKind.DELETE)])
    assert sorted((x.partition, x.bucket, x.index_file.file_name) for x in got) == [
        (b"p", 0, "dv1"), (b"p", 0, "dv2"), (b"p", 1, "b2"), (b"p", 2, "n"), (b"q", 0, "c")]
    with pytest.raises(ValueError, match="only ADD"):
        combine([e(0, "a", FileKind.DELETE)], [])


# --------------------------------------------------------------------------------------- hashing
def test_key_and_partition_hashes_are_binary_row_hash_codes(tmp_path):
    import mmh3
    table = Table.for_write(str(tmp_path / "t"), SCHEMA, OPTIONS)
    batch = pa.record_batch([pa.array([7, -3], pa.int32()), pa.array(["2024-05-01", "a-much-longer-partition"])],
                            names=["id", "dt"])
    # BinaryRow(id): 8-byte header (row kind 0, no nulls), one 8-byte slot holding the int
    assert key_hashes(table.store, batch).tolist() == [mmh3.hash(bytes(8) + struct.pack("<iI", v, 0), 42)
                                                       for v in (7, -3)]
    dt_type = table.table_schema.field("dt").type
    for i, dt in enumerate(["2024-05-01", "a-much-longer-partition"]):
        part = serialize_row([dt], [dt_type])
        assert partition_hashes(table.store, batch)[i] == partition_hash(part) == mmh3.hash(part[4:], 42)
    # an int64 input column is cast to the table's int first
    wide = pa.record_batch([pa.array([7, -3], pa.int64()), pa.array(["x", "y"])], names=["id", "dt"])
    assert key_hashes(table.store, wide).tolist() == key_hashes(table.store, batch).tolist()


def test_assigner_ids_follow_java_arithmetic():
    # BucketAssigner.computeAssigner: (abs(ph % channels) + abs(kh % assigners)) % channels, Java's %
    ph = np.array([-7, 7, 0, -(2**31), 2**31 - 1, 5], dtype=np.int32)
    kh = np.array([-3, 3, -(2**31), -1, 2**31 - 1, 6], dtype=np.int32)
    assert assigner_ids(ph, kh, 4, 2).tolist() == [0, 0, 0, 1, 0, 1]
    assert assigner_ids(ph, kh, 3, 3).tolist() == [1, 1, 2, 0, 2, 2]
    assert assigner_ids(ph, kh, 1, 1).tolist() == [0] * 6


# -------------------------------------------------------------------------------- partition index
def test_partition_index_fills_buckets_in_order_and_keeps_known_keys():
    rng = np.random.default_rng(0)
    index = PartitionIndex(np.empty(0, np.int32), np.empty(0, np.int16), {}, target=3)
    got = index.assign(np.array([10, 11, 10, 12, 13, 14, 15, 16], np.int32), 1, 0, -1, rng)
    assert got.tolist() == [0, 0, 0, 0, 1, 1, 1, 2]  # a repeated new hash keeps its first bucket
    assert index.assign(np.array([16, 10, 17, 18, 14], np.int32), 1, 0, -1, rng).tolist() == [2, 0, 2, 2, 1]
    assert index.bucket_sizes() == {0: 3, 1: 3, 2: 3}
    assert index.assign(np.array([99], np.int32), 1, 0, -1, rng).tolist() == [3]


def test_loaded_index_fills_non_full_buckets_first_and_assigners_own_disjoint_ids():
    rng = np.random.default_rng(0)
    # loaded: bucket 0 full, bucket 2 with room for 2 (bucket 1 is another assigner's, not counted)
    index = PartitionIndex(np.array([1, 2, 3, 4], np.int32), np.array([0, 0, 0, 2], np.int16),
                           {0: 3, 2: 1}, target=3)
    got = index.assign(np.array([1, 50, 51, 52, 53, 54, 55, 56], np.int32), 2, 0, -1, rng)
    assert got.tolist() == [0, 2, 2, 4, 4, 4, 6, 6]  # assigner 0 of 2 opens even ids only
    odd = PartitionIndex(np.empty(0, np.int32), np.empty(0, np.int16), {}, target=1)
    assert odd.assign(np.array([5, 6, 7], np.int32), 3, 1, -1, rng).tolist() == [1, 4, 7]


def test_max_buckets_caps_new_ids_then_picks_existing_buckets():
    rng = np.random.default_rng(0)
    index = PartitionIndex(np.empty(0, np.int32), np.empty(0, np.int16), {}, target=2)
    got = index.assign(np.arange(100, 120, dtype=np.int32), 1, 0, 3, rng)
    assert got[:6].tolist() == [0, 0, 1, 1, 2, 2]
    assert set(got[6:].tolist()) <= {0, 1, 2} and len(set(got[6:].tolist())) > 1  # random among the three
    again = index.assign(np.arange(100, 120, dtype=np.int32), 1, 0, 3, rng)
    assert again.tolist() == got.tolist()  # and remembered
    unlimited = PartitionIndex(np.empty(0, np.int32), np.empty(0, np.int16), {}, target=1)
    unlimited.total = list(range(32767))
    unlimited._total_set = set(unlimited.total)
    with pytest.raises(RuntimeError, match="Too many buckets"):
        unlimited.assign(np.array([1], np.int32), 1, 0, -1, rng)


def test_assigner_refuses_rows_of_another_channel_and_checks_options(tmp_path):
    path = str(tmp_path / "t")
    write(path, [{"id": 1, "dt": DTS[0], "op": "+I", "v": 1}])
    table = Table.load(path)
    batch = pa.table({"id": pa.array(range(2, 42), pa.int32()), "dt": [DTS[0]] * 40})
    ids = assigner_ids(partition_hashes(table.store, batch), key_hashes(table.store, batch), 2, 2)
    mine = batch.filter(pa.array(ids == 1))
    assert DynamicBucketAssigner(table.store, 2, 2, 1).assign(mine).tolist() == [1] * mine.num_rows
    with pytest.raises(ValueError, match="belong to another assigner"):
        DynamicBucketAssigner(table.store, 2, 2, 1).assign(batch)
    with pytest.raises(OptionError, match="max-buckets"):  # checked when the table is loaded with it
        DynamicBucketAssigner(Table.load(path, {"dynamic-bucket.max-buckets": "0"}).store)
    assert DynamicBucketAssigner(table.store, 8).num_assigners == 8
    # dynamic-bucket.initial-buckets is fixed when the table is created (@Immutable in Paimon 1.x): a job may not
    # change it, and a table created with it has that many assigners
    with pytest.raises(OptionError, match="option dynamic-bucket.initial-buckets='3' differs from the table's"):
        Table.load(path, {"dynamic-bucket.initial-buckets": "3"})
    other = str(tmp_path / "initial")
    write(other, [{"id": 1, "dt": DTS[0], "op": "+I", "v": 1}], {**OPTIONS, "dynamic-bucket.initial-buckets": "3"})
    assert DynamicBucketAssigner(Table.load(other).store, 8).num_assigners == 3


# ------------------------------------------------------------------------------ writes and commits
def test_model_random_upserts_and_deletes_over_commits(tmp_path):
    """Random upserts and deletes, 10 commits: after each, every live key exactly once with its
    latest value, in the bucket it first went to (even after a delete and re-insert), no bucket
    above the target, and each bucket's hash index holding its keys and only its."""
    path = str(tmp_path / "t")
    rnd = random.Random(6)
    model: dict[tuple[int, str], int] = {}
    home: dict[tuple[int, str], int] = {}
    written: set[tuple[int, str]] = set()
    for commit in range(10):
        rows = []
        for _ in range(rnd.randint(60, 160)):
            key = (rnd.randrange(300), rnd.choice(DTS))
            written.add(key)
            if rnd.random() < 0.15:
                rows.append({"id": key[0], "dt": key[1], "op": "-D", "v": None})
                model.pop(key, None)
            else:
                v = commit * 1000 + len(rows)
                rows.append({"id": key[0], "dt": key[1], "op": "+I", "v": v})
                model[key] = v
        write(path, rows)
        assert contents(path) == model
        buckets = key_buckets(path)
        for key, b in buckets.items():
            assert home.setdefault(key, b) == b, f"key {key} moved from bucket {home[key]} to {b}"
        index = hash_index(path)
        assert max(len(h) for h in index.values()) <= TARGET
        for dt in DTS:
            all_hashes = np.concatenate([h for (d, _), h in index.items() if d == dt])
            assert len(all_hashes) == len(np.unique(all_hashes)), "a hash is indexed in two buckets"
        for key, b in buckets.items():
            assert hash_of(path, key) in index[(key[1], b)]
    # the index holds the hash of every key ever written, deletes included (as Paimon's), and nothing else
    index = hash_index(path)
    assert sorted((d, int(h)) for (d, _), hs in index.items() for h in hs) == sorted(
        {(k[1], hash_of(path, k)) for k in written})
    per_partition = Counter(d for d, _ in index)
    assert all(n >= 2 for n in per_partition.values())  # buckets grew past the first in each partition


def test_bucket_growth_10k_keys(tmp_path):
    """10k keys per partition, target 1k: exactly ceil(distinct hashes / 1k) buckets, all full but
    the last, none above the target (a hash collision puts two keys in one slot: Paimon's only slack)."""
    path = str(tmp_path / "t")
    opts = dict(OPTIONS, **{"dynamic-bucket.target-row-num": "1000"})
    n = 10_000
    for dt in DTS[:2]:
        for start in range(0, n, 2500):  # four commits per partition: the index is reloaded each time
            ids = range(start, start + 2500)
            write(path, [{"id": i, "dt": dt, "op": "+I", "v": i} for i in ids], opts)
    table = Table.load(path)
    assert table.to_arrow().num_rows == 2 * n
    distinct = len(np.unique(key_hashes(table.store, pa.table({"id": pa.array(range(n), pa.int32()),
                                                          "dt": [DTS[0]] * n}))))
    for dt in DTS[:2]:
        sizes = {b: len(h) for (d, b), h in hash_index(path).items() if d == dt}
        assert sorted(sizes) == list(range(-(-distinct // 1000)))
        assert all(sizes[b] == 1000 for b in list(sizes)[:-1]) and sum(sizes.values()) == distinct
        rows = Counter(b for (i, d), b in key_buckets(path).items() if d == dt)
        assert max(rows.values()) <= 1000 + (n - distinct)


def test_given_bucket_column_is_used_and_dropped(tmp_path):
    path = str(tmp_path / "t")
    table = Table.for_write(path, SCHEMA, OPTIONS)
    data = rows_table([{"id": i, "dt": DTS[0], "op": "+I", "v": i} for i in range(6)])
    data = data.append_column(BUCKET_COLUMN, pa.array([5, 5, 7, 7, 7, 5], pa.int32()))
    w = table.new_write()
    w.write_arrow(data)
    table.new_commit().commit(w.prepare_commit())
    assert key_buckets(path) == {(i, DTS[0]): b for i, b in enumerate([5, 5, 7, 7, 7, 5])}
    assert {b: len(h) for (_, b), h in hash_index(path).items()} == {5: 3, 7: 3}
    assert list(Table.load(path).to_arrow().schema.names) == ["id", "dt", "op", "v"]
    w = Table.load(path).new_write()
    with pytest.raises(SchemaError, match="non-null integer bucket"):
        w.write_arrow(data.set_column(4, BUCKET_COLUMN, pa.array([1, None, 1, 1, 1, 1], pa.int32())))


def test_unchanged_index_is_not_rewritten_and_unpartitioned_tables_work(tmp_path):
    path = str(tmp_path / "t")
    opts = {"primary-key": "id", "bucket": "-1", "dynamic-bucket.target-row-num": "4"}
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])

    def put(ids, v):
        t = Table.for_write(path, schema, opts)
        w = t.new_write()
        w.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids)}, schema=schema))
        return t.new_commit().commit(w.prepare_commit())

    s1 = put(range(10), "a")
    s2 = put([1, 5, 9], "b")  # known keys only: same buckets, no new index file, same manifest
    assert s2.index_manifest == s1.index_manifest
    s3 = put([1, 10], "c")
    assert s3.index_manifest != s1.index_manifest
    t = Table.load(path)
    sizes = {e.bucket: e.index_file.row_count for e in snapshot_index_entries(t.store, s3)}
    assert sizes == {0: 4, 1: 4, 2: 3}
    got = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert got == {**{i: "a" for i in range(11)}, 1: "c", 5: "b", 9: "b", 10: "c"}
    assert [e.partition for e in snapshot_index_entries(t.store, s3)][0] == serialize_row([], [])


def test_concurrent_writers_of_one_bucket_merge_their_index(tmp_path):
    """Two writers from one snapshot add keys to bucket 0: the second commit merges its hashes into the file
    the first one committed (a key both put in different buckets is refused: tests/index/test_snapshot_assigner)."""
    path = str(tmp_path / "t")
    write(path, [{"id": i, "dt": DTS[0], "op": "+I", "v": 0} for i in range(10)])
    table = Table.for_write(path, SCHEMA, OPTIONS)
    first, second = table.new_write(), table.new_write()  # both from snapshot 1
    first.write_arrow(rows_table([{"id": 100, "dt": DTS[0], "op": "+I", "v": 1}]))
    second.write_arrow(rows_table([{"id": 200, "dt": DTS[0], "op": "+I", "v": 2}]))
    table.new_commit().commit(first.prepare_commit())
    table.new_commit().commit(second.prepare_commit())
    assert contents(path) == {**{(i, DTS[0]): 0 for i in range(10)}, (100, DTS[0]): 1, (200, DTS[0]): 2}
    assert len(hash_index(path)[(DTS[0], 0)]) == 12
    assert set(key_buckets(path).values()) == {0}
    assert set(os.listdir(tmp_path / "t" / "index")) == referenced_index_files(path)  # nothing of lost attempts


def test_index_hashes_of_several_writers_of_one_bucket_are_merged(tmp_path):
    path = str(tmp_path / "t")
    write(path, [{"id": i, "dt": DTS[0], "op": "+I", "v": 0} for i in range(5)])
    table = Table.for_write(path, SCHEMA, OPTIONS)
    messages = []
    for slot, ids in enumerate(([10, 11, 3], [12, 4])):
        data = rows_table([{"id": i, "dt": DTS[0], "op": "+I", "v": 1} for i in ids])
        w = table.new_write(task=slot)
        w.write_arrow(data.append_column(BUCKET_COLUMN, pa.array([0] * len(ids), pa.int32())))
        messages += w.prepare_commit()
    # writers write no index file: each hands over the hashes bucket 0's file lacks (keys 3 and 4 are in it)
    assert sorted(len(m.added_hashes) for m in messages) == [1, 2] and not any(m.new_index_files for m in messages)
    assert set(os.listdir(tmp_path / "t" / "index")) == referenced_index_files(path)
    table.new_commit().commit(messages)
    assert len(hash_index(path)[(DTS[0], 0)]) == 8
    assert referenced_index_files(path) == set(os.listdir(tmp_path / "t" / "index"))


def referenced_index_files(path: str) -> set[str]:
    """Index files some snapshot references (the older ones stay for time travel until expiry)."""
    t = Table.load(path)
    sm = t.snapshot_manager
    return {e.index_file.file_name for i in sm.list_ids() for e in snapshot_index_entries(t.store, sm.snapshot(i))}


def test_write_tasks_without_buckets(tmp_path):
    path = str(tmp_path / "t")
    table = Table.for_write(path, SCHEMA, OPTIONS)
    with pytest.raises(OptionError, match="must give each row its bucket"):  # the package's shuffle forgot it
        table.new_write(clustered=True).write_arrow(rows_table([{"id": 1, "dt": DTS[0], "op": "+I", "v": 1}]))
    # a task of a Spark write (task given) assigns from the snapshot alone: see test_snapshot_assigner
    w = table.new_write(task=1)
    w.write_arrow(rows_table([{"id": 1, "dt": DTS[0], "op": "+I", "v": 1}]))
    table.new_commit().commit(w.prepare_commit())
    assert contents(path) == {(1, DTS[0]): 1}


def test_compaction_keeps_the_index_and_overwrite_replaces_the_partitions(tmp_path):
    path = str(tmp_path / "t")
    for v in range(3):
        write(path, [{"id": i, "dt": dt, "op": "+I", "v": v} for i in range(120) for dt in DTS[:2]])
    table = Table.load(path)
    before = table.latest_snapshot()
    snap = compact_in_process(table, None, full=True)
    assert snap.commit_kind == "COMPACT" and snap.index_manifest == before.index_manifest
    assert contents(path) == {(i, dt): 2 for i in range(120) for dt in DTS[:2]}

    # dynamic overwrite of one partition: its index restarts from the new rows; the other keeps its own
    kept = {k: v for k, v in hash_index(path).items() if k[0] == DTS[1]}
    table = Table.for_write(path, SCHEMA, OPTIONS)
    w = table.new_write(overwrite=True)
    w.write_arrow(rows_table([{"id": i, "dt": DTS[0], "op": "+I", "v": 9} for i in range(500, 560)]))
    messages = w.prepare_commit()
    table.new_commit().overwrite(messages, partitions={m.partition for m in messages})
    index = hash_index(path)
    assert {k: len(v) for k, v in index.items() if k[0] == DTS[0]} == {(DTS[0], 0): 50, (DTS[0], 1): 10}
    assert all(np.array_equal(index[k], v) for k, v in kept.items())
    assert contents(path) == {**{(i, DTS[1]): 2 for i in range(120)}, **{(i, DTS[0]): 9 for i in range(500, 560)}}
    # an overwrite of the whole table drops every partition's index
    w = Table.for_write(path, SCHEMA, OPTIONS).new_write(overwrite=True)
    w.write_arrow(rows_table([{"id": 1, "dt": DTS[2], "op": "+I", "v": 1}]))
    Table.load(path).new_commit().overwrite(w.prepare_commit())
    assert {k: len(v) for k, v in hash_index(path).items()} == {(DTS[2], 0): 1}


def test_expire_and_orphan_removal_keep_referenced_index_files(tmp_path):
    path = str(tmp_path / "t")
    root = tmp_path / "t"
    for c in range(6):  # each commit adds keys: the index file of the last bucket is replaced each time
        write(path, [{"id": i, "dt": DTS[0], "op": "+I", "v": c} for i in range(c * 20, c * 20 + 30)])
    table = Table.load(path)
    all_index = set(os.listdir(root / "index"))
    live = {e.index_file.file_name for e in snapshot_index_entries(table.store, table.latest_snapshot())}
    assert live < all_index
    expected = contents(path)

    result = expire_snapshots(table, retain_min=2, retain_max=2)
    assert result.expired == [1, 2, 3, 4]
    snap5 = Table.load(path).snapshot_manager.snapshot(5)
    kept = live | {e.index_file.file_name for e in snapshot_index_entries(table.store, snap5)}
    assert set(os.listdir(root / "index")) == kept
    assert {f"index/{n}" for n in all_index - kept} <= set(result.deleted_files)
    manifests = set(os.listdir(root / "manifest"))
    assert {snap5.index_manifest, Table.load(path).latest_snapshot().index_manifest} <= manifests

    stray = root / "index" / "index-00000000-0000-0000-0000-000000000000-0"
    stray.write_bytes(b"\0\0\0\1")
    old = time.time() - 3 * 86400
    for p in root.rglob("*"):
        os.utime(p, (old, old))
    removed = remove_orphan_files(Table.load(path))
    assert removed == ["index/" + stray.name]
    assert set(os.listdir(root / "index")) == kept
    assert contents(path) == expected
    w = Table.for_write(path, SCHEMA, OPTIONS).new_write()  # the index still serves the next write
    w.write_arrow(rows_table([{"id": i, "dt": DTS[0], "op": "+I", "v": 7} for i in range(0, 130, 10)]))
    Table.load(path).new_commit().commit(w.prepare_commit())
    assert contents(path) == {**expected, **{(i, DTS[0]): 7 for i in range(0, 130, 10)}}


def test_table_options_checked(tmp_path):
    with pytest.raises(OptionError, match="Cannot define 'bucket-key' with bucket -1"):
        Table.for_write(str(tmp_path / "a"), SCHEMA, dict(OPTIONS, **{"bucket-key": "id"}))
    with pytest.raises(SchemaError, match="needs dynamic bucket mode"):  # cross-partition with fixed buckets
        Table.for_write(str(tmp_path / "b"), SCHEMA, dict(OPTIONS, **{"primary-key": "id", "bucket": "2"}))
    with pytest.raises(OptionError, match="target-row-num"):
        Table.for_write(str(tmp_path / "c"), SCHEMA, dict(OPTIONS, **{"dynamic-bucket.target-row-num": "0"}))
    assert Table.for_write(str(tmp_path / "d"), SCHEMA, {"primary-key": "id,dt", "partition": "dt"}).bucket == -1


# ------------------------------------------------------------------------------------------ soak
@pytest.mark.soak
def test_bucket_growth_1m_keys_per_partition(tmp_path):
    """1M keys per partition with target 100k: ceil(distinct hashes / 100k) buckets (10), none above
    the target by more than the keys whose hash collides with another key's."""
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
    opts = {"primary-key": "id,dt", "partition": "dt", "bucket": "-1", "dynamic-bucket.target-row-num": "100000",
            "write-buffer-size": "256mb"}
    n = 1_000_000
    t0 = time.time()
    for chunk in range(4):
        ids = np.arange(chunk * n // 4, (chunk + 1) * n // 4, dtype=np.int64)
        data = pa.table({"id": np.concatenate([ids, ids]), "dt": ["a"] * len(ids) + ["b"] * len(ids),
                         "v": np.concatenate([ids, ids])}, schema=schema)
        table = Table.for_write(path, schema, opts)
        w = table.new_write()
        w.write_arrow(data)
        table.new_commit().commit(w.prepare_commit())
    elapsed = time.time() - t0
    table = Table.load(path)
    distinct = len(np.unique(key_hashes(table.store, pa.table({"id": np.arange(n, dtype=np.int64), "dt": ["a"] * n}))))
    entries = snapshot_index_entries(table.store, table.latest_snapshot())
    for dt in ("a", "b"):
        sizes = sorted((e.bucket, e.index_file.row_count) for e in entries if partition_value(table, e.partition) == dt)
        assert [b for b, _ in sizes] == list(range(10))
        assert all(c == 100_000 for _, c in sizes[:-1]) and sum(c for _, c in sizes) == distinct
    rows = Counter()
    for s in table.new_scan().plan():
        rows[(s.partition, s.bucket)] += sum(f.row_count for f in s.files)
    assert sum(rows.values()) == 2 * n
    assert max(rows.values()) <= 100_000 + (n - distinct)
    print(json.dumps({"keys": 2 * n, "seconds": round(elapsed, 1), "distinct_hashes": distinct,
                      "buckets": len(rows), "max_rows_per_bucket": max(rows.values())}))
