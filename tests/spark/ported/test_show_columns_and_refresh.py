"""Apache Paimon 1.4.1's `PaimonShowColumnsTestBase` and `RefreshTableTest` (paimon-spark-ut/.../spark/sql/), ported.
`SHOW COLUMNS` and `REFRESH TABLE` run through plain spark.sql on the attached table (Spark routes both).
`RefreshTableTest` checks that Paimon's CachingCatalog drops its cached table; paimon_ds caches no table (each read
and write loads the latest snapshot), so the port checks what the cache would hide: after REFRESH TABLE (and
without it) a query sees a commit made by another writer."""

from __future__ import annotations

import pyarrow as pa

from ._procs import load
from ._sql import rows, sql


def test_show_columns_from_paimon(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, name STRING, i INT, l LONG) USING PAIMON TBLPROPERTIES ('primary-key'='id')")
    spark.sql("INSERT INTO T SELECT '1', 'aa', 12, 22")
    assert [tuple(r) for r in spark.sql("SHOW COLUMNS FROM T").collect()] == [("id",), ("name",), ("i",), ("l",)]


def test_refresh_table_clear_cache(spark, wh):
    sql(spark, "CREATE TABLE t (f0 INT, f1 INT)")
    spark.sql("INSERT INTO t VALUES (1, 2)")
    assert rows(spark, "SELECT * FROM t") == [(1, 2)]
    table = load(spark, wh, "t")
    table.append(pa.table({"f0": pa.array([3], pa.int32()), "f1": pa.array([4], pa.int32())}))  # another writer
    spark.sql("REFRESH TABLE t")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM t").collect()) == [(1, 2), (3, 4)]
