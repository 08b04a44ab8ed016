"""Spark's entry points run the maintenance after their commits: `df.write.format("paimon")` and a plain `spark.sql`
INSERT drop the partitions `partition.expiration-time` expires and tag the write (`tag.automatic-creation` batch)."""

from __future__ import annotations

import datetime as dt

from paimon_ds import Table
from paimon_ds.operation.scan import TableScan


def partitions(path: str) -> list[str]:
    table = Table.load(path)
    scan = TableScan(table)
    return sorted({scan.partition_dir(e.partition) for e in scan.read_entries()})


def batch_tag(path: str) -> dict[str, int]:
    sm = Table.load(path).snapshot_manager
    return {n: sm.tag(n).id for n in sm.tag_names()}


def test_spark_writes_expire_partitions_and_tag(spark, tmp_path):
    path = str(tmp_path / "t")
    options = {"partition": "dt", "partition.expiration-time": "1 d", "partition.expiration-check-interval": "0",
               "tag.automatic-creation": "batch", "tag.batch.customized-name": "last-write"}
    (spark.createDataFrame([(1, "2020-01-01"), (2, "2099-01-01"), (3, "2020-01-02")], "id INT, dt STRING")
     .write.format("paimon").options(**options).mode("append").save(path))
    assert partitions(path) == ["dt=2099-01-01"]
    assert [(s.commit_kind, s.delta_record_count) for s in Table.load(path).snapshots()] == [
        ("APPEND", 3), ("OVERWRITE", -2)]
    assert batch_tag(path) == {"last-write": 2}

    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW partition_expire_t USING paimon OPTIONS (path '{path}')")
    spark.sql("INSERT INTO partition_expire_t VALUES (4, '2020-06-01'), (5, '2099-01-02')")
    assert partitions(path) == ["dt=2099-01-01", "dt=2099-01-02"]
    assert [s.commit_kind for s in Table.load(path).snapshots()] == ["APPEND", "OVERWRITE", "APPEND", "OVERWRITE"]
    assert batch_tag(path) == {"last-write": 4}
    assert sorted((r.id, r.dt) for r in spark.read.format("paimon").load(path).collect()) == [
        (2, "2099-01-01"), (5, "2099-01-02")]
    assert sorted(r.id for r in spark.read.format("paimon").option("scan.tag-name", "last-write").load(path)
                  .collect()) == [2, 5]
    assert dt.date.today().year < 2099  # the partitions of 2099 stay for this test's lifetime
