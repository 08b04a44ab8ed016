"""The package's shuffles put each slot's rows in the Spark partition of that number (spark/shuffle.py), so a
clustered write's buckets are spread evenly over its tasks instead of where Spark's hash of the ids falls."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import paimon_ds
from paimon_ds import Table
from paimon_ds.format.bucket import bucket_ids
from paimon_ds.schema.types import parse_type
from paimon_ds.spark.shuffle import repartition_by_bucket, repartition_by_slot, stand_ins


@pytest.mark.parametrize("n", [2, 3, 4, 7, 200])
def test_stand_ins_land_in_their_partition(spark, n: int):
    keys = stand_ins(n)
    assert len(keys) == n == len(set(keys))
    df = spark.createDataFrame([(k,) for k in keys], "k INT").repartition(n, "k")
    placed = {r["k"]: r["p"] for r in df.select("k", F.spark_partition_id().alias("p")).collect()}
    assert placed == {k: p for p, k in enumerate(keys)}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_rows_of_a_slot_meet_in_the_partition_of_that_number(spark, n: int):
    df = spark.range(0, 1000).withColumn("slot", F.col("id") % 11)
    out = repartition_by_slot(df, n, "slot").select("slot", F.spark_partition_id().alias("p"))
    assert out.columns == ["slot", "p"]
    seen = {(r["slot"], r["p"]) for r in out.collect()}
    assert seen == {(s, s % n) for s in range(11)}


@pytest.mark.parametrize("partitioned", [False, True])
def test_buckets_take_turns_over_the_tasks(spark, partitioned: bool):
    # Spark's own hash partitioning puts buckets 0, 1 and 3 of 4 into one of 2 tasks (3:1); slots give 2:2
    assert Counter(r["p"] for r in spark.createDataFrame([(b,) for b in range(4)], "b INT")
                   .repartition(2, "b").select(F.spark_partition_id().alias("p")).collect()) == {1: 3, 0: 1}
    df = spark.range(0, 4000).selectExpr("id", "CAST(id % 3 AS INT) AS dt")
    out = repartition_by_bucket(df.withColumn("b", F.expr("CAST(pmod(id * 7, 4) AS INT)")), 2, "b",
                                ["dt"] if partitioned else [])
    placed = {(r["dt"], r["b"], r["p"]) for r in out.select("dt", "b", F.spark_partition_id().alias("p")).collect()}
    by_group: dict[tuple[int, int], set[int]] = {}
    for dt, b, p in placed:
        by_group.setdefault((dt, b), set()).add(p)
    assert all(len(ps) == 1 for ps in by_group.values())  # a (partition, bucket) is written by one task
    for dt in range(3):
        tasks = [by_group[(dt, b)].pop() for b in range(4)]
        assert tasks[0] == tasks[2] and tasks[1] == tasks[3] and tasks[0] != tasks[1]
        if not partitioned:
            assert tasks == [0, 1, 0, 1]


def test_clustered_write_keeps_every_row_in_its_bucket(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(0, 4000).selectExpr("id", "CAST(id * 2 AS DOUBLE) AS v")
    paimon_ds.write(df, path, options={"primary-key": "id", "bucket": "4"}, parallelism=2)
    files = Table.load(path).new_scan().read_entries()
    expected = Counter(bucket_ids([pa.array(range(4000), pa.int64())], [parse_type("BIGINT")], 4).tolist())
    assert sorted(e.bucket for e in files) == [0, 1, 2, 3]
    assert {e.bucket: e.file.row_count for e in files} == dict(expected)
    assert paimon_ds.read(spark, path).orderBy("id").collect() == df.orderBy("id").collect()
