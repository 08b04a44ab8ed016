"""Apache Paimon 1.4.1's `CreateAndDeleteTagProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its
statements and expected rows are the specification, run through paimon_ds.sql (`CALL sys.create_tag / delete_tag /
rename_tag`); `T$tags` is read as paimon_ds serves it (``global_temp.`db.T$tags` ``)."""

from __future__ import annotations

import pytest

from ._procs import foreach_batch_appends
from ._sql import rows, sql

PK_TABLE = "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')"


def _tags(spark, db: str) -> list[tuple]:
    return rows(spark, f"SELECT tag_name FROM global_temp.`{db}.T$tags` ORDER BY tag_name")


def test_create_and_delete_tag(spark, wh, tmp_path):
    sql(spark, PK_TABLE)
    db = spark.catalog.currentDatabase()
    with foreach_batch_appends(spark, wh, tmp_path) as add:
        for data, expected in (((1, "a"), [(1, "a")]), ((2, "b"), [(1, "a"), (2, "b")]),
                               ((2, "b2"), [(1, "a"), (2, "b2")])):
            add(data)
            assert rows(spark, "SELECT * FROM T ORDER BY a") == expected
    call = f"CALL sys.{{}}(table => '{db}.T', {{}})"
    assert rows(spark, call.format("create_tag", "tag => 'test_tag', time_retained => '5 d', snapshot => 2")) == \
        [(True,)]
    assert _tags(spark, db) == [("test_tag",)]
    assert rows(spark, f"SELECT snapshot_id, time_retained FROM global_temp.`{db}.T$tags`") == [(2, "PT120H")]
    assert rows(spark, call.format("delete_tag", "tag => 'test_tag'")) == [(True,)]
    assert _tags(spark, db) == []
    assert rows(spark, call.format("create_tag", "tag => 'test_latestSnapshot_tag'")) == [(True,)]
    assert _tags(spark, db) == [("test_latestSnapshot_tag",)]
    assert rows(spark, call.format("delete_tag", "tag => 'test_latestSnapshot_tag'")) == [(True,)]
    assert _tags(spark, db) == []
    assert rows(spark, call.format("create_tag", "tag => 'test_tag_1', snapshot => 1")) == [(True,)]
    assert rows(spark, call.format("create_tag", "tag => 'test_tag_2', snapshot => 2")) == [(True,)]
    assert _tags(spark, db) == [("test_tag_1",), ("test_tag_2",)]
    assert rows(spark, call.format("rename_tag", "tag => 'test_tag_1', target_tag => 'test_tag_3'")) == [(True,)]
    assert _tags(spark, db) == [("test_tag_2",), ("test_tag_3",)]
    assert rows(spark, call.format("delete_tag", "tag => 'test_tag_2,test_tag_3'")) == [(True,)]
    assert _tags(spark, db) == []


def test_create_same_tag_with_same_snapshot(spark, wh):
    """The case's one snapshot is written by INSERT here (its foreachBatch stream is the case above's)."""
    sql(spark, PK_TABLE)
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO T VALUES (1, 'a')")
    assert rows(spark, "SELECT * FROM T ORDER BY a") == [(1, "a")]
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', snapshot => 1)") == [(True,)]
    assert rows(spark, f"SELECT count(*) FROM global_temp.`{db}.T$tags` where tag_name = 'test_tag'") == [(1,)]
    with pytest.raises(ValueError, match="already exists"):
        sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', time_retained => '5 d', "
                   "snapshot => 1)")


def test_delete_tag_not_failed_if_tag_not_exists(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, name STRING) USING PAIMON")
    db = spark.catalog.currentDatabase()
    assert rows(spark, f"CALL sys.delete_tag(table => '{db}.T', tag => 'test_tag')") == [(True,)]


def test_delete_multiple_tags(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, name STRING) USING PAIMON")
    db = spark.catalog.currentDatabase()
    sql(spark, "insert into T values (1, 'a')")
    for i in range(1, 5):
        sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag-{i}')")
    assert rows(spark, f"SELECT count(*) FROM global_temp.`{db}.T$tags`") == [(4,)]
    assert rows(spark, f"CALL sys.delete_tag(table => '{db}.T', tag => 'tag-1,tag-2')") == [(True,)]
    assert _tags(spark, db) == [("tag-3",), ("tag-4",)]
    assert rows(spark, f"CALL sys.delete_tag(table => '{db}.T', tag => 'tag-3, tag-4')") == [(True,)]
    assert _tags(spark, db) == []
