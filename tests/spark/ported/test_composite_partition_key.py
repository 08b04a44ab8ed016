"""Apache Paimon 1.4.1's `PaimonCompositePartitionKeyTestBase` (paimon-spark-ut/.../spark/sql/), ported: a
partition key whose name holds a space (`pt t`), joined with a source view through plain spark.sql (as Paimon's
test runs it). Paimon asserts the analyzed plans hold no dynamic-pruning subquery; here the analyzed plan's text is
checked for one."""

from __future__ import annotations

from ._sql import sql


def _rows(spark, query: str) -> list[tuple]:
    df = spark.sql(query)
    analyzed = df._jdf.queryExecution().analyzed().toString()
    assert "dynamicpruning" not in analyzed.lower()
    return [tuple(r) for r in df.collect()]


def test_paimon_composite_partition_key(spark, wh):
    spark.createDataFrame([(1, "x1", "2023"), (2, "x2", "2023"), (5, "x5", "2025"), (6, "x6", "2026")],
                          "a BIGINT, b STRING, `pt t` STRING").createOrReplaceTempView("source")
    # a single composite partition key
    sql(spark, "CREATE TABLE t (id INT, name STRING, `pt t` STRING) PARTITIONED BY (`pt t`)")
    spark.sql("""INSERT INTO t(`id`, `name`, `pt t`) VALUES (1, "a", "2023"), (3, "c", "2023"), (5, "e", "2025"), """
              """(7, "g", "2027")""")
    assert _rows(spark, "SELECT t.id, t.name, source.b FROM source join t "
                        "ON source.`pt t` = t.`pt t` AND source.`pt t` = '2023' ORDER BY t.id, source.b") == [
        (1, "a", "x1"), (1, "a", "x2"), (3, "c", "x1"), (3, "c", "x2")]
    assert _rows(spark, "SELECT t.*, source.b FROM source join t "
                        "ON source.a = t.id AND source.`pt t` = t.`pt t` AND source.a > 3") == [(5, "e", "2025", "x5")]

    # a normal and a composite partition key
    sql(spark, "CREATE TABLE t1 (id INT, name STRING, `pt t` STRING, v STRING) PARTITIONED BY (`pt t`, v)")
    spark.sql("""INSERT INTO t1(`id`, `name`, `pt t`, v) VALUES (1, "a", "2023", "2222"), (3, "c", "2023", "2223"), """
              """(5, "e", "2025", "2224"), (7, "g", "2027", "2225")""")
    assert _rows(spark, "SELECT t1.id, t1.name, source.b FROM source join t1 ON source.`pt t` = t1.`pt t` "
                        "AND source.`pt t` = '2023' AND t1.v = '2223' ORDER BY t1.id, source.b") == [
        (3, "c", "x1"), (3, "c", "x2")]
    assert _rows(spark, "SELECT t1.*, source.b FROM source join t1 "
                        "ON source.a = t1.id AND source.`pt t` = t1.`pt t` AND source.a > 3") == [
        (5, "e", "2025", "2224", "x5")]
