"""The Python API for what SQL does: row-level changes, time travel, procedures, per-partition compaction."""

from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import paimon_ds
from paimon_ds import Delete, Insert, Update, procedures
from paimon_ds.operation.messages import CommitConflict
from paimon_ds.operation.scan import TableScan
from paimon_ds.table import Table

from ._helpers import data_files_on_disk, save


def collect(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def test_row_level_api_with_columns_and_strings(spark, table_path):
    df = spark.createDataFrame([(i, i * 1.5, "k") for i in range(6)], "id bigint, v double, s string")
    save(df, table_path, **{"primary-key": "id", "bucket": "2"})
    paimon_ds.delete(spark, table_path, F.col("id") >= 4)
    paimon_ds.update(spark, table_path, {"s": F.concat(F.col("s"), F.lit("!")), "v": "v * 2"}, "id < 2")
    source = spark.createDataFrame([(1, 100.0, "m"), (9, 9.0, "n")], "id bigint, v double, s string")
    paimon_ds.merge(spark, table_path, source, F.col("t.id") == F.col("s.id"),
                    when_matched=[Update({"v": "s.v"})], when_not_matched=[Insert()])
    assert collect(paimon_ds.read(spark, table_path)) == [
        (0, 0.0, "k!"), (1, 100.0, "k!"), (2, 3.0, "k"), (3, 4.5, "k"), (9, 9.0, "n")]
    # NOT MATCHED BY SOURCE: rows the source does not name go
    paimon_ds.merge(spark, table_path, source.select("id"), "t.id = s.id", when_not_matched_by_source=[Delete()])
    assert collect(paimon_ds.read(spark, table_path)) == [(1, 100.0, "k!"), (9, 9.0, "n")]


def test_append_table_delete_rewrites_only_the_files_it_touches(spark, table_path):
    for part in range(3):  # three commits of a few files each
        save(spark.createDataFrame([(part * 10 + i, f"p{part}") for i in range(5)], "id bigint, s string"),
             table_path)
    before = {p.rsplit("/", 1)[-1] for p in data_files_on_disk(table_path)}
    assert len(before) >= 3
    snapshot = paimon_ds.delete(spark, table_path, "id = 12")
    assert snapshot.commit_kind == "OVERWRITE"
    table = Table.load(table_path)
    live = {e.file.file_name for e in TableScan(table).read_entries()}
    assert len(live - before) == 1 and len(before - live) == 1  # one file replaced, two untouched
    assert collect(paimon_ds.read(spark, table_path).select("id")) == [
        (i,) for i in [0, 1, 2, 3, 4, 10, 11, 13, 14, 20, 21, 22, 23, 24]]
    assert paimon_ds.delete(spark, table_path, "id > 1000") is None  # nothing matched: no snapshot


def test_copy_on_write_commit_refuses_when_its_files_are_gone(spark, table_path):
    """A DELETE whose files a concurrent compaction replaced fails and leaves nothing behind."""
    save(spark.createDataFrame([(1, "a")], "id bigint, s string"), table_path)
    save(spark.createDataFrame([(2, "b")], "id bigint, s string"), table_path)
    table = Table.load(table_path)
    old_files = sorted(e.file.file_name for e in TableScan(table).read_entries())
    paimon_ds.compact(spark, table_path, full=True)  # replaces both files
    write = Table.load(table_path).new_write()
    write.write_arrow(pa.table({"id": pa.array([2], pa.int64()), "s": ["b"]}))
    messages = write.prepare_commit()
    files_before = set(data_files_on_disk(table_path))
    new_files = {f"bucket-0/{f.file_name}" for m in messages for f in m.new_files}
    assert len(new_files) == 1 and new_files <= files_before
    with pytest.raises(CommitConflict, match="removed by another commit"):
        Table.load(table_path).new_commit().replace_files(messages, old_files[:1])
    assert set(data_files_on_disk(table_path)) == files_before - new_files
    assert collect(paimon_ds.read(spark, table_path)) == [(1, "a"), (2, "b")]


def test_time_travel_by_snapshot_timestamp_and_tag(spark, table_path):
    save(spark.createDataFrame([(1, "a")], "id bigint, s string"), table_path, **{"primary-key": "id", "bucket": "1"})
    procedures.create_tag(table_path, "first")
    time.sleep(0.05)
    between = dt.datetime.now()
    time.sleep(0.05)
    save(spark.createDataFrame([(1, "b"), (2, "c")], "id bigint, s string"), table_path)
    assert collect(paimon_ds.read(spark, table_path, snapshot_id=1)) == [(1, "a")]
    assert collect(paimon_ds.read(spark, table_path, timestamp=between)) == [(1, "a")]
    assert collect(paimon_ds.read(spark, table_path, timestamp=between.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])) \
        == [(1, "a")]
    assert collect(paimon_ds.read(spark, table_path, tag="first")) == [(1, "a")]
    assert collect(paimon_ds.read(spark, table_path)) == [(1, "b"), (2, "c")]
    with pytest.raises(ValueError, match="one of"):
        paimon_ds.read(spark, table_path, snapshot_id=1, tag="first")
    # rollback by tag name, then the latest is the tag's snapshot again
    procedures.rollback(table_path, "first")
    assert collect(paimon_ds.read(spark, table_path)) == [(1, "a")]


def test_compact_one_partition(spark, table_path, tmp_path):
    opts = {"primary-key": "id,dt", "partition": "dt", "bucket": "1", "write-only": "true"}
    for i in range(3):
        save(spark.createDataFrame([(i, "d1"), (i, "d2")], "id bigint, dt string"), table_path, **opts)
    table = Table.load(table_path)

    def files_per_partition() -> dict[str, int]:
        scan = TableScan(Table.load(table_path))
        out: dict[str, int] = {}
        for e in scan.read_entries():
            out[scan.partition_dir(e.partition)] = out.get(scan.partition_dir(e.partition), 0) + 1
        return out

    assert files_per_partition() == {"dt=d1": 3, "dt=d2": 3}
    paimon_ds.sql(spark, "CALL sys.compact(table => 'db.t', partitions => 'dt=d2')",
                  warehouse=str(tmp_path / "warehouse"))
    assert files_per_partition() == {"dt=d1": 3, "dt=d2": 1}
    paimon_ds.compact(spark, table_path, full=True, partitions=[{"dt": "d1"}])
    assert files_per_partition() == {"dt=d1": 1, "dt=d2": 1}
    with pytest.raises(ValueError, match="not partition keys"):
        paimon_ds.compact(spark, table_path, partitions="id=1")
    assert table.snapshot_manager.latest().commit_kind == "COMPACT"
