"""Apache Paimon 1.4.1's `PaimonOptionTest` and `PaimonConfigCheckTest` (paimon-spark-ut/src/test/scala/org/apache/
paimon/spark/sql/PaimonOptionTest.scala), ported: their statements, options and expected rows are the specification.

Most of the suite sets Paimon options as Spark SQL conf (`spark.paimon.<key>`, `spark.paimon.<catalog>.<db>.<table>.
<key>`), which Paimon's Java connector reads from the session. A Python data source runs its planning in a Python
worker that cannot read the session's conf, so paimon_ds never sees them: the cases that create tables under such a
conf hold (nothing leaks into the table), the cases that read under one are listed as not routable, and their reads
are ported with the same options given to the read (`.option(...)`), which is what works instead."""

from __future__ import annotations

import re

import pytest

from paimon_ds import Table

from ._sql import sql
from ._stream import answer, location

CONF_REASON = (
    "not routable: the case reads under Spark SQL conf `{conf}`, Paimon options its Java connector takes from the "
    "session; a Python data source plans in a Python worker without the session's conf, so paimon_ds cannot see "
    "them. What works instead: the same option on the read, `spark.read.format(\"paimon\").option(\"scan.snapshot-id\","
    " \"1\")` (test_query_table_with_read_options), or `SELECT ... VERSION AS OF 1` through paimon_ds.sql.")


@pytest.fixture
def conf(spark):
    """withSparkSQLConf: set session conf for one case, restored after."""
    previous: dict[str, str | None] = {}

    def set_conf(**entries: str) -> None:
        for key, value in entries.items():
            previous.setdefault(key, spark.conf.get(key, None))
            spark.conf.set(key, value)

    yield set_conf
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_create_table_with_sql_conf(spark, wh, conf):
    """Paimon Option: create table with sql conf: `spark.paimon.scan.snapshot-id` is not stored in the schema."""
    conf(**{"spark.paimon.scan.snapshot-id": "2"})
    sql(spark, "CREATE TABLE T (id INT)")
    assert "scan.snapshot-id" not in Table.load(location(spark, wh, "T")).table_schema.options


def test_create_table_by_dataframe_with_sql_conf(spark, wh, conf):
    """Paimon Option: create table by dataframe with sql conf. `saveAsTable("T")` of a table that does not exist yet is
    not routable (Spark creates a session table for the generic `paimon` source and gives it no path, so the write
    cannot know where the table goes; saveAsTable works on attached tables); the DataFrame becomes the table through
    `CREATE TABLE T AS SELECT` in paimon_ds.sql instead, and nothing of the conf is stored."""
    conf(**{"spark.paimon.scan.snapshot-id": "2"})
    spark.createDataFrame([(1, "x1"), (2, "x2")], "a BIGINT, b STRING").createOrReplaceTempView("source")
    sql(spark, "CREATE TABLE T AS SELECT * FROM source")
    assert "scan.snapshot-id" not in Table.load(location(spark, wh, "T")).table_schema.options
    assert answer(spark, "SELECT * FROM T") == [(1, "x1"), (2, "x2")]


@pytest.mark.skip(reason="paimon_ds does not write Iceberg metadata: `metadata.iceberg.storage` other than "
                         "'disabled' is refused (a table that asks for it is refused, not written without it). "
                         "Not a routing limit; the feature is not implemented.")
def test_create_table_with_iceberg_compatibility_options_via_dataframe_writer():
    """Paimon Option: create table with Iceberg compatibility options via DataFrame writer."""


def _two_snapshots(spark, wh, name: str = "T") -> str:
    sql(spark, f"CREATE TABLE {name} (id INT)")
    spark.sql(f"INSERT INTO {name} VALUES 1")
    spark.sql(f"INSERT INTO {name} VALUES 2")
    assert answer(spark, f"SELECT * FROM {name} ORDER BY id") == [(1,), (2,)]
    return location(spark, wh, name)


@pytest.mark.skip(reason=CONF_REASON.format(conf="spark.paimon.scan.snapshot-id / spark.paimon.bucket"))
def test_query_table_with_sql_conf():
    """Paimon Option: query table with sql conf."""


def test_query_table_with_read_options(spark, wh):
    """The reads of `query table with sql conf`, with the options on the read: a mutable option (scan.snapshot-id)
    applies; an immutable one (bucket, which only the table holds) is refused, as Paimon refuses it
    (UnsupportedOperationException: "Cannot change bucket number through dynamic options")."""
    path = _two_snapshots(spark, wh)
    assert [tuple(r) for r in spark.read.format("paimon").option("scan.snapshot-id", "1").load(path).collect()] \
        == [(1,)]
    assert [tuple(r) for r in spark.read.format("paimon").option("scan.snapshot-id", "1").table("T").collect()] \
        == [(1,)]
    with pytest.raises(Exception, match="option bucket=1 differs from the table.s bucket -1"):
        spark.read.format("paimon").option("bucket", "1").load(path).collect()
    with pytest.raises(Exception, match="option bucket=1 differs from the table.s bucket -1"):
        spark.read.format("paimon").option("bucket", "1").table("T").collect()
    # PaimonSourceTest's `with error options`, on a batch read: the two start keys together are refused
    with pytest.raises(Exception, match=re.escape("[scan.snapshot-id] must be null when you set")):
        spark.read.format("paimon").options(**{"scan.snapshot-id": "1", "scan.timestamp-millis": "1"}) \
            .load(path).collect()


@pytest.mark.skip(reason=CONF_REASON.format(conf="spark.paimon.*.*.T.scan.snapshot-id"))
def test_query_one_table_with_sql_conf_and_table_options():
    """Paimon Table Options: query one table with sql conf and table options."""


@pytest.mark.skip(reason=CONF_REASON.format(conf="spark.paimon.*.*.T1.scan.snapshot-id"))
def test_query_multiple_tables_with_sql_conf_and_table_options():
    """Paimon Table Options: query multiple tables with sql conf and table options."""


@pytest.mark.skip(reason="not applicable: `spark.paimon.requiredSparkConfsCheck.enabled` makes Paimon's SparkCatalog "
                         "(spark.sql.catalog.paimon) check the session's extensions on `USE paimon`; paimon_ds has no "
                         "Spark catalog plugin (a Python package cannot be one): its tables are attached to the "
                         "session catalog by paimon_ds.attach, which needs no conf.")
def test_required_confs_check():
    """PaimonConfigCheckTest: Paimon Option: required confs check."""
