"""Apache Paimon 1.4.1's `ExpireTagsProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its statements
and expected rows are the specification, run through paimon_ds.sql (`CALL sys.expire_tags`)."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from paimon_ds.snapshot.manager import tag_retention

from ._procs import load
from ._sql import rows, sql


def _five_snapshots(spark, wh: str):
    for i in range(1, 6):
        sql(spark, f"INSERT INTO T VALUES('{i}', '{i}')")
    sm = load(spark, wh).snapshot_manager
    assert sm.list_ids() == [1, 2, 3, 4, 5]
    return sm


def _tags(spark) -> list[tuple]:
    db = spark.catalog.currentDatabase()
    return rows(spark, f"select tag_name from global_temp.`{db}.T$tags` ORDER BY tag_name")


def _expire(spark, older_than: str = "") -> list[tuple]:
    db = spark.catalog.currentDatabase()
    return sorted(rows(spark, f"CALL sys.expire_tags(table => '{db}.T'{older_than})"))


@pytest.mark.parametrize("tag_time_expire_enabled", ["true", "false"])  # Paimon picks one at random
def test_expire_tags_that_reached_their_time_retained(spark, wh, tag_time_expire_enabled):
    sql(spark, "CREATE TABLE T (id STRING, name STRING) USING PAIMON "
               f"TBLPROPERTIES ('tag.time-expire-enabled' = '{tag_time_expire_enabled}')")
    db = spark.catalog.currentDatabase()
    _five_snapshots(spark, wh)
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-1', snapshot => 1)")
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-2', snapshot => 2, time_retained => '1h')")
    assert _expire(spark) == [("No expired tags.",)]
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-3', snapshot => 3, time_retained => '1s')")
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-4', snapshot => 4, time_retained => '1s')")
    assert rows(spark, f"select count(tag_name) from global_temp.`{db}.T$tags`") == [(4,)]
    time.sleep(2)
    assert _expire(spark) == [("tag-3",), ("tag-4",)]
    assert _tags(spark) == [("tag-1",), ("tag-2",)]


def test_expire_tags_created_before_older_than(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, name STRING) USING PAIMON")
    db = spark.catalog.currentDatabase()
    sm = _five_snapshots(spark, wh)
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-1', snapshot => 1)")
    for i in (2, 3, 4):
        sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-{i}', snapshot => {i}, "
                   "time_retained => '1d')")
    assert rows(spark, f"select count(tag_name) from global_temp.`{db}.T$tags`") == [(4,)]
    assert _expire(spark) == [("No expired tags.",)]

    def created(tag: str) -> str:  # java.sql.Timestamp(millis).toString of the tag's creation time
        when: dt.datetime = tag_retention(sm.tag(tag))[0]
        return when.replace(microsecond=when.microsecond // 1000 * 1000).isoformat(" ", "milliseconds")
    # tag-2's creation time: tag-1 (no creation time) expires by its file's time
    assert _expire(spark, f", older_than => '{created('tag-2')}'") == [("tag-1",)]
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-5', snapshot => 5, time_retained => '1s')")
    time.sleep(1)
    # tag-4's: tag-2 and tag-3 were created before, tag-5 reached its retention
    assert _expire(spark, f", older_than => '{created('tag-4')}'") == [("tag-2",), ("tag-3",), ("tag-5",)]
    assert _tags(spark) == [("tag-4",)]
