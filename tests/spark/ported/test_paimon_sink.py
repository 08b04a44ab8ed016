"""Apache Paimon 1.4.1's `PaimonSinkTest` (paimon-spark-ut/src/test/scala/org/apache/paimon/spark/), ported: its
statements, options and expected rows are the specification. Scala's MemoryStream is `MemoryInput` (a directory of
parquet files a file stream reads, see _stream.py); tables are created through paimon_ds.sql and written at their
path (`loadTable("T").location()`), as the Scala suite does."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import paimon_ds
from paimon_ds import Table

from ._sql import sql
from ._stream import MemoryInput, answer, location

INT_STRING = pa.schema([("a", pa.int32()), ("b", pa.string())])


def commit_kind(path: str) -> str:
    """`loadTable("T").snapshotManager().latestSnapshot().commitKind`."""
    sm = Table.load(path).snapshot_manager
    return sm.snapshot(sm.latest_id()).commit_kind


def _pk_table(spark, wh, extra: str = "") -> str:
    sql(spark, f"CREATE TABLE T (a INT, b STRING) TBLPROPERTIES ('primary-key'='a', 'bucket'='3'{extra})")
    return location(spark, wh, "T")


@pytest.mark.parametrize("sink", ["forEachBatch", "append mode"])
def test_sink_upserts(spark, wh, tmp_path, sink):
    """Paimon Sink: forEachBatch (each batch written by `batch.write.format("paimon")`), and append mode
    (`writeStream.format("paimon")`), into a primary-key table: the third batch updates key 2."""
    path = _pk_table(spark, wh)
    source = MemoryInput(spark, tmp_path / "in", INT_STRING)
    writer = source.df().writeStream.option("checkpointLocation", str(tmp_path / "ck"))
    if sink == "forEachBatch":
        stream = writer.foreachBatch(lambda batch, _: batch.write.format("paimon").mode("append").save(path)).start()
    else:
        stream = writer.format("paimon").start(path)
    try:
        for data, expected in (([(1, "a")], [(1, "a")]),
                               ([(2, "b")], [(1, "a"), (2, "b")]),
                               ([(2, "b2")], [(1, "a"), (2, "b2")])):
            source.add(*data)
            stream.processAllAvailable()
            assert answer(spark, "SELECT * FROM T ORDER BY a") == expected
    finally:
        stream.stop()


def test_complete_mode(spark, wh, tmp_path):
    """Paimon Sink: complete mode: an aggregation's whole result replaces the append table each batch."""
    sql(spark, "CREATE TABLE T (city String, population Long)")
    path = location(spark, wh, "T")
    source = MemoryInput(spark, tmp_path / "in", pa.schema([("uid", pa.int32()), ("city", pa.string())]))
    stream = (source.df().groupBy("city").count().toDF("city", "population").writeStream.outputMode("complete")
              .option("checkpointLocation", str(tmp_path / "ck")).format("paimon").start(path))
    try:
        for data, expected in (
                ([(1, "HZ"), (2, "BJ"), (3, "BJ")], [("BJ", 2), ("HZ", 1)]),
                ([(4, "SH"), (5, "BJ"), (6, "HZ")], [("BJ", 3), ("HZ", 2), ("SH", 1)]),
                ([(7, "HZ"), (8, "SH")], [("BJ", 3), ("HZ", 3), ("SH", 2)])):
            source.add(*data)
            stream.processAllAvailable()
            assert answer(spark, "SELECT * FROM T ORDER BY city") == expected
    finally:
        stream.stop()


def test_update_mode_is_refused(spark, wh, tmp_path):
    """Paimon Sink: update mode: refused (a RuntimeException in Scala; Spark refuses the mode for Python sinks)."""
    path = _pk_table(spark, wh)
    source = MemoryInput(spark, tmp_path / "in", INT_STRING)
    with pytest.raises(Exception, match="(?i)update"):
        stream = (source.df().writeStream.option("checkpointLocation", str(tmp_path / "ck")).outputMode("update")
                  .format("paimon").start(path))
        try:
            source.add((1, "a"))
            stream.processAllAvailable()
        finally:
            stream.stop()


def test_aggregation_and_watermark(spark, wh, tmp_path):
    """Paimon Sink: aggregation and watermark: 5-second windows closed by a 10-second watermark, in append mode."""
    sql(spark, "CREATE TABLE T (start Timestamp, stockId INT, avg_price DOUBLE) "
               "TBLPROPERTIES ('bucket'='3', 'bucket-key'='stockId')")
    path = location(spark, wh, "T")
    source = MemoryInput(spark, tmp_path / "in",
                         pa.schema([("time", pa.int64()), ("stockId", pa.int32()), ("price", pa.float64())]))
    data = (source.df().selectExpr("CAST(time AS timestamp) AS timestamp", "stockId", "price")
            .withWatermark("timestamp", "10 seconds")
            .groupBy(F.window("timestamp", "5 seconds"), F.col("stockId")).agg(F.mean("price").alias("avg_price"))
            .select("window.start", "stockId", "avg_price"))
    stream = data.writeStream.option("checkpointLocation", str(tmp_path / "ck")).format("paimon").start(path)
    try:
        for batch in ([(101, 1, 1.0), (102, 1, 2.0), (104, 2, 20.0)],
                      [(105, 2, 40.0), (107, 2, 60.0), (115, 3, 300.0)],
                      [(200, 99, 99.9)]):
            source.add(*batch)
            stream.processAllAvailable()
        assert answer(spark, "SELECT CAST(start as BIGINT) AS start, stockId, avg_price FROM T "
                             "ORDER BY start, stockId") == [(100, 1, 1.5), (100, 2, 20.0), (105, 2, 50.0),
                                                            (115, 3, 300.0)]
    finally:
        stream.stop()


def test_enable_schema_evolution(spark, wh, tmp_path):
    """Paimon Sink: enable schema evolution: `write.merge-schema` with `write.merge-schema.explicit-cast` widens
    the key `a` INT to BIGINT, casts `b` STRING to DATE and adds `c`; the row written before gets c null.
    Adapted: the session table is attached again before the query reads it."""
    path = _pk_table(spark, wh)
    spark.sql("INSERT INTO T VALUES (1, '2023-08-09'), (2, '2023-08-09')")
    assert answer(spark, "SELECT * FROM T ORDER BY a, b") == [(1, "2023-08-09"), (2, "2023-08-09")]
    date = datetime.date(2023, 8, 10)
    source = MemoryInput(spark, tmp_path / "in", pa.schema([("a", pa.int64()), ("b", pa.date32()), ("c", pa.int32())]))
    stream = (source.df().writeStream.option("checkpointLocation", str(tmp_path / "ck"))
              .option("write.merge-schema", "true").option("write.merge-schema.explicit-cast", "true")
              .format("paimon").start(path))
    try:
        source.add((1, date, 123), (3, date, 456))
        stream.processAllAvailable()
        # the write evolved the Paimon table; the session's entry for T still has the old columns (Spark stores
        # them at attach and runs no source code to refresh them), and a read through it is refused until attach
        # brings it in line (Paimon's catalog would load the new schema itself)
        with pytest.raises(AnalysisException, match="Spark's session table .*T no longer matches Paimon table"):
            spark.sql("SELECT * FROM T").collect()
        paimon_ds.attach(spark, wh)
        assert answer(spark, "SELECT * FROM T ORDER BY a") == [(1, date, 123), (2, datetime.date(2023, 8, 9), None),
                                                               (3, date, 456)]
    finally:
        stream.stop()


def test_full_compaction_delta_commits_with_batch_write(spark, wh):
    """Paimon SinK: set full-compaction.delta-commits with batch write (delta-commits 1: every INSERT ends in a
    COMPACT snapshot). Paimon runs it with `spark.paimon.write.use-v2-write` true and false, a choice of its Java
    connector's write path; paimon_ds has one."""
    sql(spark, "CREATE TABLE t (a INT, b INT) TBLPROPERTIES ('primary-key'='a', 'bucket'='1', "
               "'full-compaction.delta-commits'='1')")
    spark.sql("INSERT INTO t VALUES (1, 1)")
    spark.sql("INSERT INTO t VALUES (2, 2)")
    assert answer(spark, "SELECT * FROM t ORDER BY a") == [(1, 1), (2, 2)]
    assert commit_kind(location(spark, wh, "t")) == "COMPACT"


def test_full_compaction_delta_commits_with_streaming_write(spark, wh, tmp_path):
    """Paimon SinK: set full-compaction.delta-commits with streaming write (delta-commits 2: every second batch
    ends in a COMPACT snapshot)."""
    sql(spark, "CREATE TABLE T (a INT, b INT) TBLPROPERTIES ('primary-key'='a', 'bucket'='1', "
               "'full-compaction.delta-commits'='2')")
    path = location(spark, wh, "T")
    source = MemoryInput(spark, tmp_path / "in", pa.schema([("a", pa.int32()), ("b", pa.int32())]))
    stream = source.df().writeStream.option("checkpointLocation", str(tmp_path / "ck")).format("paimon").start(path)
    try:
        for data, expected, kind in (((1, 1), [(1, 1)], "APPEND"),
                                     ((2, 1), [(1, 1), (2, 1)], "COMPACT"),
                                     ((2, 2), [(1, 1), (2, 2)], "APPEND"),
                                     ((3, 1), [(1, 1), (2, 2), (3, 1)], "COMPACT")):
            source.add(data)
            stream.processAllAvailable()
            assert answer(spark, "SELECT * FROM T ORDER BY a") == expected
            assert commit_kind(path) == kind
    finally:
        stream.stop()
