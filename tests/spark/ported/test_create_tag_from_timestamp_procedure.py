"""Apache Paimon 1.4.1's `CreateTagFromTimestampProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its
statements and expected rows are the specification, run through paimon_ds.sql
(`CALL sys.create_tag_from_timestamp`, result `(tagName, snapshot, commit_time, watermark)`).

Paimon writes the commits by a `foreachBatch` stream of a MemoryStream, 0.5 s apart; here they are INSERTs, as
far apart (the foreachBatch path is the Rollback and tag suites')."""

from __future__ import annotations

import time

import pytest

from paimon_ds.snapshot.manager import SnapshotNotFound

from ._procs import load
from ._sql import rows, sql

PK_TABLE = "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')"


def _commits(spark, wh: str, n: int):
    for i in range(1, n + 1):
        sql(spark, f"INSERT INTO T VALUES ({i}, 'a')")
        time.sleep(0.5)
    return load(spark, wh).snapshot_manager


def _from_timestamp(spark, tag: str, timestamp: int) -> list[tuple]:
    db = spark.catalog.currentDatabase()
    return rows(spark, f"CALL sys.create_tag_from_timestamp(table => '{db}.T', tag => '{tag}', "
                       f"timestamp => {timestamp})")


def test_create_tags_from_snapshots_commit_time(spark, wh):
    sql(spark, PK_TABLE)
    sm = _commits(spark, wh, 4)
    earliest, commit3, commit4 = sm.snapshot(1).time_millis, sm.snapshot(3).time_millis, sm.snapshot(4).time_millis
    result = sql(spark, f"CALL sys.create_tag_from_timestamp(table => '{spark.catalog.currentDatabase()}.T', "
                        f"tag => 'test_tag', timestamp => {earliest - 1})")
    assert result.columns == ["tagName", "snapshot", "commit_time", "watermark"]
    assert [tuple(r) for r in result.collect()] == [("test_tag", 1, earliest, "null")]
    assert _from_timestamp(spark, "test_tag2", commit3) == [("test_tag2", 3, commit3, "null")]
    assert _from_timestamp(spark, "test_tag3", commit3 + 1) == [("test_tag3", 4, commit4, "null")]
    with pytest.raises(SnapshotNotFound):
        _from_timestamp(spark, "test_tag3", 2**63 - 1)


def test_create_tags_from_tags_commit_time(spark, wh):
    sql(spark, PK_TABLE)
    db = spark.catalog.currentDatabase()
    sm = _commits(spark, wh, 2)
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', snapshot => 1)") == [(True,)]
    latest, tagged = sm.latest().time_millis, sm.tag("test_tag").time_millis
    assert latest > tagged
    assert rows(spark, f"CALL sys.expire_snapshots(table => '{db}.T', retain_max => 1, retain_min => 1)") == [(1,)]
    assert _from_timestamp(spark, "test_tag1", tagged - 1) == [("test_tag1", 1, tagged, "null")]
    assert _from_timestamp(spark, "test_tag2", tagged + 1) == [("test_tag2", 2, latest, "null")]
