"""Apache Paimon 1.4.1's `ExpireSnapshotsProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its
statements and expected rows are the specification, run through paimon_ds.sql (`CALL sys.expire_snapshots`).

The suite's three commits per case are written by a `foreachBatch` stream of a MemoryStream in Paimon; here they
are three INSERTs (one snapshot each, the same rows): the foreachBatch path is the Rollback and tag suites'."""

from __future__ import annotations

import datetime as dt

import pytest

from ._procs import load
from ._sql import rows, sql


def _three_snapshots(spark) -> None:
    for data, expected in (("(1, 'a')", [(1, "a")]), ("(2, 'b')", [(1, "a"), (2, "b")]),
                           ("(2, 'b2')", [(1, "a"), (2, "b2")])):
        sql(spark, f"INSERT INTO T VALUES {data}")
        assert rows(spark, "SELECT * FROM T ORDER BY a") == expected


def _snapshot_ids(spark, db: str) -> list[tuple]:
    return rows(spark, f"SELECT snapshot_id FROM global_temp.`{db}.T$snapshots` ORDER BY snapshot_id")


@pytest.mark.parametrize("case", ["retain_max", "table_property", "options_parameter"])
def test_expire_snapshots(spark, wh, case):
    """Paimon Procedure: expire snapshots / ... load table property first / ... add options parameter."""
    props = {"retain_max": "'write-only' = 'true', 'snapshot.num-retained.min' = '1'",
             "table_property": "'snapshot.num-retained.max' = '2', 'snapshot.num-retained.min' = '1', "
                               "'write-only' = 'true'",
             "options_parameter": "'write-only' = 'true'"}[case]
    sql(spark, f"CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3', {props})")
    db = spark.catalog.currentDatabase()
    _three_snapshots(spark)
    args = {"retain_max": ", retain_max => 2", "table_property": "",
            "options_parameter": ", options => 'snapshot.num-retained.max=2, snapshot.num-retained.min=1'"}[case]
    result = sql(spark, f"CALL sys.expire_snapshots(table => '{db}.T'{args})")
    assert result.columns == ["deleted_snapshots_count"]
    assert [tuple(r) for r in result.collect()] == [(1,)]
    assert _snapshot_ids(spark, db) == [(2,), (3,)]


def test_expire_snapshots_retain_max_retain_min_value_check(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")
    db = spark.catalog.currentDatabase()
    _three_snapshots(spark)
    with pytest.raises(ValueError):
        sql(spark, f"CALL sys.expire_snapshots(table => '{db}.T', retain_max => 2, retain_min => 3)")


def test_parameter_older_than_with_string_type(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ( 'num-sorted-run.compaction-trigger' = '999',"
               "'write-only' = 'true', 'snapshot.num-retained.min' = '1')")
    db = spark.catalog.currentDatabase()
    for i in range(1, 6):
        sql(spark, f"INSERT INTO T VALUES ({i}, '{i}')")
    sm = load(spark, wh).snapshot_manager
    assert sm.list_ids() == [1, 2, 3, 4, 5]
    # java.sql.Timestamp.toString: local time `yyyy-mm-dd hh:mm:ss.f...`
    timestamp = dt.datetime.fromtimestamp(sm.latest().time_millis / 1000).isoformat(" ", "milliseconds")
    sql(spark, f"CALL sys.expire_snapshots(table => '{db}.T', older_than => '{timestamp}', max_deletes => 2)")
    assert sm.list_ids() == [3, 4, 5]
