"""Apache Paimon 1.4.1's `PaimonTagDdlTestBase` (paimon-spark-ut/.../spark/sql/), ported: its statements and expected
rows are the specification. Paimon's tag DDL (`ALTER TABLE T CREATE / REPLACE / DELETE / RENAME TAG`, `SHOW TAGS
T`) is Paimon's own SQL extension, which Spark's parser does not know: paimon_ds.sql recognises it
(paimon_ds.spark.sql_tags); INSERT and SELECT go through plain spark.sql on the attached table. `T$tags` is read
through paimon_ds.sql as Paimon's catalog names it. `loadTable("T").tagManager()` is our Table's snapshot manager.

The last case sets `spark.paimon.tag.batch.customized-name` as session conf around each INSERT; here each INSERT
carries it as the statement's options (`INSERT INTO T WITH ('tag.batch.customized-name' = ...)`, paimon_ds.sql),
since a Python data source's write sees no session conf. Paimon runs that case with `write.use-v2-write` true and
false (two Java write paths); it runs once here."""

from __future__ import annotations

import pytest

from ._procs import load
from ._sql import rows, sql

PK_T = "CREATE TABLE T (id INT, name STRING) USING PAIMON TBLPROPERTIES ('primary-key'='id')"


def test_show_tags_syntax(spark, wh):
    sql(spark, PK_T)
    spark.sql("insert into T values(1, 'a')")
    for tag in ("2024-10-12", "2024-10-11", "2024-10-13"):
        sql(spark, f"alter table T create tag `{tag}`")
    assert rows(spark, "show tags T") == [("2024-10-11",), ("2024-10-12",), ("2024-10-13",)]


def test_alter_table_create_tag_syntax(spark, wh):
    sql(spark, PK_T)
    for v in ("(1, 'a')", "(2, 'b')", "(3, 'c')"):
        spark.sql(f"insert into T values{v}")
    assert load(spark, wh).snapshot_manager.list_ids() == [1, 2, 3]
    sql(spark, "alter table T create tag `tag-1`")
    sql(spark, "alter table T create tag `tag-2` RETAIN 2 DAYS")
    sql(spark, "alter table T create tag `tag-3` as of version 1")
    sql(spark, "alter table T create tag `tag-4` as of version 2 RETAIN 3 HOURS")
    assert sql(spark, "show tags T").count() == 4
    assert rows(spark, "select tag_name,snapshot_id,time_retained from `T$tags`") == [
        ("tag-1", 3, None), ("tag-2", 3, "PT48H"), ("tag-3", 1, None), ("tag-4", 2, "PT3H")]
    # not update tag with 'if not exists' syntax
    sql(spark, "alter table T create tag if not exists `tag-1` RETAIN 10 HOURS")
    assert rows(spark, "select tag_name,snapshot_id,time_retained from `T$tags` where tag_name='tag-1'") == [
        ("tag-1", 3, None)]


def test_alter_table_create_or_replace_tag_syntax(spark, wh):
    sql(spark, PK_T)
    spark.sql("insert into T values(1, 'a')")
    spark.sql("insert into T values(2, 'b')")
    assert load(spark, wh).snapshot_manager.list_ids() == [1, 2]
    sql(spark, "alter table T create tag `tag-1` as of version 1")
    sql(spark, "alter table T replace tag `tag-1` as of version 2 RETAIN 1 HOURS")
    assert rows(spark, "select tag_name,snapshot_id,time_retained from `T$tags`") == [("tag-1", 2, "PT1H")]
    # 'create or replace': tag-2 does not exist, it is created
    sql(spark, "alter table T create or replace tag `tag-2` as of version 1")
    tag2 = "select tag_name,snapshot_id,time_retained from `T$tags` where tag_name = 'tag-2'"
    assert rows(spark, tag2) == [("tag-2", 1, None)]
    # tag-2 exists, it is replaced
    sql(spark, "alter table T create or replace tag `tag-2` as of version 2 RETAIN 1 HOURS")
    assert rows(spark, tag2) == [("tag-2", 2, "PT1H")]


def test_alter_table_create_or_replace_tag_twice(spark, wh):
    sql(spark, PK_T)
    spark.sql("INSERT INTO T VALUES (1, 'a')")
    sql(spark, "ALTER TABLE  T CREATE TAG `tag-1`")
    assert rows(spark, "SHOW TAGS T") == [("tag-1",)]
    with pytest.raises(Exception, match="Tag tag-1 is exists."):
        sql(spark, "ALTER TABLE T CREATE TAG `tag-1`")
    sql(spark, "ALTER TABLE T CREATE TAG IF NOT EXISTS `tag-1`")
    sql(spark, "ALTER TABLE T CREATE TAG IF NOT EXISTS `tag-1` AS OF VERSION 1")
    sql(spark, "ALTER TABLE T CREATE TAG IF NOT EXISTS `tag-1` AS OF VERSION 1 RETAIN 1 HOURS")
    sql(spark, "ALTER TABLE T CREATE OR REPLACE TAG `tag-1`")
    sql(spark, "ALTER TABLE T CREATE OR REPLACE TAG `tag-1` AS OF VERSION 1")
    sql(spark, "ALTER TABLE T CREATE OR REPLACE TAG `tag-1` AS OF VERSION 1 RETAIN 1 HOURS")
    assert rows(spark, "select tag_name,snapshot_id,time_retained from `T$tags`") == [("tag-1", 1, "PT1H")]


def test_alter_table_delete_tag_syntax(spark, wh):
    sql(spark, PK_T)
    spark.sql("insert into T values(1, 'a')")
    assert load(spark, wh).snapshot_manager.list_ids() == [1]
    for tag in ("2024-10-12", "2024-10-15", "2024-10-13", "2024-10-14"):
        sql(spark, f"alter table T create tag `{tag}`")
    assert rows(spark, "show tags T") == [("2024-10-12",), ("2024-10-13",), ("2024-10-14",), ("2024-10-15",)]
    sql(spark, "alter table T delete tag `2024-10-12`")
    assert rows(spark, "show tags T") == [("2024-10-13",), ("2024-10-14",), ("2024-10-15",)]
    sql(spark, "alter table T delete tag `2024-10-13, 2024-10-14`")
    assert rows(spark, "show tags T") == [("2024-10-15",)]
    sql(spark, "alter table T delete tag if EXISTS `2024-10-18`")
    assert rows(spark, "show tags T") == [("2024-10-15",)]


def test_alter_table_rename_tag_syntax(spark, wh):
    sql(spark, PK_T)
    spark.sql("insert into T values(1, 'a')")
    assert load(spark, wh).snapshot_manager.list_ids() == [1]
    sql(spark, "alter table T create tag `tag-1`")
    assert rows(spark, "show tags T") == [("tag-1",)]
    sql(spark, "alter table T rename tag `tag-1` to `tag-2`")
    assert rows(spark, "show tags T") == [("tag-2",)]


def test_tag_creation_batch_creation_mode(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, name STRING) USING PAIMON TBLPROPERTIES ('file.format' = 'avro', "
               "'tag.automatic-creation'='batch', 'tag.batch.customized-name'  = 'haha')")
    spark.sql("insert into T values(1, 'a')")
    assert load(spark, wh).snapshot_manager.tag_names() == ["haha"]
    spark.sql("insert into T values(1, 'a')")
    # tag overwrite
    assert load(spark, wh).snapshot_manager.tag_names() == ["haha"]


def test_tag_expiration_batch_write_expire_tag(spark, wh):
    sql(spark, "CREATE TABLE T (id INT, name STRING) USING PAIMON TBLPROPERTIES ('file.format' = 'avro', "
               "'tag.automatic-creation'='batch', 'tag.num-retained-max'='1')")
    sql(spark, "insert into T WITH ('tag.batch.customized-name' = 'batch-tag-1') values(1, 'a')")
    assert load(spark, wh).snapshot_manager.tag_names() == ["batch-tag-1"]
    sql(spark, "insert into T WITH ('tag.batch.customized-name' = 'batch-tag-2') values(2, 'b')")
    assert load(spark, wh).snapshot_manager.tag_names() == ["batch-tag-2"]


def test_replace_tag_procedure_updates_tag_meta(spark, wh):
    """Apache Paimon 1.4.1's `ReplaceTagProcedureTest` (spark/procedure/): `CALL paimon.sys.replace_tag`, with the
    catalog name Paimon's suites configure (paimon_ds.sql takes `<catalog>.sys.<procedure>` as `sys.<procedure>`)."""
    db = spark.catalog.currentDatabase()
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")
    spark.sql("insert into T values(1, 'a')")
    spark.sql("insert into T values(2, 'b')")
    assert load(spark, wh).snapshot_manager.list_ids() == [1, 2]
    with pytest.raises(Exception, match="Tag 'test_tag' doesn't exist."):
        sql(spark, f"CALL paimon.sys.replace_tag(table => '{db}.T', tag => 'test_tag')")
    sql(spark, f"CALL paimon.sys.create_tag(table => '{db}.T', tag => 'test_tag')")
    tags = "select tag_name,snapshot_id,time_retained from `T$tags`"
    assert rows(spark, tags) == [("test_tag", 2, None)]
    assert rows(spark, f"CALL paimon.sys.replace_tag(table => '{db}.T', tag => 'test_tag', time_retained => '1 d')") \
        == [(True,)]
    assert rows(spark, tags) == [("test_tag", 2, "PT24H")]
    sql(spark, f"CALL paimon.sys.replace_tag(table => '{db}.T', tag => 'test_tag', snapshot => 1, "
               "time_retained => '2 d')")
    assert rows(spark, tags) == [("test_tag", 1, "PT48H")]
