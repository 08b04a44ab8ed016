"""Apache Paimon 1.4.1's `InsertOverwriteTableTestBase` (paimon-spark-ut/.../spark/sql/), ported: its statements
and expected rows are the specification, run through paimon_ds.sql (which reads the session's
`spark.sql.sources.partitionOverwriteMode` for an INSERT OVERWRITE, as Paimon does). The suite's
`fileFormats` x `withPk` x `bucketModes` combinations are parametrized as Paimon runs them."""

from __future__ import annotations

import datetime
import re
from contextlib import contextmanager
from decimal import Decimal

import pytest

from ._sql import rows, sql

FORMATS = ["orc", "parquet"]
PK_BUCKET = [(True, 3), (True, -1), (False, 3), (False, -1)]


@contextmanager
def session_conf(spark, **pairs: str):
    """Paimon's withSparkSQLConf: the pairs set for the block, the previous values back after."""
    previous = {k: spark.conf.get(k, None) for k in pairs}
    for k, v in pairs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _props(has_pk: bool, bucket: int, pk: str, bucket_key: str) -> str:
    if has_pk:
        return f"'primary-key'='{pk}', 'bucket' = '{bucket}'"
    if bucket != -1:
        return f"'bucket-key'='{bucket_key}', 'bucket' = '{bucket}'"
    return "'write-only'='true'"


@pytest.mark.parametrize("partitioned", [True, False])
@pytest.mark.parametrize("fmt", FORMATS)
def test_insert_into_overwrite_by_name(spark, wh, fmt, partitioned):
    parts = "PARTITIONED BY (col4)" if partitioned else ""
    sql(spark, f"CREATE TABLE t1 (col1 STRING, col2 INT, col3 DOUBLE, col4 STRING) {parts} "
               f"TBLPROPERTIES ('file.format' = '{fmt}')")
    sql(spark, f"CREATE TABLE t2 (col2 INT, col3 DOUBLE, col1 STRING NOT NULL, col4 STRING) {parts} "
               f"TBLPROPERTIES ('file.format' = '{fmt}')")
    sql(spark, "INSERT INTO TABLE t1 VALUES ('Hello', 1, 1.1, 'pt1'), ('Paimon', 3, 3.3, 'pt2')")
    sql(spark, "INSERT INTO t2 (col1, col2, col3, col4) SELECT * FROM t1")
    assert rows(spark, "SELECT * FROM t2 ORDER BY col2") == [(1, 1.1, "Hello", "pt1"), (3, 3.3, "Paimon", "pt2")]

    sql(spark, "INSERT INTO TABLE t1 VALUES ('World', 2, 2.2, 'pt1')")
    sql(spark, "INSERT OVERWRITE t2 (col1, col2, col3, col4) SELECT * FROM t1")
    assert rows(spark, "SELECT * FROM t2 ORDER BY col2") == [
        (1, 1.1, "Hello", "pt1"), (2, 2.2, "World", "pt1"), (3, 3.3, "Paimon", "pt2")]

    sql(spark, "INSERT OVERWRITE TABLE t1 BY NAME SELECT col3, col2, col4, col1 FROM t1")
    sql(spark, "INSERT OVERWRITE TABLE t2 BY NAME SELECT col1, col2 FROM t2 ")  # null for the columns not named
    assert rows(spark, "SELECT * FROM t2 ORDER BY col2") == [
        (1, None, "Hello", None), (2, None, "World", None), (3, None, "Paimon", None)]

    # Paimon's own analyzer words these errors; here Spark's analyzer refuses the same statements for the same
    # reasons where the INSERT reaches Spark (its error classes), paimon_ds.sql where it writes the table itself
    # (its words): one pattern for each of Paimon's messages
    bad = [
        ("INSERT INTO TABLE t1 BY NAME SELECT col1, col2 as col1 FROM t1",  # "due to column name conflicts"
         r"AMBIGUOUS_COLUMN_NAME|ambiguous column name `col1`"),
        ("INSERT INTO TABLE t1 BY NAME SELECT col1, col2 as colx FROM t1",  # "due to unknown column names"
         r"(?i)cannot write extra columns `colx`"),
        ("INSERT INTO TABLE t1 BY NAME SELECT col1, col2, col3, col4, col4 as col5 FROM t1",
         r"TOO_MANY_DATA_COLUMNS|too many data columns"),  # "the number of data columns don't match ..."
        ("INSERT INTO TABLE t2 BY NAME SELECT col2 FROM t2",  # "non-nullable column `col1` has no specified value"
         r"Cannot find data for the output column `col1`|cannot find data for the NOT NULL column\(s\) `col1`"),
        ("INSERT INTO TABLE t1 VALUES(1)", r"NOT_ENOUGH_DATA_COLUMNS|expects 4 column\(s\)"),
    ]
    for statement, message in bad:
        with pytest.raises(Exception) as err:
            sql(spark, statement)
        assert re.search(message, str(err.value)), statement


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_insert_overwrite_non_partitioned_table(spark, wh, has_pk, bucket):
    sql(spark, f"CREATE TABLE T (a INT, b INT, c STRING) TBLPROPERTIES ({_props(has_pk, bucket, 'a,b', 'a,b')})")
    sql(spark, "INSERT INTO T values (1, 1, '1'), (2, 2, '2')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 1, "1"), (2, 2, "2")]
    sql(spark, "INSERT OVERWRITE T VALUES (1, 3, '3'), (2, 4, '4')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 3, "3"), (2, 4, "4")]


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_insert_overwrite_single_partitioned_table(spark, wh, has_pk, bucket):
    sql(spark, f"CREATE TABLE T (a INT, b INT, c STRING) TBLPROPERTIES ({_props(has_pk, bucket, 'a,b', 'b')}) "
               "PARTITIONED BY (a)")
    sql(spark, "INSERT INTO T values (1, 1, '1'), (2, 2, '2')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 1, "1"), (2, 2, "2")]
    sql(spark, "INSERT OVERWRITE T VALUES (1, 3, '3'), (2, 4, '4')")  # the whole table
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 3, "3"), (2, 4, "4")]
    sql(spark, "INSERT OVERWRITE T PARTITION (a = 1) VALUES (5, '5'), (7, '7')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 5, "5"), (1, 7, "7"), (2, 4, "4")]


def _multi_partitioned(spark, has_pk: bool, bucket: int) -> None:
    sql(spark, f"CREATE TABLE T (a INT, b STRING, pt1 STRING, pt2 INT) "
               f"TBLPROPERTIES ({_props(has_pk, bucket, 'a,pt1,pt2', 'a')}) PARTITIONED BY (pt1, pt2)")
    sql(spark, "INSERT INTO T values (1, 'a', 'ptv1', 11), (2, 'b', 'ptv1', 11), (3, 'c', 'ptv1', 22), "
               "(4, 'd', 'ptv2', 22)")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [
        (1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c", "ptv1", 22), (4, "d", "ptv2", 22)]


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_insert_overwrite_multi_partitioned_table(spark, wh, has_pk, bucket):
    _multi_partitioned(spark, has_pk, bucket)
    sql(spark, "INSERT OVERWRITE T PARTITION (pt2 = 22) VALUES (3, 'c2', 'ptv1'), (4, 'd2', 'ptv3')")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [
        (1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c2", "ptv1", 22), (4, "d2", "ptv3", 22)]
    sql(spark, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv3') VALUES (4, 'd3', 22)")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [
        (1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c2", "ptv1", 22), (4, "d3", "ptv3", 22)]
    sql(spark, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv1', pt2=11) VALUES (5, 'e')")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [
        (3, "c2", "ptv1", 22), (4, "d3", "ptv3", 22), (5, "e", "ptv1", 11)]
    sql(spark, "INSERT OVERWRITE T VALUES (1, 'a5', 'ptv1', 11), (3, 'c5', 'ptv1', 22), (4, 'd5', 'ptv3', 22)")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [
        (1, "a5", "ptv1", 11), (3, "c5", "ptv1", 22), (4, "d5", "ptv3", 22)]


@pytest.mark.parametrize(("field", "sql1", "value1", "sql2", "value2"), [
    ("INT", "1", 1, "2", 2),
    ("LONG", "1L", 1, "2L", 2),
    ("FLOAT", "12.3f", 12.300000190734863, "45.6f", 45.599998474121094),
    ("DOUBLE", "12.3d", 12.3, "45.6d", 45.6),
    ("DECIMAL(5, 2)", "11.222", Decimal("11.22"), "66.777", Decimal("66.78")),
], ids=["int", "long", "float", "double", "decimal"])
def test_insert_overwrite_partition_field_type(spark, wh, field, sql1, value1, sql2, value2):
    """Scala's `12.3f` literal is Spark SQL's `CAST(12.3 AS FLOAT)`; Python reads that float as its double."""
    lit = {"12.3f": "CAST(12.3 AS FLOAT)", "45.6f": "CAST(45.6 AS FLOAT)"}
    s1, s2 = lit.get(sql1, sql1), lit.get(sql2, sql2)
    sql(spark, f"CREATE TABLE T (a INT, b STRING, pt {field}) PARTITIONED BY (pt)")
    sql(spark, f"INSERT INTO T SELECT 1, 'a', {s1} UNION ALL SELECT 2, 'b', {s2}")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [(1, "a", value1), (2, "b", value2)]
    sql(spark, f"INSERT OVERWRITE T SELECT 3, 'c', {s1} UNION ALL SELECT 4, 'd', {s2}")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [(3, "c", value1), (4, "d", value2)]
    # Paimon writes the partition value as Scala prints it (12.3 for the float, 11.22 for the decimal)
    spec = {"12.3f": "12.3", "11.222": "11.22"}.get(sql1, str(value1))
    sql(spark, f"INSERT OVERWRITE T PARTITION (pt = {spec}) VALUES (5, 'e'), (7, 'g')")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [(4, "d", value2), (5, "e", value1), (7, "g", value1)]


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_dynamic_insert_overwrite_single_partitioned_table(spark, wh, has_pk, bucket):
    sql(spark, f"CREATE TABLE T (a INT, b INT, c STRING) TBLPROPERTIES ({_props(has_pk, bucket, 'a,b', 'b')}) "
               "PARTITIONED BY (a)")
    sql(spark, "INSERT INTO T values (1, 1, '1'), (2, 2, '2')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 1, "1"), (2, 2, "2")]
    sql(spark, "INSERT OVERWRITE T VALUES (1, 3, '3'), (2, 4, '4')")
    assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 3, "3"), (2, 4, "4")]
    with session_conf(spark, **{"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        sql(spark, "INSERT OVERWRITE T VALUES (1, 5, '5'), (1, 7, '7')")
        assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [(1, 5, "5"), (1, 7, "7"), (2, 4, "4")]


@pytest.mark.parametrize(("has_pk", "bucket"), PK_BUCKET)
def test_dynamic_insert_overwrite_multi_partitioned_table(spark, wh, has_pk, bucket):
    _multi_partitioned(spark, has_pk, bucket)
    with session_conf(spark, **{"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        sql(spark, "INSERT OVERWRITE T PARTITION (pt2 = 22) VALUES (3, 'c2', 'ptv1'), (4, 'd2', 'ptv3')")
        assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [
            (1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c2", "ptv1", 22), (4, "d", "ptv2", 22),
            (4, "d2", "ptv3", 22)]
        sql(spark, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv3') VALUES (4, 'd3', 22)")
        assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [
            (1, "a", "ptv1", 11), (2, "b", "ptv1", 11), (3, "c2", "ptv1", 22), (4, "d", "ptv2", 22),
            (4, "d3", "ptv3", 22)]
        sql(spark, "INSERT OVERWRITE T PARTITION (pt1 = 'ptv1', pt2=11) VALUES (5, 'e')")
        assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [
            (3, "c2", "ptv1", 22), (4, "d", "ptv2", 22), (4, "d3", "ptv3", 22), (5, "e", "ptv1", 11)]
        sql(spark, "INSERT OVERWRITE T VALUES (1, 'a5', 'ptv1', 11), (3, 'c5', 'ptv1', 22), (4, 'd5', 'ptv3', 22)")
        assert rows(spark, "SELECT * FROM T ORDER BY a, b") == [
            (1, "a5", "ptv1", 11), (3, "c5", "ptv1", 22), (4, "d", "ptv2", 22), (4, "d5", "ptv3", 22)]


def test_insert_overwrite_date_type_partition_table(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, dt date) PARTITIONED BY (dt) "
               "TBLPROPERTIES ('primary-key' = 'id,dt', 'bucket' = '3')")
    sql(spark, "INSERT OVERWRITE T partition (dt='2024-04-18') values(1)")
    assert rows(spark, "SELECT * FROM T") == [("1", datetime.date(2024, 4, 18))]


def test_insert_all_data_types(spark, wh):
    sql(spark, "CREATE TABLE T (id bigint, name string, birth date, age int, marital boolean, height float, "
               "weight double, interests array<string>, scores map<string, double>, avg_score decimal(5, 2), "
               "address struct<province:string, city:string, district:string>, create_time timestamp)")
    sql(spark, """
        INSERT INTO T
        SELECT 1L, "yann", TO_DATE('1990-01-01', 'yyyy-MM-dd'), 32, true, 123.4F, 56.7D,
        array("abc", "def"), map("math", 90D, "history", 60D), 75.000, struct("Zhejiang", "Hangzhou", "Xihu"),
        TO_TIMESTAMP('2024-07-01 16:00:00', 'yyyy-MM-dd kk:mm:ss')
        UNION ALL
        SELECT 2L, "mai", TO_DATE('2021-06-01', 'yyyy-MM-dd'), 3, false, 98.7F, 12.3D,
        array("def", "xyz"), null, null, struct("Zhejiang", "Hangzhou", "Xihu"),
        TO_TIMESTAMP('2024-07-01 16:00:00', 'yyyy-MM-dd kk:mm:ss')""")
    got = rows(spark, "SELECT * FROM T ORDER BY id")
    ts = datetime.datetime(2024, 7, 1, 16, 0)
    address = ("Zhejiang", "Hangzhou", "Xihu")
    assert got == [
        (1, "yann", datetime.date(1990, 1, 1), 32, True, pytest.approx(123.4, rel=1e-6), 56.7, ["abc", "def"],
         {"math": 90.0, "history": 60.0}, Decimal("75.00"), address, ts),
        (2, "mai", datetime.date(2021, 6, 1), 3, False, pytest.approx(98.7, rel=1e-6), 12.3, ["def", "xyz"],
         None, None, address, ts),
    ]


def test_insert_with_column_list(spark, wh):
    sql(spark, "CREATE TABLE T (name String, student_id INT) PARTITIONED BY (address STRING)")
    sql(spark, "INSERT INTO T (name, student_id, address) VALUES ('a', '1', 'Hangzhou')")
    sql(spark, "INSERT INTO T (name) VALUES ('b')")
    sql(spark, "INSERT INTO T (address, name) VALUES ('Hangzhou', 'c')")
    sql(spark, "INSERT INTO T PARTITION (address='Beijing') (name) VALUES ('d')")
    sql(spark, "INSERT INTO T PARTITION (address='Hangzhou') (student_id, name) VALUES (5, 'e')")
    assert rows(spark, "SELECT * FROM T ORDER BY name") == [
        ("a", 1, "Hangzhou"), ("b", None, None), ("c", None, "Hangzhou"), ("d", None, "Beijing"),
        ("e", 5, "Hangzhou")]
    sql(spark, "INSERT OVERWRITE T (name, address) VALUES ('f', 'Shanghai')")
    assert rows(spark, "SELECT * FROM T ORDER BY name") == [("f", None, "Shanghai")]
    sql(spark, "INSERT OVERWRITE T PARTITION (address='Shanghai') (name) VALUES ('g')")
    assert rows(spark, "SELECT * FROM T ORDER BY name") == [("g", None, "Shanghai")]


def test_read_and_write_struct_with_null(spark, wh):
    for fmt in FORMATS:
        sql(spark, f"CREATE TABLE t (i INT, s STRUCT<f1: INT, f2: INT>) TBLPROPERTIES ('file.format' = '{fmt}')")
        sql(spark, "INSERT INTO t VALUES (1, STRUCT(1, 1)), (2, null), (3, STRUCT(1, null)), (4, STRUCT(null, null))")
        assert rows(spark, "SELECT * FROM t ORDER BY i") == [(1, (1, 1)), (2, None), (3, (1, None)), (4, (None, None))]
        sql(spark, "DROP TABLE t")


def test_dynamic_insert_overwrite_partition(spark, wh):
    """`spark.paimon.write.use-v2-write` picks a write path of Paimon's Java connector; paimon_ds has one, so
    each mode runs under both values as in Paimon, the conf being inert here."""
    sql(spark, "CREATE TABLE my_table (id INT, pt STRING) PARTITIONED BY (pt)")
    for use_v2 in ("true", "false"):
        for mode in ("static", "dynamic"):
            with session_conf(spark, **{"spark.sql.sources.partitionOverwriteMode": mode,
                                        "spark.paimon.write.use-v2-write": use_v2}):
                expected = [(2, "p2"), (3, "p1")] if mode == "dynamic" else [(3, "p1")]
                sql(spark, "INSERT OVERWRITE my_table VALUES (1, 'p1'), (2, 'p2')")
                sql(spark, "INSERT OVERWRITE my_table VALUES (3, 'p1')")
                assert rows(spark, "SELECT * FROM my_table ORDER BY id") == expected
                sql(spark, "INSERT OVERWRITE my_table VALUES (1, 'p1'), (2, 'p2')")
                sql(spark, "INSERT OVERWRITE my_table PARTITION (pt) VALUES (3, 'p1')")
                assert rows(spark, "SELECT * FROM my_table ORDER BY id") == expected
                sql(spark, "INSERT OVERWRITE my_table VALUES (1, 'p1'), (2, 'p2')")
                sql(spark, "INSERT OVERWRITE my_table PARTITION (pt='p1') VALUES (3)")
                assert rows(spark, "SELECT * FROM my_table ORDER BY id") == [(2, "p2"), (3, "p1")]


def test_dynamic_insert_into_table_with_partition_columns_in_primary_key(spark, wh):
    with session_conf(spark, **{"spark.sql.shuffle.partitions": "10"}):
        sql(spark, "create table pk_pt (c1 int) partitioned by(p1 string, p2 string) "
                   "tblproperties('primary-key'='c1, p1')")
        sql(spark, "insert into table pk_pt partition(p1, p2) values(1, 'a', 'b'), (1, 'b', 'b')")
        assert sorted(rows(spark, "select * from pk_pt")) == [(1, "a", "b"), (1, "b", "b")]
        sql(spark, "insert into table pk_pt partition(p1, p2) values(1, 'a', 'b'), (1, 'c', 'c')")
        assert rows(spark, "select * from pk_pt order by c1, p1, p2") == [(1, "a", "b"), (1, "b", "b"), (1, "c", "c")]


def test_insert_unsupported_type(spark, wh):
    """Paimon's `saveAsTable` of a new table; a Python source's `saveAsTable` creating a table gets no path from
    Spark, so the write runs as `CREATE TABLE ... AS SELECT` through paimon_ds.sql (the same DataFrame)."""
    from pyspark.sql.functions import lit

    spark.createDataFrame([("1", "2")], "f1 STRING, f2 STRING").withColumn("bad", lit(None)) \
        .createOrReplaceTempView("source")
    with pytest.raises(Exception) as err:
        sql(spark, "CREATE TABLE badTable AS SELECT * FROM source")
    assert "Arrow type null has no Paimon mapping" in str(err.value)  # Paimon: "Not a supported type: void"
