"""Apache Paimon 1.4.1's `PurgeFilesProcedureTest`, `CompactManifestProcedureTest` and `FastForwardProcedureTest`
(paimon-spark-ut/.../spark/procedure/), ported: their statements and expected rows are the specification, run
through paimon_ds.sql (`CALL sys.purge_files / compact_manifest / fast_forward`)."""

from __future__ import annotations

from ._sql import rows, sql


def test_purge_files(spark, wh):
    """PurgeFilesProcedureTest: the table is empty after it, with one snapshot left (Paimon 1.4's purgeFiles
    truncates, then expires all snapshots but the latest and cleans orphan files)."""
    sql(spark, "CREATE TABLE T (id STRING, name STRING) USING PAIMON")
    db = spark.catalog.currentDatabase()
    sql(spark, "insert into T select '1', 'aa'")
    assert rows(spark, f"select * from {db}.T") == [("1", "aa")]
    assert rows(spark, f"CALL sys.purge_files(table => '{db}.T')") == [("Success",)]
    assert rows(spark, f"select * from {db}.T") == []
    assert len(rows(spark, f"select snapshot_id from global_temp.`{db}.T$snapshots`")) == 1
    sql(spark, "insert into T select '2', 'aa'")
    assert rows(spark, f"select * from {db}.T") == [("2", "aa")]


def test_compact_manifest(spark, wh):
    """CompactManifestProcedureTest (its 10 s sleep before reading `T$manifests` is left out: nothing here is
    asynchronous)."""
    sql(spark, "CREATE TABLE T (id INT, value STRING, dt STRING, hh INT) "
               "TBLPROPERTIES ('bucket'='-1', 'write-only'='true', 'compaction.min.file-num'='2') "
               "PARTITIONED BY (dt, hh)")
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    for _ in range(3):
        sql(spark, "INSERT OVERWRITE T VALUES (5, '5', '2024-01-02', 0), (6, '6', '2024-01-02', 1)")
    manifests = f"SELECT sum(num_deleted_files) FROM global_temp.`{db}.T$manifests`"
    assert rows(spark, manifests) == [(6,)]
    sql(spark, "CALL sys.compact_manifest(table => 'T')")
    assert rows(spark, manifests) == [(0,)]


def test_fast_forward(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, name STRING) USING PAIMON TBLPROPERTIES ('primary-key'='id')")
    db = spark.catalog.currentDatabase()
    for i, name in enumerate("abcd", 1):
        sql(spark, f"INSERT INTO T VALUES ('{i}', '{name}')")
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', snapshot => 2)") == [(True,)]
    assert rows(spark, f"CALL sys.create_branch(table => '{db}.T', branch => 'test_branch', tag => 'test_tag')") \
        == [(True,)]
    assert rows(spark, f"CALL sys.fast_forward(table => '{db}.T', branch => 'test_branch')") == [(True,)]
    sql(spark, "INSERT INTO T VALUES ('5', 'e')")
    sql(spark, "INSERT INTO T VALUES ('6', 'f')")
    assert sorted(rows(spark, "SELECT * FROM T")) == [("1", "a"), ("2", "b"), ("5", "e"), ("6", "f")]
    assert rows(spark, f"CALL sys.fast_forward(table => '{db}.T', branch => 'test_branch')") == [(True,)]
    assert sorted(rows(spark, "SELECT * FROM T")) == [("1", "a"), ("2", "b")]
