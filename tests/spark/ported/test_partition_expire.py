"""Apache Paimon 1.4.1's `PartitionExpireTest` (paimon-spark-ut/.../spark/sql/), ported: its statements and
expected rows are the specification, run through paimon_ds.sql. `end-input.check-partition-expire` makes each
INSERT's commit expire partitions older than `partition.expiration-time`."""

from __future__ import annotations

import time

from ._sql import rows, sql


def test_base(spark, wh):
    sql(spark, "CREATE TABLE t (id INT, v INT, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES ("
               "'partition.expiration-time' = '7d', 'end-input.check-partition-expire' = 'true')")
    sql(spark, "INSERT INTO t VALUES (1, 1, '2025-06-01')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == []
    sql(spark, "INSERT INTO t VALUES (2, 2, '9999-12-31')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [(2, 2, "9999-12-31")]
    sql(spark, "INSERT INTO t VALUES (3, 3, '2025-06-02')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [(2, 2, "9999-12-31")]


def test_update_time_expiration_strategy(spark, wh):
    """The rule needs a partition untouched for longer than 3s: the test's one sleep."""
    sql(spark, "CREATE TABLE t (id INT, v INT, dt STRING) PARTITIONED BY (dt) TBLPROPERTIES ("
               "'partition.expiration-time' = '3s', 'end-input.check-partition-expire' = 'true', "
               "'partition.expiration-strategy' = 'update-time')")
    sql(spark, "INSERT INTO t VALUES (1, 1, '2025-06-01')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [(1, 1, "2025-06-01")]
    time.sleep(3.001)
    sql(spark, "INSERT INTO t VALUES (2, 2, '2025-06-02')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [(2, 2, "2025-06-02")]


def test_timestamp_formatter_and_pattern(spark, wh):
    sql(spark, "CREATE TABLE t (id INT, v INT, p STRING, dt STRING) PARTITIONED BY (p, dt) TBLPROPERTIES ("
               "'partition.expiration-time' = '7d', 'end-input.check-partition-expire' = 'true', "
               "'partition.timestamp-formatter' = 'yyyyMMdd', 'partition.timestamp-pattern' = '$dt')")
    sql(spark, "INSERT INTO t VALUES (1, 1, 'un-known', '20250601')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == []
    sql(spark, "INSERT INTO t VALUES (2, 2, 'un-known', '99991231')")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [(2, 2, "un-known", "99991231")]
