"""Postpone-bucket tables (`bucket` = -2, Paimon 1.1+), written and read as Paimon 1.x does.

- Writes into real buckets (`postpone.batch-write-fixed-bucket`, the default, as Paimon's Spark writer): a partition
  keeps the bucket count its files have; a new one gets `postpone.default-bucket-num`; the rows are read at once.
- Writes into the postpone bucket (the option false; Flink's streaming sink; pypaimon's default builder): the files
  Paimon's PostponeBucketWriter writes (`bucket-postpone/data--u-<user>-s-<id>-w-<uuid>-<n>.avro`, rows as they
  came, sequence -1, no value stats, entries of bucket -2 and total buckets -2), which batch reads skip
  (DataTableBatchScan.onlyReadRealBuckets) and streams read unmerged, until the postpone compaction moves them.
"""

from __future__ import annotations

import os

import fastavro
import numpy as np
import pyarrow as pa
import pytest

from paimon_ds import Table
from paimon_ds.format.bucket import bucket_ids
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.operation.scan import TableScan
from paimon_ds.operation.stream import StreamScan
from paimon_ds.options.registry import OptionError
from paimon_ds.schema.types import SchemaError
from paimon_ds.table import write_arrow

POSTPONE = {"postpone.batch-write-fixed-bucket": "false"}


def write(path: str, rows: list[tuple], kinds: list[str] | None = None, **options: str) -> None:
    """Rows (id, p, v) in one commit; ``options`` are this write's (the table is made with bucket=-2 alone)."""
    data = {"id": pa.array([r[0] for r in rows], pa.int32()), "p": [r[1] for r in rows], "v": [r[2] for r in rows],
            "op": kinds or ["+I"] * len(rows)}
    if not Table.exists(path):
        write_arrow(path, pa.table(data).slice(0, 0), primary_key="id,p", partition_by="p",
                    options={"bucket": "-2", "rowkind.field": "op"})
    Table.load(path, options).append(pa.table(data))


def read(path: str) -> list[tuple]:
    t = Table.load(path).to_arrow()
    return sorted(zip(t.column("p").to_pylist(), t.column("id").to_pylist(), t.column("v").to_pylist()))


def entries(path: str) -> list[tuple]:
    """(partition dir, bucket, total buckets, level, min seq, max seq, rows) of every live file."""
    table = Table.load(path)
    scan = TableScan(table)
    return sorted((scan.partition_dir(e.partition), e.bucket, e.total_buckets, e.file.level, e.file.min_sequence_number,
                   e.file.max_sequence_number, e.file.row_count) for e in scan.read_entries())


def stream_rows(path: str) -> list[tuple]:
    """What a stream starting now reads (its full scan): real buckets merged, postpone buckets as written."""
    table = Table.load(path)
    scan = StreamScan(table)
    read = table.new_read(row_kind_column="kind")
    out = []
    for s in scan.unit(scan.initial_position().snapshot, True):
        for b in read.read(s.split):
            out += list(zip(b.column("kind").to_pylist(), b.column("p").to_pylist(), b.column("id").to_pylist(),
                            b.column("v").to_pylist()))
    return out


def test_postpone_bucket_files_as_paimon_lays_them_out(table_path):
    write(table_path, [(2, "a", "x2"), (1, "a", "x1"), (2, "a", "x3")], **POSTPONE)
    assert read(table_path) == []  # a batch read shows real buckets only
    [name] = os.listdir(f"{table_path}/p=a/bucket-postpone")
    assert name.startswith("data--u-") and "-s-" in name and "-w-" in name and name.endswith("-0.avro")
    with open(f"{table_path}/p=a/bucket-postpone/{name}", "rb") as f:
        records = list(fastavro.reader(f))
    # as written: neither sorted nor merged, every sequence number -1
    assert [(r["_KEY_id"], r["_SEQUENCE_NUMBER"], r["_VALUE_KIND"], r["v"]) for r in records] == [
        (2, -1, 0, "x2"), (1, -1, 0, "x1"), (2, -1, 0, "x3")]
    assert entries(table_path) == [("p=a", -2, -2, 0, -1, -1, 3)]
    [e] = TableScan(Table.load(table_path)).read_entries()
    assert e.file.value_stats_cols == () and e.file.value_stats.null_counts == ()  # stats-mode none, dense
    # a stream's first read shows the postpone rows as written
    assert stream_rows(table_path) == [("+I", "a", 2, "x2"), ("+I", "a", 1, "x1"), ("+I", "a", 2, "x3")]


def test_compaction_moves_postpone_rows_into_buckets(table_path):
    """Two writers' postpone files and a delete: compacted writer by writer, each in creation order, a later row
    of a key winning; a partition without buckets gets `postpone.default-bucket-num` of them."""
    write(table_path, [(1, "a", "x1"), (2, "a", "x2"), (1, "a", "x3")], **POSTPONE)
    write(table_path, [(2, "a", "gone"), (3, "b", "y1")], kinds=["-D", "+I"], **POSTPONE)
    write(table_path, [(4, "a", "x4")], **POSTPONE, **{"postpone.default-bucket-num": "3"})
    assert read(table_path) == []
    snapshot = compact_in_process(Table.load(table_path, {"postpone.default-bucket-num": "3"}), None)
    assert snapshot.commit_kind == "COMPACT"
    assert read(table_path) == [("a", 1, "x3"), ("a", 4, "x4"), ("b", 3, "y1")]
    got = entries(table_path)
    assert {(p, b, n) for p, b, n, *_ in got} <= {("p=a", b, 3) for b in range(3)} | {("p=b", b, 3) for b in range(3)}
    table = Table.load(table_path)
    for split in table.new_scan().plan():  # each row sits in the bucket Paimon's hash gives it
        rows = pa.Table.from_batches(list(table.new_read().read(split)), table.arrow_schema())
        assert set(bucket_ids([rows.column("id")], [table.table_schema.field("id").type], 3)) <= {split.bucket}


def test_writes_into_real_buckets_keep_a_partitions_count(table_path):
    """The default: rows go straight into real buckets, read at once; a partition keeps its count (here 3, made by
    a compaction) whatever `postpone.default-bucket-num` later says; a new partition gets that option's count."""
    write(table_path, [(1, "a", "x1")], **POSTPONE)
    compact_in_process(Table.load(table_path, {"postpone.default-bucket-num": "3"}), None)
    write(table_path, [(i, "a", f"n{i}") for i in range(1, 7)] + [(1, "b", "y1")],
          **{"postpone.default-bucket-num": "2"})
    assert read(table_path) == [("a", i, f"n{i}") for i in range(1, 7)] + [("b", 1, "y1")]
    counts = {(p, n) for p, b, n, *_ in entries(table_path)}
    assert counts == {("p=a", 3), ("p=b", 2)}
    write(table_path, [(1, "a", "latest")])
    assert read(table_path)[0] == ("a", 1, "latest")


def test_postpone_rows_compacted_after_real_rows_win(table_path):
    """A key written to the postpone bucket, then straight to its real bucket: the compaction numbers the postpone
    row after the bucket's rows, so it wins (Paimon's order: a postpone row is newer once compacted)."""
    write(table_path, [(1, "a", "postponed")], **POSTPONE)
    write(table_path, [(1, "a", "direct")])
    assert read(table_path) == [("a", 1, "direct")]
    compact_in_process(Table.load(table_path), None)
    assert read(table_path) == [("a", 1, "postponed")]


def test_compaction_sizes_new_partitions_by_target_rows(table_path):
    write(table_path, [(i, "a", "v") for i in range(10)], **POSTPONE)
    compact_in_process(Table.load(table_path, {"postpone.target-row-num-per-bucket": "4"}), None)
    assert {n for _, _, n, *_ in entries(table_path)} == {3}  # ceil(10 / 4)
    assert len(read(table_path)) == 10


def test_commit_refuses_a_partition_whose_bucket_count_changed(table_path):
    """Two writers create the same partition with different counts: the second commit is refused, its files go."""
    write(table_path, [(1, "a", "x")])
    slow = Table.load(table_path, {"postpone.default-bucket-num": "2"})
    w = slow.new_write()
    w.write_arrow(pa.table({"id": pa.array([5], pa.int32()), "p": ["new"], "v": ["slow"], "op": ["+I"]}))
    messages = w.prepare_commit()
    write(table_path, [(6, "new", "fast")], **{"postpone.default-bucket-num": "3"})
    before = sorted(os.listdir(f"{table_path}/p=new/bucket-0"))
    with pytest.raises(CommitConflict, match="bucket"):
        slow.new_commit().commit_or_abort(messages)
    assert read(table_path) == [("a", 1, "x"), ("new", 6, "fast")]
    assert sorted(os.listdir(f"{table_path}/p=new/bucket-0")) == [n for n in before
                                                                    if n not in {f.file_name for m in messages
                                                                                 for f in m.new_files}]


def test_refused_before_anything_is_written(table_path, tmp_path):
    with pytest.raises(SchemaError, match="postpone"):
        write_arrow(table_path, pa.table({"id": [1]}), options={"bucket": "-2"})
    for option in ({"deletion-vectors.enabled": "true"}, {"changelog-producer": "input"}):
        with pytest.raises(OptionError, match=list(option)[0]):
            write_arrow(table_path, pa.table({"id": [1], "p": ["a"]}), primary_key="id,p", partition_by="p",
                        options={"bucket": "-2", **option})
    assert not os.path.exists(table_path) or not os.listdir(table_path)
    write(table_path, [(1, "a", "x")])
    with pytest.raises(OptionError, match="postpone.merge-on-read"):
        Table.load(table_path, {"postpone.merge-on-read": "true"}).to_arrow()


def test_key_order_inside_buckets_after_compaction(table_path):
    """Many rows and two writes: the compacted buckets hold each key once, sorted, the latest value."""
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 500, 3000)
    write(table_path, [(int(i), "a", f"v{n}") for n, i in enumerate(ids)], **POSTPONE)
    compact_in_process(Table.load(table_path, {"postpone.default-bucket-num": "4"}), None, full=True)
    latest = {int(i): f"v{n}" for n, i in enumerate(ids)}
    assert read(table_path) == sorted(("a", k, v) for k, v in latest.items())
    assert all(level == 5 for _, _, _, level, *_ in entries(table_path))


def test_write_racing_a_postpone_compaction_is_refused(table_path):
    """A postpone compaction numbers the rows it moves after the bucket's files; a write that took its numbers
    before that compaction committed would tie with them, so its commit is refused (nothing lost, nothing won
    by chance) and can be retried."""
    write(table_path, [(1, "a", "x1")])
    write(table_path, [(1, "a", "postponed")], **POSTPONE)
    table = Table.load(table_path)
    w = table.new_write()
    w.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "p": ["a"], "v": ["racing"], "op": ["+I"]}))
    messages = w.prepare_commit()
    base = table.latest_snapshot().id
    compact_in_process(Table.load(table_path), None)
    with pytest.raises(CommitConflict, match="another writer"):
        table.new_commit().commit(messages, base_snapshot_id=base)
    assert read(table_path) == [("a", 1, "postponed")]
    write(table_path, [(1, "a", "retried")])
    assert read(table_path) == [("a", 1, "retried")]
