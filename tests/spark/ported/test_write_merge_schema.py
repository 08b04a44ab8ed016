"""Apache Paimon 1.4.1's `WriteMergeSchemaTest` (paimon-spark-ut/src/test/.../spark/sql/), ported: schema evolution
on write (`write.merge-schema`) through a DataFrame's `saveAsTable` and SQL's `INSERT INTO ... BY NAME`. Its
statements and expected rows are the specification (1.4.1 is the newest release holding the suite).

Paimon's SQL cases set the session conf `spark.paimon.write.merge-schema` (and `...explicit-cast`), which
paimon_ds.sql reads for an INSERT as Paimon's OptionUtils does. Each case is one table; the cases of one shape are
rows of a table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from paimon_ds.table import Table

from ._sql import rows, sql


@pytest.fixture
def merge_conf(spark):
    """Paimon's `withSparkSQLConf("spark.paimon.write.merge-schema" -> "true")`."""
    spark.conf.set("spark.paimon.write.merge-schema", "true")
    yield spark
    spark.conf.unset("spark.paimon.write.merge-schema")
    spark.conf.unset("spark.paimon.write.merge-schema.explicit-cast")


def _base(spark) -> None:
    sql(spark, "CREATE TABLE t (a INT, b STRING)")
    sql(spark, "INSERT INTO t VALUES (1, '1'), (2, '2')")


def location(spark, wh: str, table: str = "t") -> str:
    """The table's path (Paimon's `loadTable(t).location()`)."""
    return f"{wh}/{spark.catalog.currentDatabase()}.db/{table}"


def _ordered(spark, order: str = "a") -> list[tuple]:
    return rows(spark, f"SELECT * FROM t ORDER BY {order}")


def test_dataframe_write(spark, wh):
    """Write merge schema: dataframe write. Paimon's case appends with `saveAsTable("t")`; for a table with new or
    missing columns Spark's analyzer refuses that before the Python source is asked
    (`INSERT_COLUMN_ARITY_MISMATCH`: it compares the DataFrame with the session table's columns), so the merging
    writes go to the table's path, `.save(location)`, as Paimon's DataFrameWriteTestBase writes."""
    sql(spark, "CREATE TABLE t (a INT, b STRING)")
    spark.createDataFrame([(1, "1"), (2, "2")], "a INT, b STRING").write.format("paimon").mode("append") \
        .saveAsTable("t")
    path = location(spark, wh)
    spark.createDataFrame([(3, "3", 3)], "a INT, b STRING, c INT").write.format("paimon").mode("append") \
        .option("write.merge-schema", "true").save(path)
    assert _ordered(spark) == [(1, "1", None), (2, "2", None), (3, "3", 3)]
    # missing columns and new columns
    spark.createDataFrame([("4", "4", 4)], "d STRING, b STRING, c INT").write.format("paimon").mode("append") \
        .option("write.merge-schema", "true").save(path)
    assert _ordered(spark) == [(None, "4", 4, "4"), (1, "1", None, None), (2, "2", None, None),
                               (3, "3", 3, None)]


def test_fail_without_merge_schema(spark, wh):
    """Write merge schema: fail when merge schema is disabled but new columns are provided (Paimon's message:
    "the number of data columns don't match with the table schema's"; paimon_ds names the extra column)."""
    _base(spark)
    with pytest.raises(Exception, match=r"not in the table|c"):
        sql(spark, "INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, 3 AS c")
    assert _ordered(spark) == [(1, "1"), (2, "2")]


# the SQL cases: (new columns' SELECT list of the first write, its row 3 values; of the second write (with
# `'4' AS d, '4' AS b`), its row values)
SQL_CASES = {
    "sql_write": ("3 AS c", (3,), "4 AS c", (4,)),
    "numeric_types": (
        "cast(10 as byte) AS byte_col, cast(1000 as short) AS short_col, 100000 AS int_col, "
        "10000000000L AS long_col, cast(1.23 as float) AS float_col, 4.56 AS double_col, "
        "cast(7.89 as decimal(10,2)) AS decimal_col",
        (10, 1000, 100000, 10000000000, pytest.approx(1.23), Decimal("4.56"), Decimal("7.89")),
        "cast(20 as byte) AS byte_col, cast(2000 as short) AS short_col, 200000 AS int_col, "
        "20000000000L AS long_col, cast(2.34 as float) AS float_col, 5.67 AS double_col, "
        "cast(8.96 as decimal(10,2)) AS decimal_col",
        (20, 2000, 200000, 20000000000, pytest.approx(2.34), Decimal("5.67"), Decimal("8.96"))),
    "date_and_time_types": (
        "cast('2023-01-01' as date) AS date_col, cast('2023-01-01 12:00:00' as timestamp) AS timestamp_col",
        (dt.date(2023, 1, 1), dt.datetime(2023, 1, 1, 12)),
        "cast('2023-12-31' as date) AS date_col, cast('2023-12-31 23:59:59' as timestamp) AS timestamp_col",
        (dt.date(2023, 12, 31), dt.datetime(2023, 12, 31, 23, 59, 59))),
    "complex_types": (
        "array(1, 2, 3) AS array_col, map('key1', 'value1', 'key2', 'value2') AS map_col, "
        "struct('x', 1) AS struct_col",
        ([1, 2, 3], {"key1": "value1", "key2": "value2"}, ("x", 1)),
        "array(4, 5, 6) AS array_col, map('key3', 'value3') AS map_col, struct('y', 2) AS struct_col",
        ([4, 5, 6], {"key3": "value3"}, ("y", 2))),
    "binary_and_boolean_types": (
        "cast('binary_data' as binary) AS binary_col, true AS boolean_col", (b"binary_data", True),
        "cast('more_data' as binary) AS binary_col, false AS boolean_col", (b"more_data", False)),
}


@pytest.mark.parametrize("case", list(SQL_CASES))
def test_sql_write(spark, wh, merge_conf, case):
    """Write merge schema: sql write / numeric types / date and time types / complex types / binary and boolean
    types: new columns of each type, then a write missing `a` and adding `d`."""
    first, first_values, second, second_values = SQL_CASES[case]
    _base(spark)
    sql(spark, f"INSERT INTO t BY NAME SELECT 3 AS a, '3' AS b, {first}")
    empty = (None,) * len(first_values)
    assert _ordered(spark) == [(1, "1", *empty), (2, "2", *empty), (3, "3", *first_values)]
    sql(spark, f"INSERT INTO t BY NAME SELECT '4' AS d, '4' AS b, {second}")
    assert _ordered(spark) == [(None, "4", *second_values, "4"), (1, "1", *empty, None), (2, "2", *empty, None),
                               (3, "3", *first_values, None)]


# nested cases: (CREATE columns, the writes (SQL after `INSERT INTO t BY NAME`, the first plain), the rows by id)
NESTED = {
    "nested_struct_new_fields_by_sql": (
        "id INT, info STRUCT<key1 STRUCT<key2 STRING, key3 STRING>>",
        ["VALUES (1, struct(struct('v2a', 'v3a')))", "VALUES (2, struct(struct('v2b', 'v3b')))",
         "SELECT 3 AS id, named_struct('key1', named_struct('key2', 'v2c', 'key4', 'v4c', 'key3', 'v3c')) AS info"],
        [(1, (("v2a", "v3a", None),)), (2, (("v2b", "v3b", None),)), (3, (("v2c", "v3c", "v4c"),))]),
    "deeply_nested_struct": (
        "id INT, data STRUCT<a STRUCT<b STRUCT<c1 STRING, c2 STRING>>>",
        ["VALUES (1, struct(struct(struct('c1v', 'c2v'))))",
         "SELECT 2 AS id, named_struct('a', named_struct('b', named_struct('c1', 'c1v2', 'c3', 'c3v2', "
         "'c2', 'c2v2'))) AS data"],
        [(1, ((("c1v", "c2v", None),),)), (2, ((("c1v2", "c2v2", "c3v2"),),))]),
    "nested_and_top_level_new_column": (
        "id INT, info STRUCT<f1 STRING, f2 STRING>",
        ["VALUES (1, struct('a', 'b'))",
         "SELECT 2 AS id, named_struct('f1', 'c', 'f3', 'd', 'f2', 'e') AS info, 'top' AS extra"],
        [(1, ("a", "b", None), None), (2, ("c", "e", "d"), "top")]),
    "nested_struct_missing_fields": (
        "id INT, info STRUCT<f1 STRING, f2 STRING, f3 STRING>",
        ["VALUES (1, struct('a', 'b', 'c'))",
         "SELECT 2 AS id, named_struct('f2', 'y', 'f3', 'z') AS info",
         "SELECT 3 AS id, named_struct('f1', 'x', 'f4', 'w', 'f3', 'z') AS info",
         "SELECT 4 AS id, named_struct('f2', 'p', 'f3', 'q', 'f4', 'r') AS info"],
        [(1, ("a", "b", "c", None)), (2, (None, "y", "z", None)), (3, ("x", None, "z", "w")),
         (4, (None, "p", "q", "r"))]),
}


@pytest.mark.parametrize("case", list(NESTED))
def test_nested_struct(spark, wh, merge_conf, case):
    """Write merge schema: nested struct with new fields by sql / deeply nested struct with new fields / nested
    struct new fields and top-level new column together / nested struct with missing fields."""
    columns, writes, expected = NESTED[case]
    sql(spark, f"CREATE TABLE t ({columns})")
    for statement in writes:
        sql(spark, f"INSERT INTO t {'BY NAME ' if statement.startswith('SELECT') else ''}{statement}")
    assert _ordered(spark, "id") == expected


def test_nested_struct_type_evolution(spark, wh, merge_conf):
    """Write merge schema: nested struct with type evolution (INT to BIGINT inside a struct, with explicit-cast)."""
    sql(spark, "CREATE TABLE t (id INT, info STRUCT<f1 INT, f2 STRING>)")
    sql(spark, "INSERT INTO t VALUES (1, struct(10, 'a'))")
    spark.conf.set("spark.paimon.write.merge-schema.explicit-cast", "true")
    sql(spark, "INSERT INTO t BY NAME SELECT 2 AS id, "
               "named_struct('f1', cast(20 as bigint), 'f3', 'new', 'f2', 'b') AS info")
    assert _ordered(spark, "id") == [(1, (10, "a", None)), (2, (20, "b", "new"))]
    # the session's table follows the merged schema (paimon_ds.sql attaches it again)
    assert spark.table("t").schema["info"].dataType.simpleString() == "struct<f1:bigint,f2:string,f3:string>"
    info = Table.load(location(spark, wh)).schema().field("info").type
    assert info.sql() == "ROW<f1 BIGINT, f2 STRING, f3 STRING>"


def test_nested_struct_by_dataframe(spark, wh):
    """Write merge schema: nested struct with new fields by dataframe (key4 before key3: matched by name)."""
    sql(spark, "CREATE TABLE t (id INT, info STRUCT<key1 STRUCT<key2 STRING, key3 STRING>>)")
    sql(spark, "INSERT INTO t VALUES (1, struct(struct('v2a', 'v3a')))")
    spark.createDataFrame([(2, (("v2b", "v4b", "v3b"),))],
                          "id INT, info STRUCT<key1: STRUCT<key2: STRING, key4: STRING, key3: STRING>>") \
        .write.format("paimon").mode("append").option("write.merge-schema", "true").save(location(spark, wh))
    assert _ordered(spark, "id") == [(1, (("v2a", "v3a", None),)), (2, (("v2b", "v3b", "v4b"),))]


def test_dynamic_bucket_table_by_name(spark, wh, merge_conf):
    """paimon_ds's own case (the rules above on the package's clustered write, which a dynamic-bucket primary-key
    table's INSERT takes): `ID` is the key `id`, widened INT -> BIGINT, the missing `w` written null (the row
    replaces the old one), `extra` added."""
    sql(spark, "CREATE TABLE p (id INT, v STRING, w INT) TBLPROPERTIES ('primary-key' = 'id')")
    sql(spark, "INSERT INTO p VALUES (1, 'a', 1), (2, 'b', 2)")
    sql(spark, "INSERT INTO p BY NAME SELECT cast(2 as bigint) AS ID, 'B' AS v, 'x' AS extra")
    assert rows(spark, "SELECT * FROM p ORDER BY id") == [(1, "a", 1, None), (2, "B", None, "x")]
    schema = Table.load(location(spark, wh, "p")).schema()
    assert [f.type.sql() for f in schema.fields] == ["BIGINT NOT NULL", "STRING", "INT", "STRING"]
