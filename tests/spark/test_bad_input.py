"""Bad input gives one clear error, and the table is exactly as it was afterwards."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from paimon_ds import Table

from ._helpers import (
    ABORT_MARKER_DIR,
    by_key,
    files_under,
    load,
    read_arrow,
    save,
    snapshot_ids,
    sorted_rows,
)

ROWS = [{"id": i, "s": f"v{i}"} for i in range(5)]


@pytest.fixture
def table(spark, table_path) -> str:
    save(spark.createDataFrame(ROWS, "id bigint, s string"), table_path)
    return table_path


def state(spark, path: str) -> tuple:
    """What must not change: snapshots, rows, and every file of the table."""
    return snapshot_ids(path), sorted_rows(read_arrow(spark, path)), files_under(path)


def test_unchanged_state_helper_sees_a_real_write(spark, table):
    # guards the tests below: a successful write does change what state() reports
    before = state(spark, table)
    save(spark.createDataFrame([(9, "x")], "id bigint, s string"), table)
    after = state(spark, table)
    assert after[0] == [1, 2] and len(after[1]) == 6 and len(after[2]) > len(before[2])


@pytest.mark.parametrize("options, message", [
    ({"bukcet": "2"}, r"unknown option 'bukcet' \(did you mean 'bucket'\?\)"),
    ({"bucket": "abc"}, r"invalid value 'abc' for option 'bucket'"),
    ({"bucket": "0"}, r"invalid value '0' for option 'bucket'.*-1 .* or a positive number of buckets"),
    ({"target-file-size": "lots"}, r"invalid value 'lots' for option 'target-file-size'"),
    ({"bucket": "2"}, r"option bucket=2 differs from the table's bucket -1"),
    ({"partition": "s"}, r"option partition='s' differs from the table's partition \[\]"),
    ({"partitionOverwriteMode": "sometimes"}, r"partitionOverwriteMode must be static or dynamic"),
])
def test_bad_options_on_write(spark, table, options, message):
    before = state(spark, table)
    with pytest.raises(Exception, match=message):
        save(spark.createDataFrame([(7, "x")], "id bigint, s string"), table, **options)
    assert state(spark, table) == before


def test_unknown_option_on_read(spark, table):
    with pytest.raises(Exception, match=r"unknown option 'scan.snapshot-idd' \(did you mean 'scan.snapshot-id'\?\)"):
        load(spark, table, **{"scan.snapshot-idd": "1"}).collect()


@pytest.mark.parametrize("select, message", [
    ("SELECT id FROM range(3)", r"missing column\(s\) \['s'\]"),
    ("SELECT id, 'a' AS s, 1.5D AS extra FROM range(3)", r"column\(s\) \['extra'\] not in the table"),
    ("SELECT cast(id AS int) AS id, 'a' AS s FROM range(3)",
     r"column 'id' is INT NOT NULL in the data but BIGINT in the table"),
    ("SELECT id, 1.5D AS s FROM range(3)", r"column 's' is DOUBLE NOT NULL in the data but STRING in the table"),
])
def test_schema_mismatch_on_second_write(spark, table, select, message):
    before = state(spark, table)
    with pytest.raises(Exception, match=message) as info:
        save(spark.sql(select), table)
    assert "Table columns: id BIGINT, s STRING" in str(info.value)
    assert state(spark, table) == before


def test_schema_mismatch_on_overwrite_keeps_the_table(spark, table):
    before = state(spark, table)
    with pytest.raises(Exception, match=r"missing column\(s\) \['s'\]"):
        save(spark.range(3), table, mode="overwrite")
    assert state(spark, table) == before


def test_write_into_a_non_paimon_directory_is_refused(spark, tmp_path):
    path = str(tmp_path / "plain")
    spark.range(10).write.parquet(path)
    before, names = files_under(path), sorted(os.listdir(path))
    assert any(f.endswith(".parquet") for f in before)
    with pytest.raises(Exception, match="holds files that are not a Paimon table; refusing to write there"):
        save(spark.range(3), path)
    with pytest.raises(Exception, match="holds files that are not a Paimon table; refusing to write there"):
        save(spark.range(3), path, mode="overwrite")
    assert files_under(path) == before and sorted(os.listdir(path)) == names  # nothing created, not even a mark
    assert spark.read.parquet(path).count() == 10


def test_read_missing_path(spark, tmp_path):
    path = str(tmp_path / "nothing-here")
    with pytest.raises(Exception, match=f"no Paimon table at {path}"):
        load(spark, path).collect()
    assert not os.path.exists(path)


def test_read_non_paimon_directory(spark, tmp_path):
    path = str(tmp_path / "plain")
    spark.range(10).write.parquet(path)
    with pytest.raises(Exception, match=f"{path} exists but is not a Paimon table"):
        load(spark, path).collect()


def test_read_without_path(spark):
    with pytest.raises(Exception, match="needs a table path"):
        spark.read.format("paimon").load().collect()


@pytest.mark.parametrize("mode", [None, "error", "errorifexists", "ignore"])
def test_error_and_ignore_modes_are_refused_by_spark(spark, table, mode):
    # Spark itself refuses these modes for Python data sources, before paimon_ds is asked
    before = state(spark, table)
    writer = spark.createDataFrame([(7, "x")], "id bigint, s string").write.format("paimon")
    if mode is not None:
        writer = writer.mode(mode)
    spark_mode = "Ignore" if mode == "ignore" else "ErrorIfExists"
    with pytest.raises(Exception, match=rf'\[UNSUPPORTED_DATA_SOURCE_SAVE_MODE\] The data source "paimon" cannot be '
                                        rf'written in the "{spark_mode}" mode. Please use either the "Append" or '
                                        r'"Overwrite" mode instead.'):
        writer.save(table)
    assert state(spark, table) == before


def test_plain_write_of_a_cross_partition_table_is_refused_before_any_task(spark, tmp_path):
    """A primary key without the partition key (bucket -1 by default) needs the global index's shuffle: only
    paimon_ds.write and its relatives can write it."""
    path = str(tmp_path / "pk")
    df = spark.range(3).selectExpr("id", "cast(id % 2 as string) AS dt")
    with pytest.raises(Exception, match=r"cross-partition upsert table.*paimon_ds.write\(df, path\)"):
        save(df, path, **{"primary-key": "id", "partition": "dt"})
    assert not os.path.exists(path)


def test_fixed_bucket_without_bucket_key_is_refused(spark, tmp_path):
    path = str(tmp_path / "b")
    with pytest.raises(Exception, match="fixed bucket count needs 'bucket-key'"):
        save(spark.range(3), path, bucket="4")
    with pytest.raises(Exception, match=r"bucket-key column\(s\) \['nope'\] are not in the data"):
        save(spark.range(3), path, bucket="4", **{"bucket-key": "nope"})
    assert not os.path.exists(path)


def test_null_into_not_null_column(spark, table_path):
    # a table created by the core with a NOT NULL column (Spark DataFrames are often all-nullable)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    t = Table.for_write(table_path, schema)
    w = t.new_write()
    w.write_arrow(pa.table({"id": [1, 2], "s": ["a", "b"]}, schema=schema))
    t.new_commit().commit(w.prepare_commit())
    before = state(spark, table_path)
    assert load(spark, table_path).schema["id"].nullable is False
    df = spark.createDataFrame([(3, "c"), (None, "d"), (5, "e")], "id bigint, s string")
    with pytest.raises(Exception, match=r"column 'id' is NOT NULL in the table but the data has 1 null value"):
        save(df.repartition(2), table_path)
    assert state(spark, table_path) == before
    # non-null data in a nullable DataFrame is fine
    save(spark.createDataFrame([(3, "c")], "id bigint, s string"), table_path)
    assert sorted_rows(read_arrow(spark, table_path)) == [
        {"id": 1, "s": "a"}, {"id": 2, "s": "b"}, {"id": 3, "s": "c"}]


@pytest.mark.parametrize("bad_id", [150_000, 170_000, 199_999])
def test_failing_task_leaves_no_snapshot_and_no_files(spark, table, bad_id):
    """A UDF raising mid-write fails the job: no snapshot, and no data file of the job stays.

    Spark hands abort() only the messages of tasks that succeeded; the failing task's writer sees
    a normal end of input (it writes its files) and the other running task is killed mid-write.
    """
    before = state(spark, table)

    @F.udf("bigint")
    def boom(x):  # no type hints: pyspark would read them as a pandas UDF signature
        if x == bad_id:
            raise ValueError(f"boom at id {x}")
        return x

    df = spark.range(0, 200_000, numPartitions=4).select(boom("id").alias("id"), F.lit("z").alias("s"))
    with pytest.raises(Exception, match=f"boom at id {bad_id}"):
        # small row groups: files are on disk long before a task ends
        save(df, table, **{"parquet.block.size": "64kb"})
    time.sleep(1.5)  # killed tasks may still be finishing: their files must go too
    assert state(spark, table) == before  # files included: no data file of the failed job is left
    # the job left only its hidden abort mark, which readers and writers ignore
    assert len(os.listdir(os.path.join(table, ABORT_MARKER_DIR))) >= 1
    save(spark.createDataFrame([(6, "f")], "id bigint, s string"), table)
    assert sorted_rows(read_arrow(spark, table)) == by_key(ROWS + [{"id": 6, "s": "f"}])


def test_failing_first_write_leaves_no_table(spark, tmp_path):
    path = str(tmp_path / "new")

    @F.udf("bigint")
    def boom(x):  # no type hints: pyspark would read them as a pandas UDF signature
        if x == 30_000:
            raise ValueError("boom on the first write")
        return x

    with pytest.raises(Exception, match="boom on the first write"):
        save(spark.range(0, 40_000, numPartitions=2).select(boom("id").alias("id")), path,
             **{"parquet.block.size": "64kb"})
    time.sleep(1.5)
    assert files_under(path) == []
    with pytest.raises(Exception, match="no Paimon table at|is not a Paimon table"):
        load(spark, path).collect()
    # the directory can still become a table
    save(spark.range(3), path)
    assert sorted_rows(read_arrow(spark, path)) == [{"id": 0}, {"id": 1}, {"id": 2}]
