"""Apache Paimon 1.4.1's `BranchProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its statements and
expected rows are the specification, run through paimon_ds.sql (`CALL sys.create_branch / delete_branch /
rename_branch`, procedures on ``db.`T$branch_b` ``).

A branch as a table name in a query or an INSERT (``SELECT * FROM `T$branch_b` ``, ``INSERT INTO `T$branch_b` ``)
is not routable: Spark resolves the name in its session catalog, where paimon_ds attaches each table once
(not each branch); the same statements run with the branch as an option, ``T WITH ('branch' = 'b')`` (and
`spark.read...option("branch", "b")`, which the case also uses). The case's three commits are INSERTs here (its
foreachBatch stream is the Rollback and tag suites')."""

from __future__ import annotations

import pytest

from paimon_ds.options.registry import OptionError

from ._procs import load
from ._sql import rows, sql


def _branches(spark, wh: str) -> list[str]:
    return load(spark, wh).branch_manager().branches()


def _on(spark, branch: str, order: str = " ORDER BY a") -> list[tuple]:
    return rows(spark, f"SELECT * FROM T WITH ('branch' = '{branch}'){order}")


def test_create_query_write_and_delete_branch(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")
    db = spark.catalog.currentDatabase()
    for data, expected in (("(1, 'a')", [(1, "a")]), ("(2, 'b')", [(1, "a"), (2, "b")]),
                           ("(2, 'b2')", [(1, "a"), (2, "b2")])):
        sql(spark, f"INSERT INTO T VALUES {data}")
        assert rows(spark, "SELECT * FROM T ORDER BY a") == expected
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'test_tag', snapshot => 2)") == [(True,)]
    assert rows(spark, f"SELECT tag_name FROM global_temp.`{db}.T$tags`") == [("test_tag",)]
    assert rows(spark, f"CALL sys.create_branch(table => '{db}.T', branch => 'test_branch', tag => 'test_tag')") \
        == [(True,)]
    assert "test_branch" in _branches(spark, wh)
    assert _on(spark, "test_branch") == [(1, "a"), (2, "b")]
    assert [tuple(r) for r in spark.read.format("paimon").option("branch", "test_branch").table("T")
            .orderBy("a").collect()] == [(1, "a"), (2, "b")]
    sql(spark, "INSERT INTO T WITH ('branch' = 'test_branch') VALUES (3, 'c')")
    assert _on(spark, "test_branch") == [(1, "a"), (2, "b"), (3, "c")]
    assert rows(spark, f"CALL sys.create_tag(table => '{db}.`T$branch_test_branch`', tag => 'test_tag2', "
                       "snapshot => 3)") == [(True,)]
    assert rows(spark, f"CALL sys.create_branch(table => '{db}.`T$branch_test_branch`', branch => 'test_branch2', "
                       "tag => 'test_tag2')") == [(True,)]
    assert _on(spark, "test_branch2") == [(1, "a"), (2, "b"), (3, "c")]
    assert rows(spark, f"CALL sys.create_branch(table => '{db}.T', branch => 'empty_branch')") == [(True,)]
    assert "empty_branch" in _branches(spark, wh)
    assert _on(spark, "empty_branch") == []
    assert rows(spark, f"CALL sys.delete_branch(table => '{db}.T', branch => 'test_branch')") == [(True,)]
    assert "test_branch" not in _branches(spark, wh)
    with pytest.raises(Exception, match="test_branch"):
        _on(spark, "test_branch")


def test_read_with_scan_fallback_branch(spark, wh):
    """One step differs: the case first sets the properties `k1` and `k2` (two schema changes before the branch),
    which paimon_ds refuses (a table property must be a Paimon option it knows); two known options stand for
    them."""
    sql(spark, "CREATE TABLE T (dt STRING NOT NULL, name STRING NOT NULL, amount BIGINT) PARTITIONED BY (dt)")
    with pytest.raises(OptionError, match="unknown option 'k1'"):
        sql(spark, "ALTER TABLE T SET TBLPROPERTIES ('k1' = 'v1')")
    sql(spark, "ALTER TABLE T SET TBLPROPERTIES ('snapshot.num-retained.min' = '10')")
    sql(spark, "ALTER TABLE T SET TBLPROPERTIES ('snapshot.num-retained.max' = '100')")
    sql(spark, f"CALL sys.create_branch('{spark.catalog.currentDatabase()}.T', 'test')")
    sql(spark, "ALTER TABLE T SET TBLPROPERTIES ('scan.fallback-branch' = 'test')")
    sql(spark, "INSERT INTO T WITH ('branch' = 'test') VALUES ('20240725', 'apple', 4), ('20240725', 'peach', 10), "
               "('20240726', 'cherry', 3), ('20240726', 'pear', 6)")
    sql(spark, "INSERT INTO T VALUES ('20240725', 'apple', 5), ('20240725', 'banana', 7)")
    assert rows(spark, "SELECT * FROM T ORDER BY amount") == [
        ("20240726", "cherry", 3), ("20240725", "apple", 5), ("20240726", "pear", 6), ("20240725", "banana", 7)]
    sql(spark, "ALTER TABLE T UNSET TBLPROPERTIES ('scan.fallback-branch')")
    assert rows(spark, "SELECT * FROM T ORDER BY amount") == [("20240725", "apple", 5), ("20240725", "banana", 7)]


def test_rename_branch(spark, wh):
    sql(spark, "CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3')")
    db = spark.catalog.currentDatabase()
    sql(spark, "INSERT INTO T VALUES (1, 'a'), (2, 'b')")
    sql(spark, f"CALL sys.create_tag(table => '{db}.T', tag => 'tag1', snapshot => 1)")
    sql(spark, f"CALL sys.create_branch(table => '{db}.T', branch => 'branch1', tag => 'tag1')")
    assert _branches(spark, wh) == ["branch1"]
    assert rows(spark, f"CALL sys.rename_branch(table => '{db}.T', from_branch => 'branch1', to_branch => 'branch2')") \
        == [(True,)]
    assert _branches(spark, wh) == ["branch2"]
    assert _on(spark, "branch2") == [(1, "a"), (2, "b")]
    with pytest.raises(Exception, match="nonexistent"):
        sql(spark, f"CALL sys.rename_branch(table => '{db}.T', from_branch => 'nonexistent', "
                   "to_branch => 'new_branch')")
    sql(spark, f"CALL sys.create_branch(table => '{db}.T', branch => 'branch3')")
    with pytest.raises(Exception, match="branch3"):
        sql(spark, f"CALL sys.rename_branch(table => '{db}.T', from_branch => 'branch2', to_branch => 'branch3')")
