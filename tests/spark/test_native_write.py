"""paimon_ds.write's native path (spark/native_write.py): Spark's parquet writer encodes an append table's files,
the driver commits them as Paimon data files. Rows read back exactly here, by Java Paimon 0.9 and by pypaimon 2.1;
Java prunes files by the stats taken from the footers; a failed job leaves nothing visible; fallbacks say why."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import json
import logging
import os
import time

import pyarrow.parquet as pq
import pytest

import paimon_ds
from paimon_ds.operation.maintenance import remove_orphan_files
from paimon_ds.operation.staged_files import STAGING_PREFIX
from paimon_ds.table import Table

SCHEMA = ("id bigint, s string, d double, day date, ts timestamp_ntz, dec decimal(10,2), "
          "arr array<int>, st struct<a:int,b:string>, f float, flag boolean, tl timestamp")


def _rows(ids: range) -> list[tuple]:
    return [(i, None if i % 5 == 4 else f"s{i % 3}", i * 1.5, dt.date(2024, 1, 1 + i % 2),
             dt.datetime(2024, 1, 1, 0, 0, i % 60, 123456), decimal.Decimal(f"{i}.25"), [i, None],
             (i, f"x{i}"), float(i) / 4, i % 2 == 0, dt.datetime(2023, 6, 1, 12, 0, 0, i)) for i in ids]


def _expected(ids: range) -> list[dict]:
    return [{"id": r[0], "s": r[1], "d": r[2], "day": r[3], "ts": r[4], "dec": r[5], "arr": r[6],
             "st": {"a": r[7][0], "b": r[7][1]}, "f": r[8], "flag": r[9],
             "tl": r[10].replace(tzinfo=dt.timezone.utc)} for r in _rows(ids)]


def _data_files(path: str) -> list[str]:
    return sorted(f for f in glob.glob(f"{path}/**/data-*.parquet", recursive=True))


def _spark_written(path: str) -> bool:
    files = _data_files(path)
    return bool(files) and all("parquet-mr" in pq.read_metadata(f).created_by for f in files)


def _by_id(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: r["id"])


LAYOUTS = {"unpartitioned": {}, "partitioned": {"partition": "day"},
           "fixed-bucket": {"bucket": "3", "bucket-key": "id"}}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_native_write_reads_back_everywhere(spark, table_path, java_oracle, pypaimon_oracle, layout):
    opts = LAYOUTS[layout]
    paimon_ds.write(spark.createDataFrame(_rows(range(0, 12)), SCHEMA).repartition(2), table_path, "append", opts)
    paimon_ds.write(spark.createDataFrame(_rows(range(100, 106)), SCHEMA), table_path, "append", opts)
    assert _spark_written(table_path)
    assert not glob.glob(f"{table_path}/{STAGING_PREFIX}*")
    table = Table.load(table_path)
    assert table.snapshot_manager.latest().id == 2
    expected = _expected(range(0, 12)) + _expected(range(100, 106))
    assert _by_id(table.to_arrow().to_pylist()) == _by_id(expected)
    if layout == "fixed-bucket":  # every row in the bucket Paimon's hash gives it (pypaimon checks)
        assert pypaimon_oracle.check_buckets(table_path) == {"rows": 18, "wrong_bucket": 0}
    if layout == "partitioned":
        assert sorted(os.path.basename(os.path.dirname(os.path.dirname(f))) for f in _data_files(table_path))[0] \
            .startswith("day=")
    for oracle in (java_oracle, pypaimon_oracle):
        got = oracle.read(table_path).to_pylist()
        assert [r["id"] for r in _by_id(got)] == [r["id"] for r in _by_id(expected)], oracle.impl
        for g, e in zip(_by_id(got), _by_id(expected)):
            assert {k: g[k] for k in ("s", "d", "day", "dec", "arr", "f", "flag")} == \
                {k: e[k] for k in ("s", "d", "day", "dec", "arr", "f", "flag")}, oracle.impl
            assert g["ts"].replace(tzinfo=None) == e["ts"], oracle.impl
            tl = g["tl"] if g["tl"].tzinfo else g["tl"].replace(tzinfo=dt.timezone.utc)  # the instant, in UTC
            assert tl == e["tl"], oracle.impl
            assert dict(g["st"]) == e["st"], oracle.impl


JAVA_PRUNED = """
import json
t = catalog.get_table(ident)._j_table
P = jvm.org.apache.paimon
col = [f.name() for f in t.rowType().getFields()].index("d")
out = {}
for low in (-1.0, 75.0):  # (a Python float reaches Java as a Double; a small int would be an Integer)
    pred = P.predicate.PredicateBuilder(t.rowType()).greaterThan(col, low)
    rb = jvm.InvocationUtil.getReadBuilder(t).withFilter(pred)
    out[str(low)] = sum(s.dataFiles().size() for s in rb.newScan().plan().splits())
print(json.dumps(out))
"""


def test_java_prunes_by_footer_stats(spark, table_path, java_oracle):
    """Two writes of disjoint ranges: Java's scan with `d > 75.0` plans only the second write's file."""
    paimon_ds.write(spark.createDataFrame(_rows(range(0, 10)), SCHEMA).coalesce(1), table_path)
    paimon_ds.write(spark.createDataFrame(_rows(range(100, 110)), SCHEMA).coalesce(1), table_path)
    assert _spark_written(table_path)
    files = json.loads(java_oracle.exec(table_path, JAVA_PRUNED).strip().splitlines()[-1])
    assert files == {"-1.0": 2, "75.0": 1}


def test_overwrite_replaces_rows(spark, table_path):
    opts = {"partition": "day"}
    paimon_ds.write(spark.createDataFrame(_rows(range(0, 6)), SCHEMA), table_path, "append", opts)
    paimon_ds.write(spark.createDataFrame(_rows(range(10, 12)), SCHEMA), table_path, "overwrite", opts)
    assert _by_id(Table.load(table_path).to_arrow().to_pylist()) == _expected(range(10, 12))
    # dynamic overwrite: only the partitions written are replaced (id 20 is in day 2024-01-01)
    paimon_ds.write(spark.createDataFrame(_rows(range(20, 21)), SCHEMA), table_path, "overwrite",
                    {**opts, "dynamic-partition-overwrite": "true"})
    assert _by_id(Table.load(table_path).to_arrow().to_pylist()) == _expected(range(11, 12)) + _expected(range(20, 21))
    assert _spark_written(table_path)


def test_failed_job_leaves_nothing_and_orphans_go(spark, table_path):
    """A task raises (on one partition's rows) after other tasks wrote their files: no snapshot, same rows, no
    staged file left; a staging directory a dead driver left is removed by remove-orphans once old."""
    from pyspark.sql import functions as F
    opts = {"partition": "day"}
    paimon_ds.write(spark.createDataFrame(_rows(range(0, 4)), SCHEMA), table_path, "append", opts)
    before = Table.load(table_path).to_arrow().to_pylist()
    files_before = _data_files(table_path)
    df = spark.createDataFrame(_rows(range(10, 30)), SCHEMA).repartition(4, "day")
    bad = df.withColumn("id", F.when(F.col("day") == F.lit(dt.date(2024, 1, 2)), F.raise_error(F.lit("boom")))
                        .otherwise(F.col("id")))
    with pytest.raises(Exception, match="boom"):
        paimon_ds.write(bad, table_path, "append", opts)
    table = Table.load(table_path)
    assert table.snapshot_manager.latest().id == 1
    assert _by_id(table.to_arrow().to_pylist()) == _by_id(before)
    assert _data_files(table_path) == files_before
    assert not glob.glob(f"{table_path}/{STAGING_PREFIX}*")
    # a driver that died mid-way leaves its staging directory: remove-orphans removes it once past the margin
    stale = f"{table_path}/{STAGING_PREFIX}0123456789ab/_pds_part=1"
    os.makedirs(stale)
    stale_file = f"{stale}/part-00000-x.snappy.parquet"
    with open(stale_file, "wb") as f:
        f.write(b"PAR1")
    assert remove_orphan_files(table, older_than_ms=60_000) == []  # young: a write may still be running
    assert remove_orphan_files(table, older_than_ms=60_000, now_ms=int(time.time() * 1000) + 120_000) == [
        f"{STAGING_PREFIX}0123456789ab/_pds_part=1/part-00000-x.snappy.parquet"]
    assert not os.path.exists(f"{table_path}/{STAGING_PREFIX}0123456789ab")
    assert _by_id(Table.load(table_path).to_arrow().to_pylist()) == _by_id(before)


def test_fallbacks_say_why_once(spark, table_path, tmp_path, caplog):
    df = spark.createDataFrame(_rows(range(0, 3)), SCHEMA)
    with caplog.at_level(logging.WARNING, logger="paimon_ds.spark.native_write"):
        for i in range(2):
            paimon_ds.write(df, f"{tmp_path}/orc{i}", "append", {"file.format": "orc"})
    said = [r.getMessage() for r in caplog.records if "file.format orc" in r.getMessage()]
    assert len(said) == 1 and "takes the Python path" in said[0]
    assert _by_id(Table.load(f"{tmp_path}/orc1").to_arrow().to_pylist()) == _expected(range(0, 3))
    # turned off: the Python path (pyarrow's writer), silently
    paimon_ds.write(df, table_path, "append", {"paimon_ds.native-write": "false"})
    assert not _spark_written(table_path)
    assert _by_id(Table.load(table_path).to_arrow().to_pylist()) == _expected(range(0, 3))
    # a primary-key table takes the Python path
    paimon_ds.write(df.select("id", "s"), f"{tmp_path}/pk", "append", {"primary-key": "id", "bucket": "1"})
    assert not _spark_written(f"{tmp_path}/pk")


def test_not_null_column_refused(spark, tmp_path):
    import pyarrow as pa
    path = f"{tmp_path}/nn"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    Table.for_write(path, schema).new_commit().commit([])
    with pytest.raises(Exception, match="column 'id' is NOT NULL in the table"):
        paimon_ds.write(spark.createDataFrame([(1, "a"), (None, "b")], "id bigint, s string"), path)
    assert not _data_files(path)


def test_sql_insert_takes_the_native_path(spark, tmp_path):
    """paimon_ds.sql INSERT into an attached append table: plain, and OVERWRITE of a static partition."""
    warehouse = str(tmp_path / "wh")
    paimon_ds.sql(spark, "CREATE DATABASE IF NOT EXISTS nw", warehouse)
    paimon_ds.sql(spark, "CREATE TABLE nw.t (id BIGINT, s STRING, p STRING) PARTITIONED BY (p)", warehouse)
    paimon_ds.sql(spark, "INSERT INTO nw.t VALUES (1, 'a', 'x'), (2, 'b', 'y')", warehouse)
    paimon_ds.sql(spark, "INSERT OVERWRITE nw.t PARTITION (p = 'x') SELECT 3, 'c'", warehouse)
    path = f"{warehouse}/nw.db/t"
    assert _spark_written(path)
    assert _by_id(Table.load(path).to_arrow().to_pylist()) == [{"id": 2, "s": "b", "p": "y"},
                                                                {"id": 3, "s": "c", "p": "x"}]


def test_row_tracking_table_gets_row_ids(spark, tmp_path):
    """A row-tracking table: the commit gives the native files their first row ids, as the Python path's."""
    path = f"{tmp_path}/rt"
    opts = {"row-tracking.enabled": "true"}
    paimon_ds.write(spark.createDataFrame([(i, f"v{i}") for i in range(3)], "id bigint, v string").coalesce(1),
                    path, "append", opts)
    paimon_ds.write(spark.createDataFrame([(i, f"v{i}") for i in range(3, 5)], "id bigint, v string").coalesce(1),
                    path, "append", opts)
    assert _spark_written(path)
    got = Table.load(path, {"paimon_ds.row-tracking-columns": "true"}).to_arrow().sort_by("id").to_pylist()
    assert [(r["id"], r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in got] == [
        (0, 0, 1), (1, 1, 1), (2, 2, 1), (3, 3, 2), (4, 4, 2)]
