"""Apache Paimon 1.4.1's `PaimonPushDownTestBase` (paimon-spark-ut/.../spark/sql/; run by each Spark module's
`PaimonPushDownTest`, which adds no case), ported: its statements and expected rows are the specification, run
through paimon_ds.sql.

Paimon's push-down assertions inspect Spark's plan of Paimon's Java V2 scan (a `Filter` left in the optimized
plan, `SupportsPushDownLimit` / `SupportsPushDownTopN` scan builders and their input splits, DYNAMIC_PRUNING
subqueries, BatchScanExec's filtered partitions). A Python source's scan is none of these, so those checks are not
ported; each case's rows are. Where paimon_ds's planning is observable it is asserted instead: paimon_ds.sql reads
an attached table with the WHERE clause's partition tests applied to the plan, so the files of the partitions they
rule out are never opened; shown by deleting those files (a read given a missing file fails).

Plan-shape-only checks not ported (reason: they inspect Paimon's Java scan objects or Spark's plan of it):
checkFilterExists / checkEqualToFilterExists (partition filter push down, CONCAT, TRIM, UPPER, LOWER, SUBSTRING,
CAST cases), the input-split counts of `pushLimit` (limit cases), DYNAMIC_PRUNING_SUBQUERY patterns (runtime
filter), the filtered input splits of fact_table (combined runtime filter), SupportsPushDownTopN and the SORT /
LIMIT patterns (TopN cases).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import uuid

import paimon_ds
from paimon_ds.spark.catalog import WAREHOUSE_CONF

from ._sql import rows, source_view, sql


def _table(spark, name: str):
    path = paimon_ds.Catalog(spark.conf.get(WAREHOUSE_CONF)).table_path(f"{spark.catalog.currentDatabase()}.{name}")
    return paimon_ds.Table.load(path)


def _delete_partition_files(spark, name: str, partition_dir: str) -> None:
    """Remove the data files of one partition (its directory `pt=p2` under the table), metadata untouched."""
    root = os.path.join(_table(spark, name).path, partition_dir)
    for bucket in os.listdir(root):
        for f in os.listdir(os.path.join(root, bucket)):
            os.remove(os.path.join(root, bucket, f))


def test_partition_filter_with_non_partitioned_table(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, name STRING, pt STRING) TBLPROPERTIES ('primary-key'='id, pt', 'bucket'='2')")
    sql(spark, "INSERT INTO T VALUES (1, 'a', 'p1'), (2, 'b', 'p1'), (3, 'c', 'p2')")
    assert sorted(rows(spark, "SELECT * FROM T WHERE pt = 'p1'")) == [(1, "a", "p1"), (2, "b", "p1")]


def test_partition_filter_with_partitioned_table(spark, wh):
    """The rows of each query; then the partitions a query's filter rules out are not read (their files deleted)."""
    sql(spark, "CREATE TABLE T (id INT, name STRING, pt STRING) PARTITIONED BY (pt) "
               "TBLPROPERTIES ('primary-key'='id, pt', 'bucket'='2')")
    sql(spark, "INSERT INTO T VALUES (1, 'a', 'p1'), (2, 'b', 'p1'), (3, 'c', 'p2'), (4, 'd', 'p3')")
    assert rows(spark, "SELECT * FROM T WHERE id = '1'") == [(1, "a", "p1")]
    assert sorted(rows(spark, "SELECT * FROM T WHERE id = '1' or pt = 'p1'")) == [(1, "a", "p1"), (2, "b", "p1")]
    assert sorted(rows(spark, "SELECT * FROM T WHERE pt = 'p1'")) == [(1, "a", "p1"), (2, "b", "p1")]
    assert rows(spark, "SELECT * FROM T WHERE id = '1' and pt = 'p1'") == [(1, "a", "p1")]
    assert sorted(rows(spark, "SELECT * FROM T WHERE pt < 'p3'")) == [(1, "a", "p1"), (2, "b", "p1"), (3, "c", "p2")]
    _delete_partition_files(spark, "T", "pt=p3")
    assert sorted(rows(spark, "SELECT * FROM T WHERE pt < 'p3'")) == [(1, "a", "p1"), (2, "b", "p1"), (3, "c", "p2")]
    _delete_partition_files(spark, "T", "pt=p2")
    assert sorted(rows(spark, "SELECT * FROM T WHERE pt = 'p1'")) == [(1, "a", "p1"), (2, "b", "p1")]
    assert rows(spark, "SELECT * FROM T WHERE id = '1' and pt = 'p1'") == [(1, "a", "p1")]


def test_apply_concat(spark, wh):
    sql(spark, "CREATE TABLE t (id int, value int, year STRING, month STRING, day STRING, hour STRING) "
               "PARTITIONED BY (year, month, day, hour)")
    sql(spark, """INSERT INTO t values (1, 100, '2024', '07', '15', '21'), (2, 200, '2025', '07', '15', '21'),
        (3, 300, '2025', '07', '16', '22'), (4, 400, '2025', '07', '16', '23'), (5, 440, '2025', '07', '16', '23'),
        (6, 500, '2025', '07', '17', '00'), (7, 600, '2025', '07', '17', '02')""")
    assert rows(spark, "SELECT * FROM t WHERE CONCAT(year,'-',month,'-',day,'-',hour) "
                       "BETWEEN '2025-07-16-21' AND '2025-07-17-01' ORDER BY id") == [
        (3, 300, "2025", "07", "16", "22"), (4, 400, "2025", "07", "16", "23"), (5, 440, "2025", "07", "16", "23"),
        (6, 500, "2025", "07", "17", "00")]


def _dt_table(spark, values: str) -> None:
    sql(spark, "CREATE TABLE t (id int, value int, dt STRING) PARTITIONED BY (dt)")
    sql(spark, f"INSERT INTO t values {values}")


def test_apply_trim_ltrim_rtrim(spark, wh):
    _dt_table(spark, "(1, 100, 'chelloc'), (1, 100, 'caa'), (1, 100, 'bbc')")
    assert rows(spark, "SELECT * FROM t WHERE TRIM('c', dt) = 'hello'") == [(1, 100, "chelloc")]
    assert rows(spark, "SELECT * FROM t WHERE LTRIM('c', dt) = 'aa'") == [(1, 100, "caa")]
    assert rows(spark, "SELECT * FROM t WHERE RTRIM('c', dt) = 'bb'") == [(1, 100, "bbc")]
    assert rows(spark, "SELECT * FROM t WHERE TRIM(LEADING 'c' FROM dt) = 'aa'") == [(1, 100, "caa")]


def test_apply_upper(spark, wh):
    _dt_table(spark, "(1, 100, 'hello')")
    assert rows(spark, "SELECT * FROM t WHERE UPPER(dt) = 'HELLO'") == [(1, 100, "hello")]


def test_apply_lower(spark, wh):
    _dt_table(spark, "(1, 100, 'hello')")
    assert rows(spark, "SELECT * FROM t WHERE LOWER(dt) = 'hello'") == [(1, 100, "hello")]


def test_apply_substring(spark, wh):
    _dt_table(spark, "(1, 100, '_hello')")
    assert rows(spark, "SELECT * FROM t WHERE SUBSTRING(dt, 2) = 'hello'") == [(1, 100, "_hello")]
    assert rows(spark, "SELECT * FROM t WHERE SUBSTRING(dt, 2, 2) = 'he'") == [(1, 100, "_hello")]


def test_apply_cast(spark, wh):
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        _dt_table(spark, "(1, 100, '1')")
        assert rows(spark, "SELECT * FROM t WHERE dt = 1") == [(1, 100, "1")]
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)


def test_limit_for_append_only_tables_with_deletion_vector(spark, wh):
    sql(spark, "CREATE TABLE dv_test (c1 INT, c2 STRING) "
               "TBLPROPERTIES ('deletion-vectors.enabled' = 'true', 'source.split.target-size' = '1')")
    sql(spark, "insert into table dv_test values(1, 'a'),(2, 'b'),(3, 'c')")
    assert sql(spark, "select * from dv_test limit 2").count() == 2
    sql(spark, "delete from dv_test where c1 = 1")
    assert sql(spark, "select * from dv_test limit 2").count() == 2


def test_limit_for_append_only_tables(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING, c STRING) PARTITIONED BY (c)")
    sql(spark, "INSERT INTO T VALUES (1, 'a', '11'), (2, 'b', '11')")
    sql(spark, "INSERT INTO T VALUES (3, 'c', '22'), (4, 'd', '22')")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [(1, "a", "11"), (2, "b", "11"), (3, "c", "22"),
                                                         (4, "d", "22")]
    assert sql(spark, "SELECT * FROM T LIMIT 1").count() == 1


def test_limit_for_primary_key_table(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING, c STRING) TBLPROPERTIES ('primary-key'='a')")
    sql(spark, "INSERT INTO T VALUES (1, 'a', '11'), (2, 'b', '22')")
    sql(spark, "INSERT INTO T VALUES (3, 'c', '11'), (4, 'd', '22')")
    assert sql(spark, "SELECT * FROM T LIMIT 1").count() == 1
    assert sql(spark, "SELECT * FROM T LIMIT 2").count() == 2
    sql(spark, "INSERT INTO T VALUES (1, 'a2', '11'), (2, 'b2', '22')")
    assert sql(spark, "SELECT * FROM T LIMIT 2").count() == 2
    assert sql(spark, "SELECT * FROM T LIMIT 3").count() == 3
    sql(spark, "INSERT INTO T VALUES (3, 'c', '11'), (4, 'd', '22')")
    assert sql(spark, "SELECT * FROM T LIMIT 1").count() == 1


def test_limit_for_table_with_deletion_vector(spark, wh):
    for dv in ("true", "false"):
        for pk in (True, False):
            sql(spark, "DROP TABLE IF EXISTS T")
            sql(spark, f"CREATE TABLE T (id INT) TBLPROPERTIES ('deletion-vectors.enabled' = '{dv}', "
                       f"'{'primary-key' if pk else 'bucket-key'}' = 'id', 'bucket' = '10')")
            sql(spark, "INSERT INTO T SELECT id FROM range (1, 50000)")
            sql(spark, "DELETE FROM T WHERE id % 13 = 0")
            assert sql(spark, "SELECT * FROM T LIMIT 100").count() == 100, (dv, pk)


def test_runtime_filter(spark, wh):
    source_view(spark, [(1, "x1", "2023"), (2, "x2", "2023"), (5, "x5", "2025"), (6, "x6", "2026")],
                "a BIGINT, b STRING, pt STRING")
    sql(spark, "CREATE TABLE t (id INT, name STRING, pt STRING) PARTITIONED BY (pt)")
    sql(spark, "INSERT INTO t VALUES (1, 'a', '2023'), (3, 'c', '2023'), (5, 'e', '2025'), (7, 'g', '2027')")
    assert rows(spark, """SELECT t.id, t.name, source.b FROM source join t ON source.pt = t.pt AND
        source.pt = '2023' ORDER BY t.id, source.b""") == [(1, "a", "x1"), (1, "a", "x2"), (3, "c", "x1"),
                                                            (3, "c", "x2")]
    assert rows(spark, """SELECT t.*, source.b FROM source join t ON source.a = t.id AND source.pt = t.pt AND
        source.a > 3""") == [(5, "e", "2025", "x5")]


def test_combine_runtime_partition_filter_and_partition_filter(spark, wh):
    sql(spark, "CREATE TABLE fact_table (id INT, amount DOUBLE, category STRING, date_pt STRING) "
               "PARTITIONED BY (date_pt)")
    sql(spark, "CREATE TABLE dim_table (category STRING, category_name STRING, region STRING, pt STRING) "
               "PARTITIONED BY (pt)")
    sql(spark, "CREATE TABLE filter_table (region STRING, date_pt STRING)")
    sql(spark, """INSERT INTO fact_table VALUES (1, 100.0, 'A', '2023-01-01'), (2, 200.0, 'B', '2023-01-02'),
        (3, 150.0, 'A', '2023-01-15'), (4, 250.0, 'C', '2023-02-01'), (5, 300.0, 'A', '2023-02-15'),
        (6, 180.0, 'B', '2024-01-01'), (7, 220.0, 'A', '2024-01-15'), (8, 400.0, 'C', '2024-02-01'),
        (9, 350.0, 'B', '2024-02-15'), (10, 500.0, 'A', '2025-03-01'), (11, 450.0, 'C', '2025-03-15'),
        (12, 600.0, 'B', '2025-04-01')""")
    sql(spark, """INSERT INTO dim_table VALUES ('A', 'Category A', 'East', '2023-01'),
        ('B', 'Category B', 'West', '2023-01'), ('C', 'Category C', 'North', '2023-02'),
        ('A', 'Category A', 'East', '2024-01'), ('B', 'Category B', 'West', '2024-02'),
        ('C', 'Category C', 'North', '2024-02')""")
    sql(spark, "INSERT INTO filter_table VALUES ('East', '2023-01-01'), ('East', '2023-01-15'), "
               "('East', '2024-01-15')")
    assert rows(spark, """SELECT f.id, f.amount, f.category, d.category_name, d.region, f.date_pt
        FROM fact_table f JOIN dim_table d ON f.category = d.category AND SUBSTRING(f.date_pt, 1, 7) = d.pt
        JOIN filter_table ft ON d.region = ft.region AND f.date_pt = ft.date_pt
        WHERE d.region = 'East' AND f.date_pt < '2024-01-15' ORDER BY f.id""") == [
        (1, 100.0, "A", "Category A", "East", "2023-01-01"), (3, 150.0, "A", "Category A", "East", "2023-01-15")]


def test_topn_for_append_only_tables(spark, wh):
    sql(spark, "CREATE TABLE T (pt INT, id INT, price BIGINT) PARTITIONED BY (pt) "
               "TBLPROPERTIES ('file-index.range-bitmap.columns'='id')")
    sql(spark, "INSERT INTO T VALUES (1, 10, 100L), (2, 20, 200L), (3, 30, 300L)")
    sql(spark, "INSERT INTO T VALUES (4, 40, 400L), (5, 50, 500L)")
    sql(spark, "INSERT INTO T VALUES (6, NULL, 600L), (6, NULL, 600L), (6, 60, 600L), (7, NULL, 700L), "
               "(7, NULL, 700L), (7, 70, 700L)")
    sql(spark, "ALTER TABLE T SET TBLPROPERTIES ('metadata.stats-mode' = 'none')")
    sql(spark, "INSERT INTO T VALUES (8, 80, 800L), (9, 90, 900L)")
    sql(spark, "ALTER TABLE T UNSET TBLPROPERTIES ('metadata.stats-mode')")
    q = "SELECT id FROM T {} LIMIT {}"
    assert rows(spark, q.format("ORDER BY id ASC NULLS LAST", 5)) == [(10,), (20,), (30,), (40,), (50,)]
    assert rows(spark, q.format("ORDER BY id ASC NULLS FIRST", 5)) == [(None,), (None,), (None,), (None,), (10,)]
    assert rows(spark, q.format("ORDER BY id DESC NULLS LAST", 5)) == [(90,), (80,), (70,), (60,), (50,)]
    assert rows(spark, q.format("ORDER BY id DESC NULLS FIRST", 5)) == [(None,), (None,), (None,), (None,), (90,)]
    assert rows(spark, q.format("WHERE pt=6 ORDER BY id DESC", 5)) == [(60,), (None,), (None,)]
    assert rows(spark, q.format("WHERE pt=6 ORDER BY id ASC", 3)) == [(None,), (None,), (60,)]


def test_multi_topn_for_append_only_tables(spark, wh):
    sql(spark, "CREATE TABLE T (pt INT, id INT, price BIGINT) PARTITIONED BY (pt) "
               "TBLPROPERTIES ('file-index.range-bitmap.columns'='id')")
    sql(spark, "INSERT INTO T VALUES (1, 10, 100L), (1, 20, 100L), (1, 20, 200L), (1, 20, 200L), (1, 20, 200L), "
               "(1, 20, 200L), (1, 20, 300L), (1, 30, 100L)")
    q = "SELECT id, price FROM T ORDER BY {} LIMIT 2"
    assert rows(spark, q.format("id ASC, price ASC")) == [(10, 100), (20, 100)]
    assert rows(spark, q.format("id ASC, price DESC")) == [(10, 100), (20, 300)]
    assert rows(spark, q.format("id DESC, price ASC")) == [(30, 100), (20, 100)]
    assert rows(spark, q.format("id DESC, price DESC")) == [(30, 100), (20, 300)]


def _dv_topn(spark, before: list[list[tuple]], delete: str, after: list[list[tuple]]) -> None:
    orders = ("ASC NULLS FIRST", "ASC NULLS LAST", "DESC NULLS FIRST", "DESC NULLS LAST")
    for order, expected in zip(orders, before):
        assert rows(spark, f"SELECT * FROM dv_test ORDER BY c1 {order} LIMIT 3") == expected, order
    sql(spark, delete)
    for order, expected in zip(orders, after):
        assert rows(spark, f"SELECT * FROM dv_test ORDER BY c1 {order} LIMIT 3") == expected, order


def test_topn_for_primary_key_tables_with_deletion_vector(spark, wh):
    sql(spark, "CREATE TABLE dv_test (id INT, c1 INT, c2 STRING) TBLPROPERTIES ('primary-key'='id', "
               "'deletion-vectors.enabled' = 'true', 'file-index.range-bitmap.columns'='c1')")
    sql(spark, "insert into table dv_test values(1, 1, 'a'),(2, 2,'b'),(3, 3, 'c'),(4, 4, 'd'),(5, 5, 'e'),"
               "(6, NULL, 'f')")
    _dv_topn(spark,
             [[(6, None, "f"), (1, 1, "a"), (2, 2, "b")], [(1, 1, "a"), (2, 2, "b"), (3, 3, "c")],
              [(6, None, "f"), (5, 5, "e"), (4, 4, "d")], [(5, 5, "e"), (4, 4, "d"), (3, 3, "c")]],
             "delete from dv_test where id IN (1, 5)",
             [[(6, None, "f"), (2, 2, "b"), (3, 3, "c")], [(2, 2, "b"), (3, 3, "c"), (4, 4, "d")],
              [(6, None, "f"), (4, 4, "d"), (3, 3, "c")], [(4, 4, "d"), (3, 3, "c"), (2, 2, "b")]])


def test_topn_for_append_only_tables_with_deletion_vector(spark, wh):
    sql(spark, "CREATE TABLE dv_test (c1 INT, c2 STRING) TBLPROPERTIES ('deletion-vectors.enabled' = 'true', "
               "'file-index.range-bitmap.columns'='c1')")
    sql(spark, "insert into table dv_test values(1, 'a'),(2, 'b'),(3, 'c'),(4, 'd'),(5, 'e'),(NULL, 'f')")
    _dv_topn(spark,
             [[(None, "f"), (1, "a"), (2, "b")], [(1, "a"), (2, "b"), (3, "c")],
              [(None, "f"), (5, "e"), (4, "d")], [(5, "e"), (4, "d"), (3, "c")]],
             "delete from dv_test where c1 IN (1, 5)",
             [[(None, "f"), (2, "b"), (3, "c")], [(2, "b"), (3, "c"), (4, "d")],
              [(None, "f"), (4, "d"), (3, "c")], [(4, "d"), (3, "c"), (2, "b")]])


def test_parquet_in_filter(spark, wh):
    """Adapted: 'parquet.filter.stats.enabled' = 'false' (a Parquet reader conf Paimon passes on, which turns off
    Parquet's own row-group stats filter) is left out: paimon_ds refuses it as an unknown option. The rows are
    the same either way."""
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('file.format' = 'parquet', "
               "'parquet.block.size' = '100', 'target-file-size' = '10g')")
    data = [(i, u) for i in range(1001) for u in [str(uuid.uuid4())] for _ in range(10)]
    source_view(spark, data, "a INT, b STRING")
    sql(spark, "insert into T select * from source cluster by a")
    wanted = ",".join(str(i) for i in range(100, 151))
    assert sorted(rows(spark, f"select * from T where a in ({wanted})")) == \
        sorted(tuple(r) for r in spark.sql(f"select * from source where a in ({wanted})").collect())


def test_parquet_decimal_filter(spark, wh):
    sql(spark, "CREATE TABLE T (a DECIMAL(18,4), b STRING) TBLPROPERTIES ('file.format' = 'parquet', "
               "'parquet.block.size' = '100', 'target-file-size' = '10g')")
    sql(spark, """INSERT INTO T VALUES (CAST(100.1234 AS DECIMAL(18,4)), 'a'), (CAST(200.5678 AS DECIMAL(18,4)), 'b'),
        (CAST(300.9999 AS DECIMAL(18,4)), 'c'), (CAST(150.0000 AS DECIMAL(18,4)), 'd')""")
    d = decimal.Decimal
    assert rows(spark, "SELECT * FROM T WHERE a = CAST(100.1234 AS DECIMAL(18,4))") == [(d("100.1234"), "a")]
    assert rows(spark, "SELECT * FROM T WHERE a < CAST(200.0000 AS DECIMAL(18,4)) ORDER BY a") == [
        (d("100.1234"), "a"), (d("150.0000"), "d")]
    assert rows(spark, "SELECT * FROM T WHERE a IN (CAST(100.1234 AS DECIMAL(18,4)), "
                       "CAST(300.9999 AS DECIMAL(18,4))) ORDER BY a") == [(d("100.1234"), "a"), (d("300.9999"), "c")]


def test_parquet_timestamp_filter(spark, wh):
    sql(spark, "CREATE TABLE T (a TIMESTAMP, b STRING) TBLPROPERTIES ('file.format' = 'parquet', "
               "'parquet.block.size' = '100', 'target-file-size' = '10g')")
    sql(spark, """INSERT INTO T VALUES (TIMESTAMP '2024-01-01 00:00:00', 'a'), (TIMESTAMP '2024-01-02 12:30:00', 'b'),
        (TIMESTAMP '2024-01-03 23:59:59', 'c'), (TIMESTAMP '2024-01-01 12:00:00', 'd')""")
    t = dt.datetime
    assert rows(spark, "SELECT * FROM T WHERE a = TIMESTAMP '2024-01-01 00:00:00'") == [(t(2024, 1, 1), "a")]
    expected = [(t(2024, 1, 1), "a"), (t(2024, 1, 1, 12), "d")]
    assert rows(spark, "SELECT * FROM T WHERE a < TIMESTAMP '2024-01-02 00:00:00' ORDER BY a") == expected
    assert rows(spark, "SELECT * FROM T WHERE a BETWEEN TIMESTAMP '2024-01-01 00:00:00' AND "
                       "TIMESTAMP '2024-01-02 00:00:00' ORDER BY a") == expected
