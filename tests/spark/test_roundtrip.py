"""Spark write -> Spark read gives back exactly what was written: types, layouts, modes."""

from __future__ import annotations

import datetime as dt
import os
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from paimon_ds import Table

from ._helpers import (
    by_key,
    data_files_on_disk,
    java_bucket_of_bigint,
    latest_snapshot,
    live_files,
    load,
    read_arrow,
    save,
    snapshot_ids,
    sorted_rows,
)

# with Spark's code generation and interpreted (tests/conftest.py: INTERPRETED)
pytestmark = pytest.mark.usefixtures("with_codegen")

UTC = dt.timezone.utc


def all_types_table(n: int = 120) -> pa.Table:
    """One column per supported type, with nulls and edge values."""
    rng = random.Random(7)

    def maybe(v, p: float = 0.15):
        return None if rng.random() < p else v

    ids = list(range(n))
    strings = ["", "日本語 ✓ 🚀", "x" * 10_000, "a\u0000b", "plain"]
    cols = {
        "id": pa.array(ids, pa.int64()),
        "t8": pa.array([maybe([-128, 127, 0][i % 3]) for i in ids], pa.int8()),
        "t16": pa.array([maybe([-32768, 32767, 1][i % 3]) for i in ids], pa.int16()),
        "t32": pa.array([maybe([-(2**31), 2**31 - 1, i][i % 3]) for i in ids], pa.int32()),
        "t64": pa.array([maybe([-(2**63), 2**63 - 1, i * 7][i % 3]) for i in ids], pa.int64()),
        "f32": pa.array([maybe([1.5, -0.25, float("inf"), 3.4e38][i % 4]) for i in ids], pa.float32()),
        "f64": pa.array([maybe([1e-300, -1.7e308, float("-inf"), i / 3][i % 4]) for i in ids], pa.float64()),
        "d10": pa.array([maybe(Decimal(rng.randint(-(10**10) + 1, 10**10 - 1)).scaleb(-2)) for _ in ids],
                        pa.decimal128(10, 2)),
        "d38": pa.array([maybe(Decimal("9" * 28 + "." + "9" * 10) if i == 0 else
                               Decimal(rng.randint(-(10**38) + 1, 10**38 - 1)).scaleb(-10)) for i in ids],
                        pa.decimal128(38, 10)),
        "s": pa.array([maybe(strings[i % len(strings)]) for i in ids], pa.string()),
        "bin": pa.array([maybe([b"", b"\x00\xff\x10", bytes(range(256)) * 20][i % 3]) for i in ids], pa.binary()),
        "b": pa.array([maybe(i % 2 == 0) for i in ids], pa.bool_()),
        "d": pa.array([maybe([dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2024, 2, 29),
                              dt.date(9999, 12, 31)][i % 4]) for i in ids], pa.date32()),
        "ts": pa.array([maybe([dt.datetime(1969, 12, 31, 23, 59, 59, 999999, UTC),
                               dt.datetime(2024, 6, 1, 12, 30, 45, 123456, UTC),
                               dt.datetime(1900, 1, 1, tzinfo=UTC)][i % 3]) for i in ids], pa.timestamp("us", "UTC")),
        "ntz": pa.array([maybe([dt.datetime(1970, 1, 1), dt.datetime(2038, 1, 19, 3, 14, 8, 1),
                                dt.datetime(1969, 7, 20, 20, 17, 40, 5)][i % 3]) for i in ids], pa.timestamp("us")),
        "arr": pa.array([maybe([1, None, i] if i % 4 else []) for i in ids], pa.list_(pa.int32())),
        "m": pa.array([maybe([("a", i), ("b", None)] if i % 3 else []) for i in ids], pa.map_(pa.string(), pa.int64())),
        "st": pa.array([maybe({"a": maybe(i), "b": maybe(f"s{i}")}) for i in ids],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "arr_st": pa.array([maybe([{"x": i, "y": [1, None]}, None, {"x": None, "y": None}]) for i in ids],
                           pa.list_(pa.struct([("x", pa.int32()), ("y", pa.list_(pa.int32()))]))),
        "m_arr": pa.array([maybe([("k", [i, None]), ("e", []), ("n", None)]) for i in ids],
                          pa.map_(pa.string(), pa.list_(pa.int32()))),
    }
    return pa.table(cols)


def test_every_type_round_trips(spark, table_path):
    data = all_types_table()
    # createDataFrame reads a zone-less Arrow timestamp as Spark's TIMESTAMP (LTZ): make it TIMESTAMP_NTZ
    df = spark.createDataFrame(data).withColumn("ntz", F.col("ntz").cast("timestamp_ntz"))
    assert dict(df.dtypes)["ntz"] == "timestamp_ntz" and dict(df.dtypes)["ts"] == "timestamp"
    save(df, table_path)
    back = load(spark, table_path)
    assert back.schema == df.schema  # Spark types survive Paimon's type system
    # the Paimon schema names the Paimon types Spark's types map to
    assert [f.type.sql() for f in Table.load(table_path).schema().fields[:15]] == [
        "BIGINT", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(10, 2)", "DECIMAL(38, 10)",
        "STRING", "BYTES", "BOOLEAN", "DATE", "TIMESTAMP(6) WITH LOCAL TIME ZONE", "TIMESTAMP(6)"]
    assert sorted_rows(back.toArrow()) == sorted_rows(data)
    # and Spark's own row objects agree too (Spark's conversion, not only Arrow's)
    assert sorted(back.collect(), key=lambda r: r.id) == sorted(df.collect(), key=lambda r: r.id)


def test_null_heavy_and_all_null_columns(spark, table_path):
    n = 5000
    rng = random.Random(3)
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "mostly_null": pa.array([None if rng.random() < 0.9 else rng.randint(0, 100) for _ in range(n)], pa.int32()),
        "mostly_null_s": pa.array([None if rng.random() < 0.9 else f"v{rng.random()}" for _ in range(n)]),
        "all_null_i": pa.nulls(n, pa.int64()),
        "all_null_s": pa.nulls(n, pa.string()),
        "all_null_arr": pa.nulls(n, pa.list_(pa.int32())),
    })
    save(spark.createDataFrame(data), table_path)
    back = read_arrow(spark, table_path)
    assert sorted_rows(back) == sorted_rows(data)
    assert back.column("all_null_i").null_count == n and back.column("all_null_s").null_count == n
    nulls = data.column("mostly_null").null_count
    assert 0.85 * n < nulls < 0.95 * n and back.column("mostly_null").null_count == nulls
    # the null-only column still filters correctly (its stats are all-null)
    assert load(spark, table_path).where("all_null_i IS NULL").count() == n
    assert load(spark, table_path).where("all_null_i = 1").count() == 0


def test_empty_dataframe_creates_table_without_snapshot(spark, table_path):
    schema = "id bigint, s string, d decimal(10,2)"
    save(spark.createDataFrame([], schema), table_path)
    # the table exists (schema-0) but holds no snapshot and no data
    assert sorted(os.listdir(table_path)) == ["schema"]
    assert snapshot_ids(table_path) == []
    empty = load(spark, table_path)
    assert empty.schema == spark.createDataFrame([], schema).schema
    assert empty.collect() == [] and empty.toArrow().num_rows == 0
    # an empty append to an existing table adds no snapshot either
    save(spark.createDataFrame([(1, "a", Decimal("1.50"))], schema), table_path)
    save(spark.createDataFrame([], schema), table_path)
    assert snapshot_ids(table_path) == [1]
    assert [tuple(r) for r in load(spark, table_path).collect()] == [(1, "a", Decimal("1.50"))]


def test_wide_schema_300_columns(spark, table_path):
    cols = []
    for i in range(300):
        kind = i % 3
        if kind == 0:
            cols.append((F.col("id") * i).alias(f"c{i:03d}"))
        elif kind == 1:
            cols.append(F.concat(F.lit(f"v{i}-"), F.col("id").cast("string")).alias(f"c{i:03d}"))
        else:
            cols.append(F.when(F.col("id") % 7 == 0, None).otherwise(F.col("id") / (i + 1)).alias(f"c{i:03d}"))
    df = spark.range(40).select(F.col("id"), *cols)
    save(df, table_path)
    back = load(spark, table_path)
    assert back.columns == df.columns and len(back.columns) == 301
    assert sorted_rows(back.toArrow()) == sorted_rows(df.toArrow())


def test_deeply_nested_schema(spark, table_path):
    df = spark.sql("""
        SELECT id,
          named_struct('l1', named_struct('l2', array(named_struct(
              'l3', map('k', named_struct('l4', array(array(id, NULL)), 'l4s', cast(id AS string))),
              'n', IF(id % 2 = 0, NULL, id))))) AS deep,
          array(array(array(map('x', array(named_struct('v', id))))))                       AS arrays
        FROM range(25)""")
    save(df, table_path)
    back = load(spark, table_path)
    assert back.schema == df.schema
    assert sorted(back.collect(), key=lambda r: r.id) == sorted(df.collect(), key=lambda r: r.id)


def test_partitioned_one_key(spark, table_path):
    df = spark.sql("SELECT id, concat('v', id) AS v, cast(id % 3 AS string) AS dt FROM range(30)")
    save(df, table_path, partition="dt")
    assert sorted(d for d in os.listdir(table_path) if "=" in d) == ["dt=0", "dt=1", "dt=2"]
    assert Table.load(table_path).partition_keys == ["dt"]
    assert sorted_rows(read_arrow(spark, table_path)) == sorted_rows(df.toArrow())


def test_partitioned_two_keys_with_null_partition_value(spark, table_path):
    df = spark.sql("""SELECT id, IF(id % 3 = 0, NULL, cast(id % 3 AS string)) AS dt, id % 2 AS h, 'x' AS v
                      FROM range(24)""")
    save(df, table_path, partition="dt,h")
    dirs = sorted(f"{d}/{h}" for d in os.listdir(table_path) if "=" in d for h in os.listdir(Path(table_path, d)))
    assert dirs == ["dt=1/h=0", "dt=1/h=1", "dt=2/h=0", "dt=2/h=1",
                    "dt=__DEFAULT_PARTITION__/h=0", "dt=__DEFAULT_PARTITION__/h=1"]
    back = read_arrow(spark, table_path)
    assert sorted_rows(back) == sorted_rows(df.toArrow())
    assert sum(1 for r in back.to_pylist() if r["dt"] is None) == 8
    # every data file sits under the directory of its rows' partition
    for rel, _ in live_files(table_path):
        assert rel.split("/")[0] in ("dt=1", "dt=2", "dt=__DEFAULT_PARTITION__")


def test_unpartitioned_unaware_bucket(spark, table_path):
    df = spark.range(0, 1000, numPartitions=3).withColumn("s", F.col("id").cast("string"))
    save(df, table_path)  # bucket defaults to -1: append table, unaware bucket
    assert Table.load(table_path).bucket == -1
    assert {rel for rel, _ in live_files(table_path)} == {"bucket-0"}
    assert len(live_files(table_path)) == 3  # one file per task
    assert sorted_rows(read_arrow(spark, table_path)) == sorted_rows(df.toArrow())


def test_fixed_bucket_rows_land_in_paimons_bucket(spark, table_path):
    df = spark.range(0, 600, numPartitions=4).withColumn("dt", F.when(F.col("id") < 300, "a").otherwise("b"))
    opts = {"bucket": "3", "bucket-key": "id", "partition": "dt"}
    save(df, table_path, **opts)
    save(spark.range(0, 600, 7, numPartitions=2).withColumn("dt", F.lit("a")), table_path, **opts)
    table = Table.load(table_path)
    seen: dict[int, set[str]] = {}
    for split in table.new_scan().plan():
        rel = os.path.relpath(split.directory, table.root)
        assert rel.split("/")[1] == f"bucket-{split.bucket}"
        for batch in table.new_read().read(split):
            for i in batch.column("id").to_pylist():
                # independent reference: murmur3 of the BinaryRow bytes, Java's remainder
                assert split.bucket == java_bucket_of_bigint(i, 3), (i, split.bucket)
                seen.setdefault(i, set()).add(rel)
    assert {rel.split("/")[1] for rels in seen.values() for rel in rels} == {"bucket-0", "bucket-1", "bucket-2"}
    expected = sorted_rows(df.toArrow()) + [{"id": i, "dt": "a"} for i in range(0, 600, 7)]
    assert sorted_rows(read_arrow(spark, table_path)) == by_key(expected)


def test_appends_accumulate_across_commits(spark, table_path):
    expected: list[dict] = []
    for commit in range(1, 4):
        df = spark.range(commit * 100, commit * 100 + 10 * commit).withColumn("c", F.lit(commit))
        save(df, table_path)
        expected += df.toArrow().to_pylist()
        assert snapshot_ids(table_path) == list(range(1, commit + 1))
        assert sorted_rows(read_arrow(spark, table_path)) == by_key(expected)
        snap = latest_snapshot(table_path)
        assert snap.commit_kind == "APPEND" and snap.total_record_count == len(expected)
        assert snap.delta_record_count == 10 * commit


def test_overwrite_replaces_whole_table(spark, table_path):
    first = spark.sql("SELECT id, cast(id % 4 AS string) AS dt FROM range(40)")
    save(first, table_path, partition="dt")
    second = spark.sql("SELECT id + 1000 AS id, '1' AS dt FROM range(5)")
    save(second, table_path, mode="overwrite")
    # static overwrite (the default): partitions not written are gone too
    assert sorted_rows(read_arrow(spark, table_path)) == sorted_rows(second.toArrow())
    snap = latest_snapshot(table_path)
    assert snap.commit_kind == "OVERWRITE" and snap.total_record_count == 5 and snapshot_ids(table_path) == [1, 2]
    # data files of the replaced snapshot are no longer read
    assert {rel.split("/")[0] for rel, _ in live_files(table_path)} == {"dt=1"}


def test_overwrite_unpartitioned(spark, table_path):
    save(spark.range(10), table_path)
    save(spark.range(100, 103), table_path, mode="overwrite")
    assert sorted_rows(read_arrow(spark, table_path)) == [{"id": i} for i in (100, 101, 102)]
    # the old snapshot still reads as it was (time travel sees the replaced data)
    assert sorted_rows(read_arrow(spark, table_path, **{"scan.snapshot-id": "1"})) == [{"id": i} for i in range(10)]


def test_dynamic_partition_overwrite_replaces_only_written_partitions(spark, table_path):
    first = spark.sql("SELECT id, cast(id % 4 AS string) AS dt FROM range(40)")
    save(first, table_path, partition="dt")
    second = spark.sql("SELECT id + 1000 AS id, IF(id < 3, '1', '3') AS dt FROM range(5)")
    save(second, table_path, mode="overwrite", partitionOverwriteMode="dynamic")
    kept = [r for r in first.toArrow().to_pylist() if r["dt"] in ("0", "2")]
    assert sorted_rows(read_arrow(spark, table_path)) == by_key(kept + second.toArrow().to_pylist())
    assert latest_snapshot(table_path).total_record_count == len(kept) + 5
    # the Paimon key for the same thing works too
    third = spark.sql("SELECT 7L AS id, '0' AS dt")
    save(third, table_path, mode="overwrite", **{"dynamic-partition-overwrite": "true"})
    rows = read_arrow(spark, table_path).to_pylist()
    assert sorted(r["id"] for r in rows if r["dt"] == "0") == [7]
    assert len(rows) == 1 + 10 + 5


def test_columns_matched_by_name_not_position(spark, table_path):
    save(spark.sql("SELECT id, cast(id AS string) AS s, id * 2 AS x FROM range(5)"), table_path)
    # same columns, another order, and types that would be wrong if matched by position
    save(spark.sql("SELECT id * 3 AS x, concat('r', id) AS s, id + 100 AS id FROM range(3)"), table_path)
    back = load(spark, table_path)
    assert back.columns == ["id", "s", "x"]
    assert sorted_rows(back.toArrow()) == (
        [{"id": i, "s": str(i), "x": i * 2} for i in range(5)]
        + [{"id": i + 100, "s": f"r{i}", "x": i * 3} for i in range(3)])


def test_target_file_size_rolls_files(spark, table_path):
    n = 200_000
    df = spark.range(0, n, numPartitions=1).select(
        "id", F.sha2(F.col("id").cast("string"), 256).alias("h"), (F.col("id") * 1.5).alias("f"))
    save(df, table_path, **{"target-file-size": "1mb"})
    table = Table.load(table_path)
    files = [f for s in table.new_scan().plan() for f in s.files]
    # one task wrote everything: more than one file means the writer rolled at the target size
    assert len(files) >= 4, [f.file_size for f in files]
    assert sum(f.row_count for f in files) == n and len(data_files_on_disk(table_path)) == len(files)
    assert all(f.file_size < 3 * (1 << 20) for f in files), [f.file_size for f in files]
    back = load(spark, table_path)
    assert back.count() == n
    assert back.agg(F.sum("id"), F.countDistinct("id"), F.countDistinct("h")).first() == (n * (n - 1) // 2, n, n)


def test_written_table_is_readable_by_the_core(spark, table_path):
    """The Spark path and the core API see the same table (no Spark-only state)."""
    df = spark.sql("SELECT id, cast(id % 2 AS string) AS dt, array(id) AS a FROM range(50)")
    save(df, table_path, partition="dt")
    assert sorted_rows(Table.load(table_path).to_arrow()) == sorted_rows(df.toArrow())


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_write_to_new_nested_path(spark, tmp_path, mode):
    path = str(tmp_path / "deep" / "er" / "t")
    save(spark.range(3), path, mode=mode)
    assert sorted_rows(read_arrow(spark, path)) == [{"id": 0}, {"id": 1}, {"id": 2}]
    assert snapshot_ids(path) == [1]
