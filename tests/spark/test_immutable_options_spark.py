"""Immutable options through Spark's entry points: a read or write option, or `INSERT ... WITH (...)`, whose value
differs from the table's is refused naming both values, and leaves every file of the table as it was (Java Paimon:
AbstractFileStoreTable.copy -> checkImmutability). The data-loss case of issue 31 was `df.write.format("paimon")
.option("merge-engine", "first-row")` on a deduplicate table: accepted, and the new rows were compacted away."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds import Catalog, Table

from ._helpers import files_under, load, save

SCHEMA = "id BIGINT, v STRING, dt STRING"
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"], "dt": ["d1", "d1", "d2"]})
NEW = [(1, "A", "d1"), (2, "B", "d1")]
MESSAGE = "option merge-engine='first-row' differs from the table's merge-engine 'deduplicate'"


@pytest.fixture(scope="module")
def warehouse(spark, tmp_path_factory) -> str:
    """One warehouse for the module: db.t, a deduplicate primary-key table (merge-engine unset), attached."""
    root = str(tmp_path_factory.mktemp("immutable") / "wh")
    catalog = Catalog(root)
    catalog.create_database("imm")
    catalog.create_table("imm.t", ROWS.schema, partition_keys=["dt"], primary_keys=["id", "dt"],
                         options={"bucket": "2"})
    catalog.get_table("imm.t").append(ROWS)
    paimon_ds.attach(spark, root)
    return root


@pytest.fixture
def table(warehouse) -> str:
    return Catalog(warehouse).table_path("imm.t")


def rows(path: str) -> list[tuple]:
    return sorted((r["id"], r["v"], r["dt"]) for r in Table.load(path).to_arrow().to_pylist())


def refused(table: str, action, message: str = MESSAGE) -> None:
    """``action`` raises naming the option and both values; no file of the table changed."""
    before = files_under(table), rows(table)
    with pytest.raises(Exception, match=message):
        action()
    assert (files_under(table), rows(table)) == before


def test_df_write_format_refuses_a_changed_merge_engine(spark, table):
    df = spark.createDataFrame(NEW, SCHEMA)
    refused(table, lambda: save(df, table, **{"merge-engine": "first-row"}))
    refused(table, lambda: save(df, table, "overwrite", **{"merge-engine": "first-row"}))
    refused(table, lambda: save(df, table, **{"sequence.field": "v"}),
            "option sequence.field='v' differs from the table's sequence.field \\(unset\\)")


def test_spark_read_refuses_it(spark, table):
    refused(table, lambda: load(spark, table, **{"merge-engine": "first-row"}).collect())
    refused(table, lambda: paimon_ds.read(spark, table, options={"merge-engine": "first-row"}).collect())


def test_paimon_ds_write_refuses_it(spark, table):
    df = spark.createDataFrame(NEW, SCHEMA)
    refused(table, lambda: paimon_ds.write(df, table, options={"merge-engine": "first-row"}))


def test_sql_insert_into_an_attached_table_refuses_it(spark, table):
    spark.createDataFrame(NEW, SCHEMA).createOrReplaceTempView("imm_src")
    insert = "INSERT INTO imm.t WITH ('merge-engine' = 'first-row') SELECT * FROM imm_src"
    refused(table, lambda: spark.sql(insert))
    refused(table, lambda: paimon_ds.sql(spark, insert))
    # with PARTITION, paimon_ds.sql writes itself: the statement's options reach that write too
    refused(table, lambda: paimon_ds.sql(spark, "INSERT INTO imm.t WITH ('merge-engine' = 'first-row') "
                                                "PARTITION (dt = 'd1') SELECT id, v FROM imm_src"))
    refused(table, lambda: spark.sql("SELECT * FROM imm.t WITH ('merge-engine' = 'first-row')").collect())


def test_write_stream_refuses_it(spark, table, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "v": ["S"], "dt": ["d1"]}), source / "p.parquet")

    def run() -> None:
        stream = spark.readStream.schema(SCHEMA).parquet(str(source))
        query = (stream.writeStream.format("paimon").option("merge-engine", "first-row")
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(table))
        try:
            query.awaitTermination()
        finally:
            query.stop()

    refused(table, run)


def test_the_table_s_own_value_is_accepted_and_upserts(spark, table):
    # `Deduplicate` is the table's (unset) `deduplicate`, as Paimon's enum option parses it
    save(spark.createDataFrame(NEW, SCHEMA), table, **{"merge-engine": "Deduplicate", "bucket": "2"})
    assert rows(table) == [(1, "A", "d1"), (2, "B", "d1"), (3, "c", "d2")]
    spark.createDataFrame([(3, "C", "d2")], SCHEMA).createOrReplaceTempView("imm_src2")
    paimon_ds.sql(spark, "INSERT INTO imm.t WITH ('merge-engine' = 'deduplicate') PARTITION (dt = 'd2') "
                         "SELECT id, v FROM imm_src2")
    assert rows(table) == [(1, "A", "d1"), (2, "B", "d1"), (3, "C", "d2")]
    assert sorted(tuple(r) for r in load(spark, table, **{"merge-engine": "DEDUPLICATE"}).collect()) == rows(table)
