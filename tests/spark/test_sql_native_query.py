"""paimon_ds.sql queries read attached tables natively (spark/sql_query.py): the rows and column types of
spark.sql on the same query, with Spark's own file readers where paimon_ds.read uses them, and the names a
query shadows (CTEs, temporary views) or qualifies with options left to Spark as written."""

from __future__ import annotations

import pyarrow as pa

import paimon_ds
from paimon_ds import Catalog

from ._helpers import plan_text, row_multiset, type_signature

PYTHON_SCAN = "BatchScan"
NATIVE_SCAN = "FileScan parquet"


def _same_as_spark_sql(spark, query: str) -> str:
    """Assert paimon_ds.sql answers ``query`` as spark.sql does; return paimon_ds.sql's plan."""
    ours, plain = paimon_ds.sql(spark, query), spark.sql(query)
    assert type_signature(ours) == type_signature(plain), query
    assert row_multiset(ours) == row_multiset(plain), query
    assert NATIVE_SCAN not in plan_text(plain)
    return plan_text(ours)


def _native_scans(plan: str) -> int:
    """How many scans Spark's own file readers run in ``plan`` (the final plan, under adaptive execution)."""
    final = plan.split("== Initial Plan ==")[0]
    return final.count(NATIVE_SCAN)


def _warehouse(spark, tmp_path) -> Catalog:
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("shop")
    catalog.create_table("shop.items", pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())]),
                         partition_keys=["dt"])
    catalog.create_table("shop.orders", pa.schema([pa.field("id", pa.int64(), nullable=False), ("item", pa.int64()),
                                                   ("amount", pa.float64())]),
                         primary_keys=["id"], options={"bucket": "2"})
    paimon_ds.attach(spark, warehouse)
    spark.sql("INSERT INTO shop.items SELECT id, concat('item-', id), CAST(id % 3 AS STRING) FROM range(30)")
    spark.sql("INSERT INTO shop.orders SELECT id, id % 30, id * 0.5 FROM range(200)")
    paimon_ds.sql(spark, "CALL sys.compact(table => 'shop.orders')")  # one sorted run per bucket
    return catalog


def test_queries_on_attached_tables_read_natively(spark, tmp_path):
    _warehouse(spark, tmp_path)
    plan = _same_as_spark_sql(spark, "SELECT * FROM shop.items WHERE dt = '1' AND id > 10")
    assert NATIVE_SCAN in plan and PYTHON_SCAN not in plan
    assert "ReadSchema: struct<id:bigint,name:string>" in plan or "ReadSchema: struct<id:bigint,name:string,dt" in plan
    # compacted, the primary-key table is merge-free: Spark reads both tables
    join = ("SELECT i.name, count(*) AS n, sum(o.amount) AS total FROM shop.orders o "
            "JOIN shop.items i ON o.item = i.id GROUP BY i.name")
    plan = _same_as_spark_sql(spark, join)
    assert _native_scans(plan) == 2 and PYTHON_SCAN not in plan
    # an upsert leaves two runs in one bucket: its files go through the Python source, the other bucket's
    # and the items stay native
    spark.sql("INSERT INTO shop.orders VALUES (3, 4, 99.0)")
    plan = _same_as_spark_sql(spark, join)
    assert PYTHON_SCAN in plan and _native_scans(plan) == 2
    assert paimon_ds.sql(spark, "SELECT amount FROM shop.orders WHERE id = 3").collect()[0].amount == 99.0
    # spark_catalog.db.t, `USE db` + bare name, qualified columns, TABLE, set operations, scalar subqueries
    spark.sql("USE shop")
    try:
        for query in ("SELECT shop.items.id, items.name FROM spark_catalog.shop.items WHERE items.id < 4",
                      "TABLE items",
                      "SELECT id FROM items UNION ALL SELECT id FROM orders WHERE id < 5",
                      "SELECT (SELECT max(id) FROM items) AS m, count(*) AS c FROM orders",
                      "SELECT * FROM orders WHERE item IN (SELECT id FROM items WHERE dt = '2')"):
            assert NATIVE_SCAN in _same_as_spark_sql(spark, query)
    finally:
        spark.sql("USE default")


def test_each_call_reads_the_latest_snapshot(spark, tmp_path):
    _warehouse(spark, tmp_path)
    query = "SELECT count(*) FROM shop.items"
    assert paimon_ds.sql(spark, query).first()[0] == 30
    spark.sql("INSERT INTO shop.items VALUES (100, 'new', '0')")
    assert paimon_ds.sql(spark, query).first()[0] == 31
    # a table named twice is planned once, at one snapshot
    plan = plan_text(paimon_ds.sql(spark, "SELECT a.id FROM shop.items a JOIN shop.items b ON a.id = b.id"))
    assert _native_scans(plan) == 2 and PYTHON_SCAN not in plan


def test_shadowing_names_and_options_are_left_to_spark(spark, tmp_path):
    _warehouse(spark, tmp_path)
    spark.sql("USE shop")
    try:
        # a CTE named like the table: the query reads the CTE, as spark.sql does
        plan = _same_as_spark_sql(spark, "WITH items AS (SELECT 7 AS id) SELECT * FROM items")
        assert NATIVE_SCAN not in plan
        # ... while the qualified name still reaches the table
        plan = _same_as_spark_sql(spark, "WITH items AS (SELECT 7 AS id) SELECT count(*) FROM shop.items")
        assert NATIVE_SCAN in plan
        # a temporary view shadows a bare name
        spark.range(3).createOrReplaceTempView("orders")
        try:
            plan = _same_as_spark_sql(spark, "SELECT * FROM orders")
            assert NATIVE_SCAN not in plan and PYTHON_SCAN not in plan
        finally:
            spark.catalog.dropTempView("orders")
    finally:
        spark.sql("USE default")
    # options on the relation (a branch, empty when made, here) go to the source as spark.sql sends them
    paimon_ds.sql(spark, "CALL sys.create_branch(table => 'shop.items', branch => 'b1')")
    spark.sql("INSERT INTO shop.items WITH ('branch' = 'b1') VALUES (500, 'on-b1', '0')")
    plan = _same_as_spark_sql(spark, "SELECT count(*) FROM shop.items WITH ('branch' = 'b1')")
    assert NATIVE_SCAN not in plan
    assert paimon_ds.sql(spark, "SELECT count(*) FROM shop.items WITH ('branch' = 'b1')").first()[0] == 1
    # statements are not rewritten: SHOW / DESCRIBE / EXPLAIN go to spark.sql
    assert [r.tableName for r in paimon_ds.sql(spark, "SHOW TABLES IN shop").collect()
            if not r.isTemporary] == ["items", "orders"]
