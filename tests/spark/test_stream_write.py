"""Streaming writes: replayed batches, complete mode, empty batches, failed batches, bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException

from paimon_ds import Table

from ._helpers import data_files_on_disk

SCHEMA = "id BIGINT, k STRING, v BIGINT"


def write_inputs(directory: Path, batches: list[list[tuple[int, str, int]]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    existing = len(list(directory.glob("*.parquet")))
    for i, rows in enumerate(batches, start=existing):
        path = directory / f"part-{i:04d}.parquet"
        pq.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()), "k": [r[1] for r in rows],
                                 "v": pa.array([r[2] for r in rows], pa.int64())}), path)
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))  # the file source reads oldest first


def run_available_now(spark, source_dir: Path, table: str, checkpoint: Path, output_mode: str = "append",
                      transform=None, **options: str) -> None:
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source_dir))
    if transform is not None:
        df = transform(df)
    q = (df.writeStream.format("paimon").options(**options).option("checkpointLocation", str(checkpoint))
         .outputMode(output_mode).trigger(availableNow=True).start(table))
    try:
        q.awaitTermination()
    finally:
        q.stop()


def rows(path: str) -> list[dict]:
    return sorted(Table.load(path).to_arrow().to_pylist(), key=lambda r: (r["id"], repr(r)))


def snapshot_list(path: str) -> list[tuple[int, str, int]]:
    sm = Table.load(path).snapshot_manager
    return [(s.id, s.commit_kind, s.commit_identifier) for s in (sm.snapshot(i) for i in sm.list_ids())]


@pytest.mark.parametrize("options", [{}, {"primary-key": "id", "bucket": "2"}], ids=["append", "primary-key"])
def test_replayed_batch_is_recognised_and_not_committed_twice(spark, tmp_path, table_path, options):
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1), (2, "b", 2)], [(3, "c", 3)], [(1, "a", 10), (4, "d", 4)]])
    checkpoint = tmp_path / "ck"
    run_available_now(spark, source, table_path, checkpoint, **options)
    before_rows, before_snaps = rows(table_path), snapshot_list(table_path)
    before_files = sorted(data_files_on_disk(table_path))
    assert [(kind, ident) for _, kind, ident in before_snaps if kind == "APPEND"] == \
        [("APPEND", 0), ("APPEND", 1), ("APPEND", 2)]

    # As if the driver died after the Paimon commit of batch 2 but before Spark recorded it:
    # Spark runs batch 2 again on restart.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)  # Hadoop's checksum of the entry
    run_available_now(spark, source, table_path, checkpoint, **options)

    assert snapshot_list(table_path) == before_snaps  # nothing committed a second time
    assert rows(table_path) == before_rows
    assert sorted(data_files_on_disk(table_path)) == before_files  # the replay's files were deleted
    assert (checkpoint / "commits" / "2").exists()  # and Spark moved on
    expected_ids = [1, 1, 2, 3, 4] if not options else [1, 2, 3, 4]
    assert [r["id"] for r in before_rows] == expected_ids


def test_complete_mode_replaces_the_table_each_batch(spark, tmp_path, table_path):
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1), (2, "b", 2)], [(3, "a", 3)], [(4, "c", 4)]])
    run_available_now(spark, source, table_path, tmp_path / "ck", output_mode="complete",
                      transform=lambda df: df.groupBy("k").count())
    got = sorted((r["k"], r["count"]) for r in Table.load(table_path).to_arrow().to_pylist())
    assert got == [("a", 2), ("b", 1), ("c", 1)]
    assert [(kind, ident) for _, kind, ident in snapshot_list(table_path)] == \
        [("OVERWRITE", 0), ("OVERWRITE", 1), ("OVERWRITE", 2)]


def test_empty_micro_batches_commit_nothing(spark, tmp_path, table_path):
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1)], [(2, "b", 2)]])
    run_available_now(spark, source, table_path, tmp_path / "ck", transform=lambda df: df.where("v > 100"))
    table = Table.load(table_path)  # created (schema written), but no snapshot: no data came
    assert table.snapshot_manager.list_ids() == []
    assert data_files_on_disk(table_path) == []


def test_failed_batch_leaves_no_files_and_the_query_resumes(spark, tmp_path, table_path):
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1)], [(2, "b", -1)]])  # v = -1 makes the second batch fail

    def fail_on_negative(df):
        from pyspark.sql import functions as F
        return df.withColumn("v", F.when(F.col("v") < 0, F.raise_error(F.lit("bad event"))).otherwise(F.col("v")))

    checkpoint = tmp_path / "ck"
    with pytest.raises(StreamingQueryException, match="bad event"):
        run_available_now(spark, source, table_path, checkpoint, transform=fail_on_negative)
    assert rows(table_path) == [{"id": 1, "k": "a", "v": 1}]
    assert len(data_files_on_disk(table_path)) == 1  # the failed batch left nothing behind
    assert [kind for _, kind, _ in snapshot_list(table_path)] == ["APPEND"]

    # the bad input is replaced (as an operator would), and the query resumes at batch 1
    shutil.rmtree(source)
    write_inputs(source, [[(1, "a", 1)], [(2, "b", 2)]])
    run_available_now(spark, source, table_path, checkpoint, transform=fail_on_negative)
    assert rows(table_path) == [{"id": 1, "k": "a", "v": 1}, {"id": 2, "k": "b", "v": 2}]
    assert [ident for _, _, ident in snapshot_list(table_path)] == [0, 1]


def test_stream_into_a_table_with_other_columns_is_refused(spark, tmp_path, table_path):
    spark.createDataFrame([(1, "x")], "id BIGINT, other STRING").write.format("paimon").mode("append") \
        .save(table_path)
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1)]])
    with pytest.raises(Exception, match="does not match the schema") as info:
        run_available_now(spark, source, table_path, tmp_path / "ck")
    assert "other" in str(info.value)
    assert rows(table_path) == [{"id": 1, "other": "x"}]


def test_append_stream_compacts_small_files(spark, tmp_path, table_path):
    """A long stream into an append table must not pile up small files: the committer rewrites them."""
    source = tmp_path / "in"
    batches = [[(b * 10 + i, f"k{i % 3}", b) for i in range(10)] for b in range(12)]
    write_inputs(source, batches)
    run_available_now(spark, source, table_path, tmp_path / "ck", **{"compaction.min.file-num": "3"})
    table = Table.load(table_path)
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == list(range(120))
    live = table.new_scan().plan()
    files = [f for s in live for f in s.files]
    # one file per batch without compaction; a window of 3 small files is rewritten once it forms
    assert len(files) < 3
    kinds = [kind for _, kind, _ in snapshot_list(table_path)]
    assert kinds.count("APPEND") == 12 and kinds.count("COMPACT") >= 5


def test_compact_job_rewrites_small_files_of_an_append_table(spark, table_path):
    import paimon_ds
    for i in range(4):
        spark.range(i * 5, i * 5 + 5, numPartitions=1).write.format("paimon").mode("append").save(table_path)
    snapshot = paimon_ds.compact(spark, table_path, full=True)
    assert snapshot is not None and snapshot.commit_kind == "COMPACT"
    table = Table.load(table_path)
    assert [len(s.files) for s in table.new_scan().plan()] == [1]
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == list(range(20))
    assert paimon_ds.compact(spark, table_path, full=True) is None  # nothing left to do


def test_update_output_mode_is_refused(spark, tmp_path, table_path):
    """Spark offers Python sinks append and complete only; append mode on a primary-key table upserts."""
    source = tmp_path / "in"
    write_inputs(source, [[(1, "a", 1), (2, "a", 2)]])
    with pytest.raises(StreamingQueryException, match="does not support Update mode"):
        run_available_now(spark, source, table_path, tmp_path / "ck", output_mode="update",
                          transform=lambda df: df.groupBy("k").count(), **{"primary-key": "k", "bucket": "1"})
    assert not Path(table_path, "snapshot").exists()
