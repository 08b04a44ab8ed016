"""Apache Paimon 1.4.1's `RollbackProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its statements
and expected rows are the specification, run through paimon_ds.sql (`CALL sys.rollback(...)`).

`rollback` returns `(previous_snapshot_id, current_snapshot_id)`: the latest snapshot before the rollback and
the one rolled back to (Paimon's RollbackProcedure reads `latestSnapshot()` before `rollbackTo`)."""

from __future__ import annotations

import time

import pytest

from ._procs import foreach_batch_appends
from ._sql import rows, sql

PK_TABLE = "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3'{extra})"


def _all(spark):
    return rows(spark, "SELECT * FROM T ORDER BY a")


def test_rollback_to_snapshot_and_tag(spark, wh, tmp_path):
    sql(spark, PK_TABLE.format(extra=""))
    db = spark.catalog.currentDatabase()
    with foreach_batch_appends(spark, wh, tmp_path) as add:
        add((1, "a"))  # snapshot-1
        assert _all(spark) == [(1, "a")]
        assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', snapshot => 1)") == [(True,)]
        add((2, "b"))  # snapshot-2
        assert _all(spark) == [(1, "a"), (2, "b")]
        add((2, "b2"))  # snapshot-3
        assert _all(spark) == [(1, "a"), (2, "b2")]
        with pytest.raises(Exception, match="(?i)t_exception"):
            sql(spark, f"CALL sys.rollback(table => '{db}.T_exception', version =>  '2')")
        result = sql(spark, f"CALL sys.rollback(table => '{db}.T', version => '2')")
        assert result.columns == ["previous_snapshot_id", "current_snapshot_id"]
        assert [tuple(r) for r in result.collect()] == [(3, 2)]
        assert _all(spark) == [(1, "a"), (2, "b")]
        assert rows(spark, f"CALL sys.rollback(table => '{db}.T', version => 'test_tag')") == [(2, 1)]
        assert _all(spark) == [(1, "a")]


def test_rollback_to_tag_check(spark, wh):
    sql(spark, PK_TABLE.format(extra=", 'file.format'='orc'"))
    db = spark.catalog.currentDatabase()
    sql(spark, "insert into T select 1, 'a'")
    assert _all(spark) == [(1, "a")]
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => '20250122', snapshot => 1)") == [(True,)]
    expected = [(1, "a")]
    for i, b in ((2, "b"), (3, "c"), (4, "d")):
        sql(spark, f"insert into T select {i}, '{b}'")
        expected.append((i, b))
        assert _all(spark) == expected
    with pytest.raises(Exception, match="(?i)t_exception"):
        sql(spark, f"CALL sys.rollback(table => '{db}.T_exception', version => '4')")
    assert rows(spark, f"CALL sys.rollback(table => '{db}.T', version => '3')") == [(4, 3)]
    assert _all(spark) == [(1, "a"), (2, "b"), (3, "c")]
    # version / snapshot / tag: only one of them
    for args in ("version => '20250122', tag => '20250122'", "version => '20250122', snapshot => 1",
                 "tag => '20250122', snapshot => 1"):
        with pytest.raises(Exception, match="exactly one of"):
            sql(spark, f"CALL sys.rollback(table => '{db}.T', {args})")
    sql(spark, f"CALL sys.rollback(table => '{db}.T', snapshot => 2)")
    assert _all(spark) == [(1, "a"), (2, "b")]
    sql(spark, f"CALL sys.rollback(table => '{db}.T', tag => '20250122')")
    assert _all(spark) == [(1, "a")]


def test_rollback_to_timestamp(spark, wh, tmp_path):
    sql(spark, PK_TABLE.format(extra=""))
    db = spark.catalog.currentDatabase()
    with foreach_batch_appends(spark, wh, tmp_path) as add:
        add((1, "a"))
        assert _all(spark) == [(1, "a")]
        add((2, "b"))
        assert _all(spark) == [(1, "a"), (2, "b")]
        timestamp = int(time.time() * 1000)
        add((2, "b2"))
        assert _all(spark) == [(1, "a"), (2, "b2")]
        assert rows(spark, f"CALL sys.rollback_to_timestamp(table => '{db}.T', timestamp => {timestamp})") == \
            [(3, 2)]
        assert _all(spark) == [(1, "a"), (2, "b")]


def test_rollback_with_cache(spark, wh):
    sql(spark, "CREATE TABLE T (id INT)")
    sql(spark, "INSERT INTO T VALUES (1), (2), (3), (4)")
    sql(spark, "DELETE FROM T WHERE id = 1")
    sql(spark, "CALL sys.rollback(table => 'T', version => '1')")
    sql(spark, "DELETE FROM T WHERE id = 1")
    assert rows(spark, "SELECT * FROM T ORDER BY id") == [(2,), (3,), (4,)]
