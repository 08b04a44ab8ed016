"""Apache Paimon 1.4.1's `TableValuedFunctionsTest` (paimon-spark-ut/.../spark/sql/), ported: its statements and
expected rows are the specification, run through paimon_ds.sql (Spark gives a Python data source no table
functions; paimon_ds.sql routes `paimon_incremental_query` and `paimon_incremental_between_timestamp`).

Adapted: Paimon runs the incremental cases in three catalogs (paimon, spark_catalog, a Hive catalog); here the
one catalog paimon_ds attaches (spark_catalog) runs them. `incrementalDF` (spark.read.format("paimon")
.option("incremental-between", ...).table(t)) is paimon_ds.read(spark, path, {"incremental-between": ...}) (a Python
source's catalog table takes no read options). Java's `table.createTag(name, snapshot)` is
`CALL sys.create_tag(table => ..., tag => ..., snapshot => ...)`.

Listed: `paimon_incremental_to_auto_tag` (two cases) reads the option `incremental-to-auto-tag`, which paimon_ds
refuses by name; `paimon_incremental_query` between two tags or snapshot ids is the way.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest

import paimon_ds
from paimon_ds.spark.catalog import WAREHOUSE_CONF

from ._sql import rows, sql


def _path(spark, table: str) -> str:
    return paimon_ds.Catalog(spark.conf.get(WAREHOUSE_CONF)).table_path(f"{spark.catalog.currentDatabase()}.{table}")


def _incremental_df(spark, table: str, start: int, end: int) -> list[tuple]:
    df = paimon_ds.read(spark, _path(spark, table), options={"incremental-between": f"{start},{end}"})
    return [tuple(r) for r in df.orderBy("a", "b").collect()]


@pytest.mark.parametrize("bucket", (3, -1))
@pytest.mark.parametrize("has_pk", (True, False))
def test_incremental_query(spark, wh, has_pk, bucket):
    if has_pk:
        prop = f"'primary-key'='a,b', 'bucket' = '{bucket}'"
    elif bucket != -1:
        prop = f"'bucket-key'='b', 'bucket' = '{bucket}'"
    else:
        prop = "'write-only'='true'"
    sql(spark, f"CREATE TABLE t (a INT, b INT, c STRING) PARTITIONED BY (a) TBLPROPERTIES ({prop})")
    sql(spark, "INSERT INTO t values (1, 1, '1'), (2, 2, '2')")
    sql(spark, "INSERT INTO t VALUES (1, 3, '3'), (2, 4, '4')")
    sql(spark, "INSERT INTO t VALUES (1, 5, '5'), (1, 7, '7')")
    for start, end, expected in ((0, 1, [(1, 1, "1"), (2, 2, "2")]), (1, 2, [(1, 3, "3"), (2, 4, "4")]),
                                 (2, 3, [(1, 5, "5"), (1, 7, "7")]),
                                 (1, 3, [(1, 3, "3"), (1, 5, "5"), (1, 7, "7"), (2, 4, "4")])):
        assert _incremental_df(spark, "t", start, end) == expected, (start, end)
        assert rows(spark, f"SELECT * FROM paimon_incremental_query('t', '{start}', '{end}') ORDER BY a, b") == \
            expected, (start, end)


def test_paimon_incremental_between_timestamp(spark, wh):
    db = "test_tvf_db"
    sql(spark, f"CREATE DATABASE {db}")
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase(db)
    try:
        sql(spark, "CREATE TABLE t (id INT)")
        sql(spark, "INSERT INTO t VALUES 1")
        time.sleep(0.1)
        t1 = int(time.time() * 1000)
        sql(spark, "INSERT INTO t VALUES 2")
        time.sleep(0.1)
        t2 = int(time.time() * 1000)
        sql(spark, "INSERT INTO t VALUES 3")
        sql(spark, "INSERT INTO t VALUES 4")
        time.sleep(0.1)
        t3 = int(time.time() * 1000)
        sql(spark, "INSERT INTO t VALUES 5")
        tvf = "SELECT * FROM paimon_incremental_between_timestamp('{}', '{}', '{}') ORDER BY id"
        assert rows(spark, tvf.format("t", t1, t2)) == [(2,)]
        assert rows(spark, tvf.format(f"{db}.t", t2, t3)) == [(3,), (4,)]
        assert rows(spark, tvf.format(f"spark_catalog.{db}.t", t1, t3)) == [(2,), (3,), (4,)]

        def local(millis: int) -> str:  # DateTimeUtils.formatLocalDateTime(toLocalDateTime(t), 3)
            return dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

        assert rows(spark, tvf.format(f"spark_catalog.{db}.t", local(t1), local(t3))) == [(2,), (3,), (4,)]
    finally:
        spark.catalog.setCurrentDatabase(previous)


@pytest.mark.skip(reason="paimon_incremental_to_auto_tag reads the option incremental-to-auto-tag, which paimon_ds "
                         "refuses by name; paimon_incremental_query between two tags is the way")
def test_paimon_incremental_to_auto_tag(spark, wh):
    pass


@pytest.mark.skip(reason="its paimon_incremental_to_auto_tag step reads the option incremental-to-auto-tag, which "
                         "paimon_ds refuses by name; and its ALTER TABLE SET ('bucket' = '2') on a table with data "
                         "is refused (paimon_ds does not rescale buckets). Its paimon_incremental_query steps: "
                         "test_incremental_query_with_tags_without_rescale")
def test_incremental_query_with_inconsistent_tag_bucket(spark, wh):
    pass


def test_incremental_query_with_tags_without_rescale(spark, wh):
    """The case above without its bucket rescale (ALTER 'bucket' and INSERT OVERWRITE) and its
    paimon_incremental_to_auto_tag step, so each tag names one snapshot less (not counted as a Paimon case)."""
    sql(spark, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ('primary-key'='a', 'bucket' = '1')")
    db = spark.catalog.currentDatabase()

    def tag(name: str, snapshot: int) -> None:
        sql(spark, f"CALL sys.create_tag(table => '{db}.t', tag => '{name}', snapshot => {snapshot})")

    sql(spark, "INSERT INTO t VALUES (1, 11), (2, 22)")
    tag("2024-01-01", 1)
    sql(spark, "INSERT INTO t VALUES (3, 33)")
    tag("2024-01-03", 2)
    sql(spark, "DELETE FROM t WHERE a = 1")
    tag("2024-01-04", 3)
    sql(spark, "UPDATE t SET b = 222 WHERE a = 2")
    tag("2024-01-05", 4)
    tvf = "SELECT * FROM paimon_incremental_query('{}', '{}', '{}') ORDER BY a, b"
    assert rows(spark, tvf.format("t", "2024-01-01", "2024-01-03")) == [(3, 33)]
    assert rows(spark, tvf.format("t", "2024-01-01", "2024-01-04")) == [(3, 33)]
    assert rows(spark, tvf.format("t", "2024-01-01", "2024-01-05")) == [(2, 222), (3, 33)]
    assert rows(spark, tvf.format("`t$audit_log`", "2024-01-01", "2024-01-04")) == [("-D", 1, 11), ("+I", 3, 33)]
    assert rows(spark, tvf.format("`t$audit_log`", "2024-01-01", "2024-01-05")) == [
        ("-D", 1, 11), ("+U", 2, 222), ("+I", 3, 33)]


WRITE_ONLY_PK = "CREATE TABLE t (id INT) TBLPROPERTIES ('primary-key'='id', 'bucket' = '1', 'write-only' = 'true')"


def _levels(spark, db: str, tag: str) -> list[tuple]:
    return rows(spark, f"SELECT level FROM {db}.`t$files` VERSION AS OF '{tag}' ORDER BY level")


def _audit_between(spark, start: str, end: str) -> list[tuple]:
    return rows(spark, f"SELECT * FROM paimon_incremental_query('`t$audit_log`', '{start}', '{end}') ORDER BY id")


def test_incremental_query_with_delete_after_minor_compact(spark, wh):
    sql(spark, WRITE_ONLY_PK)
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id FROM range (1, 100001)")
    sql(spark, f"CALL sys.compact(table => '{db}.t')")
    sql(spark, "INSERT INTO t VALUES 100001")
    sql(spark, "INSERT INTO t VALUES 100002")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag1')")
    sql(spark, f"CALL sys.compact(table => '{db}.t', compact_strategy => 'minor', "
               "options => 'num-sorted-run.compaction-trigger=2')")
    sql(spark, "DELETE FROM t WHERE id = 999")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag2')")
    assert _levels(spark, db, "tag1") == [(0,), (0,), (5,)]
    assert _levels(spark, db, "tag2") == [(0,), (4,), (5,)]
    assert _audit_between(spark, "tag1", "tag2") == [("-D", 999)]


def test_incremental_query_with_delete_after_compact(spark, wh):
    sql(spark, WRITE_ONLY_PK)
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO t VALUES 1")
    sql(spark, "INSERT INTO t VALUES 2")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag1')")
    sql(spark, f"CALL sys.compact(table => '{db}.t')")
    sql(spark, "DELETE FROM t WHERE id = 1")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag2')")
    assert _levels(spark, db, "tag1") == [(0,), (0,)]
    assert _levels(spark, db, "tag2") == [(0,), (5,)]
    assert _audit_between(spark, "tag1", "tag2") == [("-D", 1)]


def test_incremental_query_with_delete_after_compact2(spark, wh):
    sql(spark, WRITE_ONLY_PK)
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO t VALUES 1")
    sql(spark, "DELETE FROM t WHERE id = 1")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag1')")
    sql(spark, f"CALL sys.compact(table => '{db}.t')")
    sql(spark, "INSERT INTO t VALUES 1")
    sql(spark, "DELETE FROM t WHERE id = 1")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag2')")
    assert _levels(spark, db, "tag1") == [(0,), (0,)]
    assert _levels(spark, db, "tag2") == [(0,), (0,)]
    assert _audit_between(spark, "tag1", "tag2") == []


def test_incremental_query_by_tag_with_limit(spark, wh):
    sql(spark, "CREATE TABLE t (a INT, b INT, c STRING) PARTITIONED BY (a) "
               "TBLPROPERTIES ('primary-key'='a,b', 'bucket' = '2')")
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO t VALUES (1, 1, '1'), (2, 2, '2')")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag1')")
    sql(spark, "INSERT INTO t VALUES (1, 3, '3'), (2, 4, '4')")
    sql(spark, f"CALL sys.create_tag('{db}.t', 'tag2')")
    assert rows(spark, "SELECT * FROM paimon_incremental_query('t', 'tag1', 'tag2') ORDER BY a, b LIMIT 5") == [
        (1, 3, "3"), (2, 4, "4")]
