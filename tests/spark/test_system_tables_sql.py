"""System tables in Spark: SQL on the views attach() makes, and paimon_ds.system_table DataFrames."""

from __future__ import annotations

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog, Table
from paimon_ds.operation.compact import compact_in_process
from paimon_ds.operation.maintenance import create_tag
from paimon_ds.readers.system_tables import system_table as core_system_table

ORDERS = pa.schema([pa.field("dt", pa.string(), nullable=False), pa.field("id", pa.int64(), nullable=False),
                    ("amount", pa.float64())])
SNAPSHOTS = "global_temp.`shop.orders$snapshots`"


def rows(spark, query: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(query).collect()]


def upsert(path: str, data: list[tuple]) -> None:
    """A commit made outside Spark (Table API), after attach."""
    t = Table.for_write(path, ORDERS)
    w = t.new_write()
    w.write_arrow(pa.Table.from_pylist([dict(zip(ORDERS.names, r)) for r in data], schema=ORDERS))
    t.new_commit().commit(w.prepare_commit())


@pytest.fixture
def orders(spark, tmp_path) -> str:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("shop")
    catalog.create_table("shop.orders", ORDERS, partition_keys=["dt"], primary_keys=["dt", "id"],
                         options={"bucket": "1"})
    paimon_ds.attach(spark, str(tmp_path / "wh"))
    return catalog.table_path("shop.orders")


def test_sql_sees_system_tables_as_they_are_now(spark, orders):
    assert rows(spark, f"SELECT snapshot_id, commit_kind FROM {SNAPSHOTS}") == []
    assert rows(spark, "SELECT key, value FROM global_temp.`shop.orders$options`") == [("bucket", "1")]
    upsert(orders, [("d1", 1, 1.0), ("d1", 2, 2.0), ("d2", 1, 3.0)])
    upsert(orders, [("d1", 1, 10.0)])
    assert rows(spark, f"SELECT snapshot_id, commit_kind, total_record_count FROM {SNAPSHOTS}") == \
        [(1, "APPEND", 3), (2, "APPEND", 4)]

    # commits made after attach (SQL INSERT, a compaction) show in the next query
    spark.sql("INSERT INTO shop.orders VALUES ('d2', 7, 7.0)")
    assert compact_in_process(Table.load(orders), None, full=True) is not None
    assert rows(spark, f"SELECT snapshot_id, commit_kind, total_record_count FROM {SNAPSHOTS}") == \
        [(1, "APPEND", 3), (2, "APPEND", 4), (3, "APPEND", 5), (4, "COMPACT", 4)]
    assert rows(spark, "SELECT partition, bucket, level, record_count, min_sequence_number, max_sequence_number, "
                       "min_key, max_key FROM global_temp.`shop.orders$files`") == [
        ("[d1]", 0, 5, 2, 1, 2, "[1]", "[2]"), ("[d2]", 0, 5, 2, 0, 1, "[1]", "[7]")]
    # one Spark partition, in the system table's own order (partition, bucket, level, sequence)
    assert rows(spark, "SELECT partition, record_count, file_count FROM global_temp.`shop.orders$partitions`") == \
        [("[d1]", 2, 1), ("[d2]", 2, 1)]
    assert rows(spark, "SELECT partition, bucket, record_count FROM global_temp.`shop.orders$buckets`") == \
        [("[d1]", 0, 2), ("[d2]", 0, 2)]
    create_tag(Table.load(orders), "before-compact", snapshot_id=3)
    assert rows(spark, "SELECT tag_name, snapshot_id, record_count FROM global_temp.`shop.orders$tags`") == \
        [("before-compact", 3, 5)]
    assert rows(spark, "SELECT schema_id, primary_keys FROM global_temp.`shop.orders$schemas`") == \
        [(0, '["dt","id"]')]
    assert rows(spark, "SELECT sum(num_added_files) - sum(num_deleted_files) FROM "
                       "global_temp.`shop.orders$manifests`") == [(2,)]
    # Paimon's column types: timestamps without time zone (TIMESTAMP_NTZ), as Paimon's Spark connector shows them
    assert [(r[0], r[1]) for r in rows(spark, f"DESCRIBE {SNAPSHOTS}")][:6] == [
        ("snapshot_id", "bigint"), ("schema_id", "bigint"), ("commit_user", "string"),
        ("commit_identifier", "bigint"), ("commit_kind", "string"), ("commit_time", "timestamp_ntz")]


def test_system_table_dataframe_equals_the_core_table(spark, orders):
    upsert(orders, [("d1", 1, 1.0), ("d2", 2, 2.0)])
    upsert(orders, [("d1", 3, None)])
    df = paimon_ds.system_table(spark, orders, "files")
    expected = core_system_table(Table.load(orders), "files").to_pylist()
    assert [r.asDict() for r in df.collect()] == expected
    assert [(r["partition"], r["level"], r["min_sequence_number"], r["max_sequence_number"]) for r in expected] == \
        [("[d1]", 0, 0, 0), ("[d1]", 0, 1, 1), ("[d2]", 0, 0, 0)]
    assert df.schema["creation_time"].dataType.simpleString() == "timestamp_ntz"
    assert df.schema["bucket"].nullable is False and df.schema["partition"].nullable is True
    assert df.select("record_count").collect() == [(1,), (1,), (1,)]
    # the DataFrame is computed when read: a later commit shows in the next action
    upsert(orders, [("d3", 9, 9.0)])
    assert [r.partition for r in df.select("partition").collect()] == ["[d1]", "[d1]", "[d2]", "[d3]"]
    with pytest.raises(ValueError, match="unknown system table 'snapshot'"):
        paimon_ds.system_table(spark, orders, "snapshot")


def test_attach_without_system_views(spark, tmp_path):
    """Views cost attach() ~50 ms each: a large warehouse can do without them (system_table() still works)."""
    from paimon_ds.spark.system import SYSTEM_VIEWS_CONF
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("quiet")
    catalog.create_table("quiet.t", pa.schema([("x", pa.int32())]))
    spark.conf.set(SYSTEM_VIEWS_CONF, "false")
    try:
        paimon_ds.attach(spark, str(tmp_path / "wh"))
    finally:
        spark.conf.unset(SYSTEM_VIEWS_CONF)
    assert [r for r in rows(spark, "SHOW TABLES IN quiet") if not r[2]] == [("quiet", "t", False)]
    assert [r for r in rows(spark, "SHOW TABLES IN global_temp") if r[1].startswith("quiet.")] == []
    assert paimon_ds.system_table(spark, catalog.table_path("quiet.t"), "$schemas").count() == 1


def test_paimon_ds_sql_names_system_tables_as_paimons_spark_catalog_does(spark, orders):
    """`SELECT * FROM db.\\`t$snapshots\\`` is how Paimon's Spark catalog names a system table: paimon_ds.sql reads
    it (plain spark.sql has only the global_temp views); names are matched as Spark matches them, and a
    system table joins with its table."""
    upsert(orders, [("d1", 1, 1.0), ("d2", 2, 2.0)])
    upsert(orders, [("d1", 1, 5.0)])
    sql = lambda q: [tuple(r) for r in paimon_ds.sql(spark, q).collect()]  # noqa: E731
    assert sql("SELECT snapshot_id, commit_kind, total_record_count FROM shop.`orders$snapshots`") == \
        [(1, "APPEND", 2), (2, "APPEND", 3)]
    assert sql("SELECT s.snapshot_id FROM spark_catalog.shop.`ORDERS$Snapshots` s WHERE s.snapshot_id > 1") == [(2,)]
    spark.sql("USE shop")
    try:
        assert sql("SELECT rowkind, id, amount FROM `orders$audit_log` WHERE dt = 'd1' ORDER BY amount") == \
            [("+I", 1, 5.0)]
    finally:
        spark.sql("USE default")
    assert sql("SELECT o.id, count(f.file_path) FROM shop.orders o JOIN shop.`orders$files` f "
               "ON f.partition = concat('[', o.dt, ']') GROUP BY o.id ORDER BY o.id") == [(1, 2), (2, 1)]  # d1: 2 files
    with pytest.raises(Exception, match="unknown system table 'nope'"):
        paimon_ds.sql(spark, "SELECT * FROM shop.`orders$nope`").collect()
