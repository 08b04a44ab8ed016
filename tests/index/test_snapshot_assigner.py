"""Dynamic buckets without a shuffle (paimon_ds.index.snapshot_assigner): the tasks of one write assign buckets
independently, as a pure function of a key's hash and the base snapshot's index, and the commit merges the
hashes they add. Core only; the Spark entry points are in tests/spark/test_dynamic_bucket_entry_points.py."""

from __future__ import annotations

import os
import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.binary_row import deserialize_row
from paimon_ds.index.bucket_assigner import key_hashes, snapshot_index_entries
from paimon_ds.index.hash_index import read_hash_index
from paimon_ds.index.snapshot_assigner import (
    DEFAULT_INITIAL_BUCKETS,
    SnapshotBucketAssigner,
    candidate_buckets,
    mix32,
)
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.operation.write import BucketRestore

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
OPTIONS = {"primary-key": "id,dt", "partition": "dt", "dynamic-bucket.target-row-num": "100"}


def rows(ids, dt: str = "a", v: int = 0) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "v": pa.array([v] * len(ids), pa.int64())},
                    schema=SCHEMA)


def task_write(table: Table, restore: BucketRestore, slot: int, data: pa.Table, overwrite: bool = False):
    """One task of a Spark write: independent assignment, its own sequence slot."""
    w = table.new_write(restore=restore, task=slot, overwrite=overwrite)
    w.write_arrow(data)
    return w.prepare_commit()


def spark_like_write(path: str, parts: list[pa.Table], options: dict | None = None, overwrite: bool = False):
    table = Table.for_write(path, SCHEMA, options or OPTIONS)
    restore = BucketRestore.from_table(table)
    messages = [m for slot, part in enumerate(parts) for m in task_write(table, restore, slot, part, overwrite)]
    commit = table.new_commit()
    return (commit.overwrite(messages) if overwrite
            else commit.commit(messages, base_snapshot_id=restore.snapshot_id))


def layout(path: str) -> dict[tuple[str, int], list[int]]:
    """(dt, id) -> every bucket holding a row of the key, over all live files (a key must have one)."""
    table = Table.load(path)
    where: dict[tuple[str, int], set[int]] = defaultdict(set)
    for split in table.new_scan().plan():
        for batch in table.new_read().read(split):
            for r in batch.to_pylist():
                where[(r["dt"], r["id"])].add(split.bucket)
    return {k: sorted(v) for k, v in where.items()}


def index_of(path: str) -> dict[tuple[str, int], set[int]]:
    """(dt, bucket) -> hashes of the latest snapshot's index; no hash in two buckets of one partition."""
    table = Table.load(path)
    out: dict[tuple[str, int], set[int]] = {}
    for e in snapshot_index_entries(table.store, table.latest_snapshot()):
        dt = deserialize_row(e.partition, [table.table_schema.field("dt").type])[0]
        hashes = read_hash_index(table.store, e.partition, e.bucket, e.index_file)
        assert e.index_file.row_count == len(hashes) == len(set(hashes.tolist()))
        out[(dt, e.bucket)] = set(hashes.tolist())
    for dt in {d for d, _ in out}:
        seen: set[int] = set()
        for (d, _), hashes in out.items():
            if d == dt:
                assert not seen & hashes, f"a hash is in two buckets of partition {dt}"
                seen |= hashes
    return out


def check_one_bucket_per_key(path: str) -> dict[tuple[str, int], int]:
    """Every key's rows sit in one bucket, and the index maps its hash to that bucket."""
    where = layout(path)
    assert all(len(b) == 1 for b in where.values()), {k: b for k, b in where.items() if len(b) > 1}
    table = Table.load(path)
    index = index_of(path)
    keys = sorted(where)
    hashes = key_hashes(table.store, pa.table({"id": pa.array([k[1] for k in keys], pa.int64()),
                                         "dt": [k[0] for k in keys]}))
    for (dt, _), h, buckets in zip(keys, hashes.tolist(), (where[k] for k in keys)):
        assert h in index[(dt, buckets[0])]
    return {k: b[0] for k, b in where.items()}


# ----------------------------------------------------------------------------------------------- candidates
def test_candidate_buckets():
    # an empty partition: initial-buckets new buckets, each with the whole target as room
    ids, room = candidate_buckets({}, 100, 4, -1)
    assert ids.tolist() == [0, 1, 2, 3] and room.tolist() == [100] * 4
    # buckets with room come first; new ids (lowest unused) only until the room reaches initial x target
    ids, room = candidate_buckets({0: 100, 1: 30, 3: 100}, 100, 2, -1)
    assert ids.tolist() == [1, 2, 4] and room.tolist() == [70, 100, 100]  # 70 + 100 < 2 x 100: one more
    ids, room = candidate_buckets({0: 10, 1: 30}, 100, 1, -1)
    assert ids.tolist() == [0, 1] and room.tolist() == [90, 70]  # enough room: no new bucket
    # over-full buckets (a large earlier write) take nothing
    ids, room = candidate_buckets({0: 250, 1: 250}, 100, 1, -1)
    assert ids.tolist() == [2] and room.tolist() == [100]
    # dynamic-bucket.max-buckets caps the ids; with every bucket full, new keys spread over all of them
    ids, room = candidate_buckets({0: 100, 1: 50}, 100, 4, 3)
    assert ids.tolist() == [1, 2] and room.tolist() == [50, 100]
    ids, room = candidate_buckets({0: 100, 1: 120}, 100, 4, 2)
    assert ids.tolist() == [0, 1] and room.tolist() == [1, 1]


def test_mix32_matches_murmur3_finaliser():
    def fmix(h: int) -> int:
        h &= 0xFFFFFFFF
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & 0xFFFFFFFF
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & 0xFFFFFFFF
        return h ^ (h >> 16)
    values = np.array([0, 1, -1, 2**31 - 1, -2**31, 123456789, -987654321], np.int32)
    assert mix32(values).tolist() == [fmix(int(v)) for v in values]


# ------------------------------------------------------------------------------------ a pure function
def test_assignment_is_a_pure_function_of_key_and_snapshot(tmp_path):
    path = str(tmp_path / "t")
    spark_like_write(path, [rows(range(0, 150))])  # a base index: 16 candidate buckets filled part way
    table = Table.load(path)
    restore = BucketRestore.from_table(table)
    keys = rows(list(range(100, 400)) + list(range(1000, 1300)))  # 50 indexed keys, 550 new ones
    one = SnapshotBucketAssigner(table.store, restore.index_files)
    whole, new = one.assign(keys)
    assert new.tolist() == [k >= 150 for k in keys.column("id").to_pylist()]
    # another task, in another order and other batch sizes, from the same snapshot: the same buckets
    other = SnapshotBucketAssigner(table.store, restore.index_files)
    order = list(range(keys.num_rows))
    random.Random(3).shuffle(order)
    got = np.empty(keys.num_rows, np.int32)
    for start in range(0, len(order), 37):
        idx = order[start:start + 37]
        got[idx] = other.assign(keys.take(idx))[0]
    assert got.tolist() == whole.tolist()
    # indexed keys keep their bucket
    before = check_one_bucket_per_key(path)
    for k, b in zip(keys.column("id").to_pylist(), whole.tolist()):
        if k < 150:
            assert before[("a", k)] == b


def test_same_new_key_in_two_tasks_lands_in_one_bucket(tmp_path):
    path = str(tmp_path / "t")
    spark_like_write(path, [rows(range(50))])
    # task 0 and task 1 both receive keys 500..699 (new), with different values; each also has keys of its own
    t0 = pa.concat_tables([rows(range(500, 700), v=1), rows(range(1000, 1100), v=1)])
    t1 = pa.concat_tables([rows(range(500, 700), v=2), rows(range(2000, 2100), v=2)])
    spark_like_write(path, [t0, t1])
    homes = check_one_bucket_per_key(path)
    assert len(homes) == 50 + 200 + 100 + 100
    got = {r["id"]: r["v"] for r in Table.load(path).to_arrow().to_pylist()}
    assert all(got[k] == 2 for k in range(500, 700))  # the later task's rows win
    assert [got[k] for k in (1000, 2000, 0)] == [1, 2, 0]


def test_a_retried_task_picks_the_same_buckets(tmp_path):
    path = str(tmp_path / "t")
    spark_like_write(path, [rows(range(80))])
    table = Table.for_write(path, SCHEMA, OPTIONS)
    restore = BucketRestore.from_table(table)
    data = rows(range(40, 400), v=7)
    first = table.new_write(restore=restore, task=3)
    first.write_arrow(data)
    first.abort()  # the attempt dies; Spark runs the task again
    retry = task_write(table, restore, 3, data)
    again = task_write(table, restore, 3, data)  # a speculative copy: same answers
    assert sorted((m.bucket, m.added_hashes.tolist()) for m in retry if m.added_hashes is not None) == \
        sorted((m.bucket, m.added_hashes.tolist()) for m in again if m.added_hashes is not None)
    table.new_commit().commit(retry, base_snapshot_id=restore.snapshot_id)
    table.new_commit().abort(again)
    homes = check_one_bucket_per_key(path)
    assert len(homes) == 400
    assert {k: v for k, v in ((r["id"], r["v"]) for r in Table.load(path).to_arrow().to_pylist())} == \
        {**{k: 0 for k in range(40)}, **{k: 7 for k in range(40, 400)}}


# --------------------------------------------------------------------------------------- bucket sizes
def bucket_sizes(path: str, dt: str = "a") -> dict[int, int]:
    return {b: len(h) for (d, b), h in sorted(index_of(path).items()) if d == dt}


def test_one_large_write_overshoots_as_documented_and_later_writes_open_new_buckets(tmp_path):
    path = str(tmp_path / "t")
    target, initial, new_keys = 100, 4, 2000
    opts = {**OPTIONS, "dynamic-bucket.initial-buckets": str(initial)}
    parts = [rows(range(i, new_keys, 4)) for i in range(4)]  # four tasks
    spark_like_write(path, parts, opts)
    sizes = bucket_sizes(path)
    # M = 2000 new keys over room R = 4 x 100: each bucket ends near target * M / R = 500
    assert sorted(sizes) == [0, 1, 2, 3] and sum(sizes.values()) == new_keys
    assert all(400 <= s <= 600 for s in sizes.values()), sizes
    # the next write's new keys go to new buckets only: the full ones keep their keys
    spark_like_write(path, [rows(range(5000, 5300))], opts)
    after = bucket_sizes(path)
    assert {b: after[b] for b in sizes} == sizes
    assert sorted(set(after) - set(sizes)) == [4, 5, 6, 7] and sum(after.values()) == new_keys + 300
    assert all(after[b] <= target for b in (4, 5, 6, 7)), after
    check_one_bucket_per_key(path)


def test_default_initial_buckets_and_a_small_write(tmp_path):
    path = str(tmp_path / "t")
    spark_like_write(path, [rows(range(10)), rows(range(10, 20))])
    sizes = bucket_sizes(path)
    assert sum(sizes.values()) == 20 and set(sizes) <= set(range(DEFAULT_INITIAL_BUCKETS))
    # upserts of the same keys change no index file
    before = Table.load(path).latest_snapshot().index_manifest
    spark_like_write(path, [rows(range(20), v=1)])
    assert Table.load(path).latest_snapshot().index_manifest == before
    check_one_bucket_per_key(path)


def test_max_buckets_caps_and_full_partitions_spread_over_existing_buckets(tmp_path):
    path = str(tmp_path / "t")
    opts = {**OPTIONS, "dynamic-bucket.max-buckets": "3"}
    spark_like_write(path, [rows(range(250))], opts)
    assert sorted(bucket_sizes(path)) == [0, 1, 2]
    spark_like_write(path, [rows(range(250, 600))], opts)  # every bucket past the target: still 3
    assert sorted(bucket_sizes(path)) == [0, 1, 2] and sum(bucket_sizes(path).values()) == 600
    check_one_bucket_per_key(path)


# ------------------------------------------------------------------------------------------ conflicts
def test_concurrent_commits_merge_unless_a_key_would_live_in_two_buckets(tmp_path):
    path = str(tmp_path / "t")
    opts = {**OPTIONS, "dynamic-bucket.target-row-num": "10", "dynamic-bucket.initial-buckets": "2"}
    table = Table.for_write(path, SCHEMA, opts)
    single = table.new_write()  # one writer fills bucket 0 to the target
    single.write_arrow(rows(range(10)))
    table.new_commit().commit(single.prepare_commit())
    table = Table.load(path)
    base = BucketRestore.from_table(table)
    candidates = rows(range(1000, 5000))
    ids = candidates.column("id").to_numpy()
    at_base, _ = SnapshotBucketAssigner(table.store, base.index_files).assign(candidates)
    assert set(at_base.tolist()) == {1, 2}  # bucket 0 is full: two new ones, as initial-buckets says
    # a write from the base snapshot puts 5 keys into bucket 2 and commits
    table.new_commit().commit(task_write(table, base, 1, rows(ids[at_base == 2][:5].tolist(), v=2)),
                              base_snapshot_id=base.snapshot_id)
    newer = BucketRestore.from_table(Table.load(path))
    at_newer, _ = SnapshotBucketAssigner(table.store, newer.index_files).assign(candidates)
    disputed = ids[(at_base == 1) & (at_newer == 2)][:2].tolist()  # bucket 1 then, bucket 2 now
    agreed = ids[(at_base == 1) & (at_newer == 1)][:5].tolist()
    assert len(disputed) == 2 and len(agreed) == 5
    # a late write from the base snapshot writes only bucket 1; a newer write puts the disputed keys in bucket 2
    late = task_write(table, base, 0, rows(disputed + agreed, v=1))
    assert {m.bucket for m in late} == {1}
    table.new_commit().commit(task_write(table, newer, 0, rows(disputed, v=3)), base_snapshot_id=newer.snapshot_id)
    before = Table.load(path).latest_snapshot()
    manifests = set(os.listdir(tmp_path / "t" / "manifest"))
    indexes = set(os.listdir(tmp_path / "t" / "index"))
    with pytest.raises(CommitConflict, match="put 2 of the keys it adds to bucket 1 into bucket 2 of the same"):
        table.new_commit().commit(late, base_snapshot_id=base.snapshot_id)
    assert Table.load(path).latest_snapshot() == before
    assert set(os.listdir(tmp_path / "t" / "manifest")) == manifests
    assert set(os.listdir(tmp_path / "t" / "index")) == indexes
    table.new_commit().abort(late)
    check_one_bucket_per_key(path)
    # without the disputed keys the late write merges into the index the others changed
    table.new_commit().commit(task_write(table, base, 0, rows(agreed, v=1)), base_snapshot_id=base.snapshot_id)
    homes = check_one_bucket_per_key(path)
    assert sorted(k for (_, k), b in homes.items() if b == 1) == sorted(agreed)
    assert len(homes) == 10 + 5 + 2 + 5
    got = {r["id"]: r["v"] for r in Table.load(path).to_arrow().to_pylist()}
    assert [got[k] for k in disputed] == [3, 3] and all(got[k] == 1 for k in agreed)


def test_an_overwrite_since_the_base_is_a_conflict(tmp_path):
    path = str(tmp_path / "t")
    spark_like_write(path, [rows(range(50))])
    table = Table.for_write(path, SCHEMA, OPTIONS)
    base = BucketRestore.from_table(table)
    late = task_write(table, base, 0, rows(range(40, 90), v=1))
    spark_like_write(path, [rows(range(30), v=5)], overwrite=True)  # rebuilds the partition's index
    # refused by the overwrite rule, or by the sequence guard when the overwrite wrote a bucket this write did
    with pytest.raises(CommitConflict, match="overwrite|another writer"):
        table.new_commit().commit(late, base_snapshot_id=base.snapshot_id)
    table.new_commit().abort(late)
    assert {r["id"]: r["v"] for r in Table.load(path).to_arrow().to_pylist()} == {k: 5 for k in range(30)}
    check_one_bucket_per_key(path)
