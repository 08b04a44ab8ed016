"""Time travel in SQL and read options through Spark: `SELECT ... FROM t VERSION AS OF 3 / 'tag'` and
`TIMESTAMP AS OF '...'` through paimon_ds.sql (Spark refuses time travel on the Python source's relation, so
paimon_ds.sql reads the version itself, with the options Paimon's SparkCatalog.loadTable(ident, version /
timestamp) sets), and `scan.version` / `scan.timestamp` / `scan.watermark` as read options of spark.read and
paimon_ds.read. The model: the table's rows after each commit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds import Catalog, Table, procedures

COMMITS = ["(1, 'a'), (2, 'b')", "(2, 'B'), (3, 'c')", "(4, 'd')"]
MODEL = {1: [(1, "a"), (2, "b")], 2: [(1, "a"), (2, "B"), (3, "c")], 3: [(1, "a"), (2, "B"), (3, "c"), (4, "d")]}


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def warehouse(spark, tmp_path):
    warehouse = str(tmp_path / "wh")
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string())]),
                         primary_keys=["id"], options={"bucket": "1"})
    paimon_ds.attach(spark, warehouse)
    for values in COMMITS:
        spark.sql(f"INSERT INTO db.t VALUES {values}")
    path = catalog.table_path("db.t")
    procedures.create_tag(path, "first", 1)
    procedures.create_tag(path, "2", 3)  # VERSION AS OF 2 reads this tag, not snapshot 2 (tag first)
    return path


def test_version_and_timestamp_as_of_through_paimon_ds_sql(spark, warehouse):
    assert rows(paimon_ds.sql(spark, "SELECT * FROM db.t VERSION AS OF 1")) == MODEL[1]
    assert rows(paimon_ds.sql(spark, "SELECT * FROM db.t VERSION AS OF 'first'")) == MODEL[1]
    assert rows(paimon_ds.sql(spark, "SELECT * FROM db.t VERSION AS OF 2")) == MODEL[3]
    assert rows(paimon_ds.sql(spark, "SELECT id, v FROM db.t FOR SYSTEM_VERSION AS OF 3 WHERE id > 2")) == \
        [(3, "c"), (4, "d")]
    sm = Table.load(warehouse).snapshot_manager
    t2 = sm.snapshot(2).time_millis
    session_text = dt.datetime.fromtimestamp(t2 / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    # the session's time zone is UTC (conftest): Spark evaluates the literal there, Paimon takes its millis
    assert rows(paimon_ds.sql(spark, f"SELECT * FROM db.t TIMESTAMP AS OF '{session_text}'")) == MODEL[2]
    assert rows(paimon_ds.sql(spark, f"SELECT * FROM db.t TIMESTAMP AS OF timestamp_millis({t2 - 1})")) == MODEL[1]
    # two versions of one table in one query, qualified columns, aliases
    diff = paimon_ds.sql(spark, "SELECT n.id, o.v AS old, n.v AS new FROM db.t VERSION AS OF 3 AS n "
                                "LEFT JOIN db.t VERSION AS OF 1 AS o ON n.id = o.id WHERE n.v <> coalesce(o.v, '')")
    assert rows(diff) == [(2, "b", "B"), (3, None, "c"), (4, None, "d")]
    assert rows(paimon_ds.sql(spark, "SELECT t.v FROM db.t VERSION AS OF 1 WHERE t.id = 2")) == [("b",)]
    with pytest.raises(Exception, match="Cannot find a time travel version for nope"):
        paimon_ds.sql(spark, "SELECT * FROM db.t VERSION AS OF 'nope'").collect()


def test_version_options_through_spark_read_and_paimon_ds_read(spark, warehouse):
    def spark_read(**options):
        reader = spark.read.format("paimon")
        for k, v in options.items():
            reader = reader.option(k, v)
        return rows(reader.load(warehouse))

    assert spark_read(**{"scan.version": "first"}) == MODEL[1]
    assert spark_read(**{"scan.version": "2"}) == MODEL[3]
    assert spark_read(**{"scan.version": "3"}) == MODEL[3]
    t1 = Table.load(warehouse).snapshot_manager.snapshot(1).time_millis
    local = dt.datetime.fromtimestamp(t1 / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    assert spark_read(**{"scan.timestamp": local}) == MODEL[1]
    assert rows(paimon_ds.read(spark, warehouse, options={"scan.version": "first"})) == MODEL[1]
    assert rows(paimon_ds.read(spark, warehouse, version=2)) == MODEL[3]  # the tag named 2
    assert rows(paimon_ds.read(spark, warehouse, options={"scan.timestamp": local})) == MODEL[1]
    with pytest.raises(Exception, match=r"\[scan.snapshot-id\] must be null when you set"):
        spark_read(**{"scan.snapshot-id": "1", "scan.timestamp-millis": str(t1)})


def test_incremental_reads_through_every_spark_entry_point(spark, warehouse):
    """`incremental-between` 1,3 (snapshots 2 and 3 merged: (2,B), (3,c), (4,d)) and between the tags first and 2
    (snapshot 1 against 3: the keys whose value is new or changed) through spark.read options, paimon_ds.read,
    a relation's WITH options (left to Spark's Python source) and Paimon's paimon_incremental_query function."""
    changed = [(2, "B"), (3, "c"), (4, "d")]
    reader = spark.read.format("paimon").option("incremental-between", "1,3")
    assert rows(reader.load(warehouse)) == changed
    assert rows(paimon_ds.read(spark, warehouse, options={"incremental-between": "first,2"})) == changed
    assert rows(paimon_ds.read(spark, warehouse, options={"incremental-between": "2,3"})) == [(4, "d")]
    assert rows(paimon_ds.sql(spark, "SELECT * FROM db.t WITH ('incremental-between' = '1,3')")) == changed
    assert rows(spark.sql("SELECT * FROM db.t WITH ('incremental-between' = '2,3')")) == [(4, "d")]
    assert rows(paimon_ds.sql(spark, "SELECT * FROM paimon_incremental_query('db.t', 1, 3)")) == changed
    assert rows(paimon_ds.sql(spark, "SELECT q.v FROM paimon_incremental_query('db.t', 'first', '2') AS q "
                                     "WHERE q.id > 2")) == [("c",), ("d",)]


def test_audit_log_and_ro_as_system_views_and_dataframes(spark, warehouse):
    """`db.t$audit_log` / `db.t$ro` as attach() names system tables (global temporary views) and through
    paimon_ds.system_table: the rows Table.inspect gives (tests/test_change_tables.py checks them against Java)."""
    Table.load(warehouse).delete("id = 4")
    paimon_ds.attach(spark, str(Path(warehouse).parent.parent))
    audit = spark.sql("SELECT * FROM global_temp.`db.t$audit_log`")
    assert audit.columns == ["rowkind", "id", "v"]
    assert rows(audit) == [("+I", 1, "a"), ("+I", 2, "B"), ("+I", 3, "c"), ("-D", 4, "d")]
    # the inserts were compacted to the top level, the deletion is in level 0: ro still shows key 4
    ro = rows(spark.sql("SELECT * FROM global_temp.`db.t$ro`"))
    assert ro == sorted(tuple(r.values()) for r in Table.load(warehouse).inspect.ro().to_pylist())
    assert (4, "d") in ro
    assert rows(paimon_ds.system_table(spark, warehouse, "audit_log").where("rowkind = '-D'")) == [("-D", 4, "d")]
    binlog = spark.sql("SELECT * FROM global_temp.`db.t$binlog`")
    assert [(f.name, f.dataType.simpleString()) for f in binlog.schema.fields] == [
        ("rowkind", "string"), ("id", "array<int>"), ("v", "array<string>")]
    assert rows(binlog) == [("+I", [1], ["a"]), ("+I", [2], ["B"]), ("+I", [3], ["c"]), ("-D", [4], ["d"])]
