"""Apache Paimon 1.4.1's `PaimonPartitionManagementTest` (paimon-spark-ut/.../spark/sql/), ported: its statements
and expected rows are the specification. `SHOW PARTITIONS` and `ALTER TABLE ... DROP PARTITION`, which Spark refuses
on a Python source's table, run through paimon_ds.sql; Paimon's AnalysisException is paimon_ds's SqlError there.
The `withPk` x `bucketModes` combinations are parametrized as Paimon runs them. The session time zone is
America/Los_Angeles in the timestamp case, as in Spark's own tests (a TIMESTAMP prints in it)."""

from __future__ import annotations

import pytest

from paimon_ds.spark.sql import SqlError

from ._sql import rows, sql
from .test_ddl import CHAR_REASON
from .test_insert_overwrite import PK_BUCKET, session_conf


def _props(has_pk: bool, bucket: int, pk: str) -> str:
    if has_pk:
        return f"'primary-key'='{pk}', 'bucket' = '{bucket}'"
    if bucket != -1:
        return f"'bucket-key'='a,b', 'bucket' = '{bucket}'"
    return "'write-only'='true'"


def _show(spark, statement: str) -> list[str]:
    return sorted(r[0] for r in rows(spark, statement))


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_partition_for_non_partitioned_table(spark, wh, has_pk, bucket):
    sql(spark, "CREATE TABLE T (a VARCHAR(10), b CHAR(10),c BIGINT,dt VARCHAR(8),hh VARCHAR(4)) "
               f"TBLPROPERTIES ({_props(has_pk, bucket, 'a,b')})")
    for dt, hh in [(16, 1132), (16, 1133), (16, 1134), (17, 1132), (17, 1133), (17, 1134)]:
        spark.sql(f"INSERT INTO T VALUES('a','b',{dt - 15},'202308{dt}','{hh}')")
    for statement in ["alter table T drop partition (dt='20230816', hh='1134')",
                      "alter table T drop partition (dt='20230816')",
                      "alter table T drop partition (hh='1134')",
                      "alter table T drop partition (dt='20230816'), partition (dt='20230817')",
                      "show partitions T partition (dt='20230816', hh='1134')",
                      "show partitions T partition (dt='20230816')",
                      "show partitions T partition (hh='1134')"]:
        with pytest.raises(SqlError):
            sql(spark, statement)


@pytest.mark.skip(reason=CHAR_REASON + " (the case's last SELECT expects `b` of its CHAR(10) column as 'b         ')")
@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_partition_for_partitioned_table(spark, wh, has_pk, bucket):
    sql(spark, "CREATE TABLE T (a VARCHAR(10), b CHAR(10),c BIGINT,dt LONG,hh VARCHAR(4)) PARTITIONED BY (dt, hh) "
               f"TBLPROPERTIES ({_props(has_pk, bucket, 'a,b,dt,hh')})")
    for c, dt, hh in [(1, 20230816, "1132"), (1, 20230816, "1133"), (1, 20230816, "1134"), (2, 20230817, "1132"),
                      (2, 20230817, "1133"), (2, 20230817, "1134"), (2, 20240101, "00"), (2, 20240102, "00")]:
        spark.sql(f"INSERT INTO T VALUES('a','b',{c},{dt},'{hh}')")
    assert _show(spark, "show partitions T ") == [
        "dt=20230816/hh=1132", "dt=20230816/hh=1133", "dt=20230816/hh=1134", "dt=20230817/hh=1132",
        "dt=20230817/hh=1133", "dt=20230817/hh=1134", "dt=20240101/hh=00", "dt=20240102/hh=00"]
    assert _show(spark, "show partitions T PARTITION (dt=20230817, hh='1132')") == ["dt=20230817/hh=1132"]
    assert _show(spark, "show partitions T PARTITION (hh='1132')") == ["dt=20230816/hh=1132", "dt=20230817/hh=1132"]
    assert _show(spark, "show partitions T PARTITION (dt=20230816)") == [
        "dt=20230816/hh=1132", "dt=20230816/hh=1133", "dt=20230816/hh=1134"]
    assert _show(spark, "show partitions T PARTITION (hh='1135')") == []
    assert _show(spark, "show partitions T PARTITION (dt=20230818)") == []

    sql(spark, "alter table T drop partition (dt=20230816, hh='1134')")
    sql(spark, "alter table T drop partition (dt=20230817, hh='1133')")
    with pytest.raises(SqlError):
        sql(spark, "alter table T drop partition (dt=20240101, hh='00'), partition(dt=999999, hh='00')")
    assert _show(spark, "show partitions T PARTITION (dt=20240101)") == ["dt=20240101/hh=00"]
    sql(spark, "alter table T drop partition (dt=20240101, hh='00'), partition (dt=20240102, hh='00')")
    with pytest.raises(SqlError):
        sql(spark, "alter table T drop partition (hh='1134')")

    assert _show(spark, "show partitions T ") == [
        "dt=20230816/hh=1132", "dt=20230816/hh=1133", "dt=20230817/hh=1132", "dt=20230817/hh=1134"]
    assert _show(spark, "show partitions T PARTITION (dt=20230817, hh='1132')") == ["dt=20230817/hh=1132"]
    assert _show(spark, "show partitions T PARTITION (hh='1132')") == ["dt=20230816/hh=1132", "dt=20230817/hh=1132"]
    assert _show(spark, "show partitions T PARTITION (hh='1134')") == ["dt=20230817/hh=1134"]
    assert _show(spark, "show partitions T PARTITION (dt=20230817)") == ["dt=20230817/hh=1132", "dt=20230817/hh=1134"]
    assert sorted(rows(spark, "select * from T")) == [
        ("a", "b         ", 1, 20230816, "1132"), ("a", "b         ", 1, 20230816, "1133"),
        ("a", "b         ", 2, 20230817, "1132"), ("a", "b         ", 2, 20230817, "1134")]


def test_drop_null_partition_with_specified_default_partition_name(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, dt STRING) PARTITIONED BY (dt) "
               "TBLPROPERTIES ('partition.default-name'='__TEST_DEFAULT_PARTITION__')")
    spark.sql("INSERT INTO T VALUES (1, '20240601'), (2, null)")
    assert _show(spark, "SHOW PARTITIONS T") == ["dt=20240601", "dt=null"]
    sql(spark, "ALTER TABLE T DROP PARTITION (dt=null)")
    assert _show(spark, "SHOW PARTITIONS T") == ["dt=20240601"]


def test_timestamp_partition_column(spark, wh):
    with session_conf(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles"}):
        sql(spark, "CREATE TABLE T (a INT, dt TIMESTAMP) PARTITIONED BY (dt)")
        spark.sql("INSERT INTO T VALUES (1, CAST('2024-06-01 10:30:01' AS TIMESTAMP))")
        spark.sql("INSERT INTO T VALUES (2, CAST('2024-06-02 15:45:30' AS TIMESTAMP))")
        assert _show(spark, "SHOW PARTITIONS T") == ["dt=2024-06-01 10%3A30%3A01", "dt=2024-06-02 15%3A45%3A30"]
        expected = rows(spark, "SELECT 1 AS a, CAST('2024-06-01 10:30:01' AS TIMESTAMP) AS dt UNION ALL "
                               "SELECT 2, CAST('2024-06-02 15:45:30' AS TIMESTAMP) ORDER BY dt")
        assert rows(spark, "SELECT * FROM T ORDER BY dt") == expected


_BATCH_ROWS = ("(1, 20240101, '00', '00'), (2, 20240101, '00', '01'), (3, 20240101, '01', '00'), "
               "(4, 20240102, '00', '00'), (5, 20240102, '00', '01')")


def test_batch_drop_partitions(spark, wh):
    sql(spark, "CREATE TABLE T_Batch (a INT, dt INT, hh STRING, mm STRING) using paimon "
               "TBLPROPERTIES ('file.format' = 'avro') PARTITIONED BY (dt, hh, mm)")
    spark.sql(f"INSERT INTO T_Batch VALUES {_BATCH_ROWS}")
    assert _show(spark, "SHOW PARTITIONS T_Batch") == [
        "dt=20240101/hh=00/mm=00", "dt=20240101/hh=00/mm=01", "dt=20240101/hh=01/mm=00",
        "dt=20240102/hh=00/mm=00", "dt=20240102/hh=00/mm=01"]
    sql(spark, "ALTER TABLE T_Batch DROP PARTITION (dt=20240101)")  # every partition under dt=20240101
    assert _show(spark, "SHOW PARTITIONS T_Batch") == ["dt=20240102/hh=00/mm=00", "dt=20240102/hh=00/mm=01"]
    sql(spark, "ALTER TABLE T_Batch DROP PARTITION (dt=20240102, hh='00')")
    assert _show(spark, "SHOW PARTITIONS T_Batch") == []


def test_batch_drop_partitions_with_mixed_full_and_partial_specs(spark, wh):
    sql(spark, "CREATE TABLE T_Mixed_Batch (a INT, dt INT, hh STRING, mm STRING) using paimon "
               "TBLPROPERTIES ('file.format' = 'avro') PARTITIONED BY (dt, hh, mm)")
    spark.sql(f"INSERT INTO T_Mixed_Batch VALUES {_BATCH_ROWS}")
    sql(spark, "ALTER TABLE T_Mixed_Batch DROP PARTITION (dt=20240101, hh='00', mm='00'), PARTITION (dt=20240102)")
    assert rows(spark, "SELECT COUNT(*) FROM `T_Mixed_Batch$snapshots` WHERE commit_kind = 'OVERWRITE'") == [(1,)]
    assert _show(spark, "SHOW PARTITIONS T_Mixed_Batch") == ["dt=20240101/hh=00/mm=01", "dt=20240101/hh=01/mm=00"]
