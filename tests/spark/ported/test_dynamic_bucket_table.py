"""Apache Paimon 1.4.1's `DynamicBucketTableTest` (paimon-spark-ut/.../spark/sql/), ported: its statements and
expected rows are the specification, run through paimon_ds.sql."""

from __future__ import annotations

from ._sql import rows, sql

FIVE = "('1', 'a', 'p'), ('2', 'b', 'p'), ('3', 'c', 'p'), ('4', 'd', 'p'), ('5', 'e', 'p')"
FIVE_ROWS = [("1", "a", "p"), ("2", "b", "p"), ("3", "c", "p"), ("4", "d", "p"), ("5", "e", "p")]


def _buckets(spark) -> list[tuple]:
    return sorted(rows(spark, "SELECT DISTINCT bucket FROM `T$files`"))


def _create_pk_pt(spark, props: str) -> None:
    sql(spark, "CREATE TABLE T (pk STRING, v STRING, pt STRING) PARTITIONED BY (pt) "
               f"TBLPROPERTIES ('primary-key' = 'pk, pt', 'bucket' = '-1', {props})")


def test_write_with_assign_parallelism(spark, wh):
    _create_pk_pt(spark, "'dynamic-bucket.target-row-num' = '3', 'dynamic-bucket.assigner-parallelism' = '3'")
    sql(spark, f"INSERT INTO T VALUES {FIVE}")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == FIVE_ROWS
    assert _buckets(spark) == [(0,), (1,), (2,)]


def test_write_with_initial_buckets(spark, wh):
    """`assigner-parallelism` is 10, but `initial-buckets` 3 bounds the buckets made to 3."""
    _create_pk_pt(spark, "'dynamic-bucket.target-row-num' = '3', 'dynamic-bucket.initial-buckets' = '3', "
                         "'dynamic-bucket.assigner-parallelism' = '10'")
    sql(spark, f"INSERT INTO T VALUES {FIVE}")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == FIVE_ROWS
    assert _buckets(spark) == [(0,), (1,), (2,)]


def test_write_with_max_buckets(spark, wh):
    _create_pk_pt(spark, "'dynamic-bucket.max-buckets' = '2'")
    sql(spark, "INSERT INTO T VALUES ('1', 'a', 'p'), ('2', 'b', 'p'), ('3', 'c', 'p'), ('4', 'd', 'p'), "
               "('5', 'e', 'p'), ('6', 'e', 'p')")
    sql(spark, "INSERT INTO T VALUES ('11', 'a', 'p'), ('22', 'b', 'p'), ('33', 'c', 'p'), ('44', 'd', 'p'), "
               "('55', 'e', 'p'), ('66', 'e', 'p')")
    assert _buckets(spark) == [(0,), (1,)]


def _create_cross(spark, props: str) -> None:
    sql(spark, "CREATE TABLE T (pt INT, pk INT, v INT) PARTITIONED BY (pt) "
               f"TBLPROPERTIES ('primary-key' = 'pk', 'bucket' = '-1', {props})")


def test_cross_partition_write_with_partition_change(spark, wh):
    _create_cross(spark, "'dynamic-bucket.target-row-num' = '3', 'dynamic-bucket.assigner-parallelism' = '1'")
    sql(spark, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    sql(spark, "INSERT INTO T VALUES (1, 3, 33), (1, 1, 11)")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(1, 1, 11), (1, 2, 2), (1, 3, 33), (1, 4, 4), (1, 5, 5)]
    assert _buckets(spark) == [(0,), (1,)]
    sql(spark, "INSERT INTO T VALUES (2, 1, 2), (2, 2, 3)")  # the keys move to partition 2
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(2, 1, 2), (2, 2, 3), (1, 3, 33), (1, 4, 4), (1, 5, 5)]


def test_cross_partition_write_with_delete(spark, wh):
    _create_cross(spark, "'dynamic-bucket.target-row-num' = '3'")
    sql(spark, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    sql(spark, "DELETE FROM T WHERE pk = 1")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    sql(spark, "INSERT INTO T VALUES (2, 1, 2), (2, 2, 3)")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(2, 1, 2), (2, 2, 3), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    sql(spark, "DELETE FROM T WHERE pk = 2")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(2, 1, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]


def test_cross_partition_user_defined_assigner_parallelism(spark, wh):
    _create_cross(spark, "'dynamic-bucket.target-row-num' = '3', 'dynamic-bucket.assigner-parallelism' = '3'")
    sql(spark, "INSERT INTO T VALUES (1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)")
    assert rows(spark, "SELECT * FROM T ORDER BY pk") == [(1, 1, 1), (1, 2, 2), (1, 3, 3), (1, 4, 4), (1, 5, 5)]
    assert _buckets(spark) == [(0,), (1,), (2,)]


def test_cross_partition_write_multiple_cols(spark, wh):
    columns = ", ".join(f"c{i} STRING" for i in range(118))
    sql(spark, f"CREATE TABLE t ({columns}, pt STRING) PARTITIONED BY (pt) TBLPROPERTIES ('primary-key' = 'c0')")
    sql(spark, "INSERT INTO t (c0, c1, c2, pt) VALUES ('c0', 'c1', 'c2', 'pt')")
    assert rows(spark, "SELECT c0, c1, c2, pt FROM t") == [("c0", "c1", "c2", "pt")]
