"""Apache Paimon 1.4.1's `SpecialCharacterPathTest` (paimon-spark-ut/.../spark/sql/), ported: a warehouse whose
directory name holds `%3A` (`<tmp>/22%3A45%3A30`), attached to the shared session with a database `test` as in
Paimon; statements through paimon_ds.sql. Paimon's `__paimon_file_path` metadata column is read from the table's
`$files` (the same paths); its two orphan files written 2 s apart get their modification times set instead
(the rule needs only the two times); the session time zone is America/Los_Angeles, as in Spark's own tests (the
partition directory's name is the UTC instant)."""

from __future__ import annotations

import datetime as dt
import os

import pytest

import paimon_ds

from ._sql import rows, sql
from .test_insert_overwrite import session_conf


@pytest.fixture
def special_wh(spark, tmp_path):
    warehouse = str(tmp_path / "22%3A45%3A30")
    paimon_ds.attach(spark, warehouse)
    sql(spark, "CREATE DATABASE IF NOT EXISTS test")
    previous = spark.catalog.currentDatabase()
    spark.catalog.setCurrentDatabase("test")
    with session_conf(spark, **{"spark.sql.session.timeZone": "America/Los_Angeles"}):
        yield warehouse
    sql(spark, "DROP DATABASE IF EXISTS test CASCADE")
    spark.catalog.setCurrentDatabase(previous)


def _table(warehouse: str, name: str) -> paimon_ds.Table:
    return paimon_ds.Catalog(warehouse).get_table(f"test.{name}")


def _file_paths(warehouse: str, name: str) -> list[str]:
    return _table(warehouse, name).inspect.files().column("file_path").to_pylist()


def test_delete_with_timestamp_partition_column(spark, special_wh):
    """Paimon runs it with `spark.paimon.write.use-v2-write` true and false (a write path of its Java connector);
    paimon_ds has one write path, so the loop runs the deletion-vector settings under both values."""
    for use_v2 in ("true", "false"):
        for dv in ("true", "false"):
            with session_conf(spark, **{"spark.paimon.write.use-v2-write": use_v2}):
                sql(spark, f"CREATE TABLE t (id INT, dt TIMESTAMP) PARTITIONED BY (dt) "
                           f"TBLPROPERTIES ('deletion-vectors.enabled' = '{dv}')")
                sql(spark, "INSERT INTO t SELECT id, CAST('2024-06-02 15:45:30' AS TIMESTAMP) FROM RANGE(0, 1000)")
                assert rows(spark, "SELECT count(*) FROM t") == [(1000,)]
                assert rows(spark, "SELECT sum(id) FROM t") == [(499500,)]
                assert os.path.isdir(os.path.join(special_wh, "test.db/t/dt=2024-06-02T22%3A45%3A30/bucket-0"))
                path = _file_paths(special_wh, "t")[0]
                assert os.path.exists(path.removeprefix("file:"))
                sql(spark, "DELETE FROM t WHERE id = 100")
                assert rows(spark, "SELECT count(*) FROM t") == [(999,)]
                assert rows(spark, "SELECT sum(id) FROM t") == [(499400,)]
                sql(spark, "DROP TABLE t")


def test_remove_orphan_files(spark, special_wh):
    sql(spark, "CREATE TABLE t (id STRING, name STRING)")
    sql(spark, "INSERT INTO t VALUES ('1', 'a'), ('2', 'b')")
    root = _table(special_wh, "t").path.removeprefix("file:")
    orphans = [os.path.join(root, "bucket-0/orphan_file1"), os.path.join(root, "bucket-0/orphan_file2")]
    for path, text in zip(orphans, "ab"):
        with open(path, "w") as f:
            f.write(text)
    second = os.path.getmtime(orphans[1])
    os.utime(orphans[0], (second - 2, second - 2))  # written 2 s before the second, as Paimon's sleep makes it
    older_than = dt.datetime.fromtimestamp(second - 1).isoformat(" ", "milliseconds")
    assert rows(spark, f"CALL sys.remove_orphan_files(table => 't', older_than => '{older_than}')") == [(1, 1)]


def test_data_file_external_paths(spark, special_wh, tmp_path):
    external = f"file://{tmp_path}/22%3A45%3A3123456"
    sql(spark, "CREATE TABLE t (id INT, v INT, dt TIMESTAMP) TBLPROPERTIES ('bucket-key' = 'id', 'bucket' = '1', "
               f"'data-file.external-paths' = '{external}', 'data-file.external-paths.strategy' = 'round-robin') "
               "PARTITIONED BY (dt)")
    sql(spark, "INSERT INTO t SELECT /*+ REPARTITION(1) */ id, id, CAST('2024-06-02 15:45:30' AS TIMESTAMP) "
               "FROM range (1, 50000)")
    paths = [p for p in _file_paths(special_wh, "t") if "123456" in p]
    assert os.path.exists(paths[0].removeprefix("file:").removeprefix("//"))
    assert os.path.exists(external.removeprefix("file://"))
    sql(spark, "DELETE FROM t WHERE id >= 111 and id <= 444")
    assert rows(spark, "SELECT count(*) FROM t") == [(49665,)]
    assert rows(spark, "SELECT sum(v) FROM t") == [(1249882315,)]
    sql(spark, "UPDATE t SET v = v + 1 WHERE id >= 555 and id <= 666")
    assert rows(spark, "SELECT count(*) FROM t") == [(49665,)]
    assert rows(spark, "SELECT sum(v) FROM t") == [(1249882427,)]
    sql(spark, "UPDATE t SET v = v + 1 WHERE id >= 600 and id <= 800")
    assert rows(spark, "SELECT count(*) FROM t") == [(49665,)]
    assert rows(spark, "SELECT sum(v) FROM t") == [(1249882628,)]
