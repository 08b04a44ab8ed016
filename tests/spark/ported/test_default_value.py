"""Apache Paimon 1.4.1's `DefaultValueTest` (paimon-spark-ut/.../spark/sql/), ported: its statements and expected
rows are the specification, run through paimon_ds.sql (CREATE / ALTER) and plain spark.sql (INSERT, SELECT on the
attached table). A column's DEFAULT is stored as Paimon's SparkCatalog stores it (the expression's SQL text in
the field's defaultValue) and written in place of a null, as Paimon's TableWriteImpl writes it."""

from __future__ import annotations

import pytest

from ._sql import rows, sql


def test_default_value_map_type(spark, wh):
    sql(spark, """CREATE TABLE IF NOT EXISTS t (
                    id BIGINT NOT NULL,
                    col1 MAP<INT, DOUBLE> DEFAULT NULL,
                    col2 MAP<INT, DOUBLE> DEFAULT map(),
                    col3 MAP<INT, DOUBLE> DEFAULT map(99, 99.99D)
                  ) using paimon""")
    spark.sql("""INSERT INTO t VALUES
                   (1, map(1, 1.1), map(2, 2.2), map(3, 3.3)),
                   (2, null, map(5, 5.5), map(6, 6.6)),
                   (3, map(7, 7.7), null, map(9, 9.9)),
                   (4, map(10, 10.1), map(11, 11.11), null),
                   (5, null, null, null)""")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [
        (1, {1: 1.1}, {2: 2.2}, {3: 3.3}),
        (2, None, {5: 5.5}, {6: 6.6}),
        (3, {7: 7.7}, {}, {9: 9.9}),
        (4, {10: 10.1}, {11: 11.11}, {99: 99.99}),
        (5, None, {}, {99: 99.99}),
    ]


def test_default_value_map_type_with_string_element(spark, wh):
    sql(spark, """CREATE TABLE IF NOT EXISTS t (
                    id BIGINT NOT NULL,
                    col1 MAP<BIGINT, STRING> DEFAULT NULL,
                    col2 MAP<BIGINT, STRING> DEFAULT map(),
                    col3 MAP<BIGINT, STRING> DEFAULT map(9999, "hello")
                  ) using paimon""")
    spark.sql("""INSERT INTO t VALUES
                   (1, map(1, "a", 11, "aa"), map(2, "b"), map(3, "c")),
                   (2, null, map(5, "e", 55, "ee"), map(6, "f")),
                   (3, map(7, "g"), null, map(9, "i", 99, "ii")),
                   (4, map(10, "j"), map(11, "k"), null),
                   (5, null, null, map(15, "o")),
                   (6, null, map(17, "q"), null),
                   (7, map(19, "r"), null, null),
                   (8, null, null, null)""")
    assert rows(spark, "SELECT * FROM t ORDER BY id") == [
        (1, {1: "a", 11: "aa"}, {2: "b"}, {3: "c"}),
        (2, None, {5: "e", 55: "ee"}, {6: "f"}),
        (3, {7: "g"}, {}, {9: "i", 99: "ii"}),
        (4, {10: "j"}, {11: "k"}, {9999: "hello"}),
        (5, None, {}, {15: "o"}),
        (6, None, {17: "q"}, {9999: "hello"}),
        (7, {19: "r"}, {}, {9999: "hello"}),
        (8, None, {}, {9999: "hello"}),
    ]


def test_default_value_unsupported_default_value(spark, wh):
    with pytest.raises(Exception, match=r"Unsupported default value `current_timestamp\(\)`"):
        sql(spark, """CREATE TABLE t (
                        a INT,
                        b TIMESTAMP DEFAULT current_timestamp(),
                        c TIMESTAMP_NTZ DEFAULT current_timestamp,
                        d DATE DEFAULT current_date()
                      )""")
    sql(spark, "CREATE TABLE t (a INT DEFAULT 1)")
    with pytest.raises(Exception, match=r"Unsupported default value `current_timestamp\(\)`"):
        sql(spark, "ALTER TABLE t ALTER COLUMN a SET DEFAULT current_timestamp()")
    # the refused ALTER changed nothing: the default stays 1
    spark.sql("INSERT INTO t VALUES (null)")
    assert rows(spark, "SELECT * FROM t") == [(1,)]
