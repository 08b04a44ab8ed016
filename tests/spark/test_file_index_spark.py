"""Bloom-filter file indexes through Spark: `paimon_ds.write` (its Python path: the JVM path builds no index) and
`df.write.format("paimon")` give every data file its index, and the Python source's planning skips files by
them, shown by deleting the files a filter must skip (see interop/test_file_index.py for the format against
Java Paimon 0.9)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import paimon_ds
from paimon_ds.format.file_index import INDEX_FILE_SUFFIX
from paimon_ds.predicate.predicates import Leaf
from paimon_ds.spark import native_read
from paimon_ds.table import Table

from ._helpers import plan_text

OPTS = {"file-index.bloom-filter.columns": "s,n", "file-index.bloom-filter.s.items": "2000",
        "file-index.bloom-filter.n.items": "20"}  # s: 1.2 KB, a side file; n: a few bytes, but one index per file


def test_spark_writers_index_and_source_skips(spark, table_path):
    def commit(k: int):  # rows i = k, k + 4, ...: every file's min/max span the whole range
        return spark.createDataFrame([(i, f"s{i}", i * 10) for i in range(k, 40, 4)], "id int, s string, n bigint")

    for k in range(3):
        paimon_ds.write(commit(k).coalesce(1), table_path, "append", OPTS)
    commit(3).coalesce(1).write.format("paimon").mode("append").save(table_path)
    t = Table.load(table_path)
    entries = t.new_scan().read_entries()
    assert len(entries) == 4
    for e in entries:  # the index of s alone is over the 500 B threshold: beside the data file
        assert e.file.embedded_index is None and e.file.extra_files == (e.file.file_name + INDEX_FILE_SUFFIX,)
        assert os.path.exists(f"{t.root}/bucket-0/{e.file.extra_files[0]}")
    keep = {f.file_name for s in t.new_scan(Leaf("=", "s", ("s13",))).plan() for f in s.files}
    assert len(keep) == 1
    for e in entries:
        if e.file.file_name not in keep:
            os.remove(f"{t.root}/bucket-0/{e.file.file_name}")
    df = spark.read.format("paimon").load(table_path)
    assert [tuple(r) for r in df.where("s = 's13'").collect()] == [(13, "s13", 130)]
    assert sorted(tuple(r) for r in df.where("n IN (50, 170)").collect()) == [(5, "s5", 50), (17, "s17", 170)]


def test_native_reads_skip_files_by_index(spark, tmp_path):
    """paimon_ds.read(where=...) and the native part of paimon_ds.sql (Spark's own parquet reader) plan with the
    WHERE clause's equality / IN tests: the files the indexes rule out are not in the plan. Shown by deleting
    them: Spark's reader would fail on a missing file it was given."""
    warehouse = str(tmp_path / "wh")
    catalog = paimon_ds.Catalog(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.t", pa.schema([("id", pa.int32()), ("s", pa.string()), ("n", pa.int64())]),
                         options=OPTS)
    t = catalog.get_table("db.t")
    for k in range(4):  # rows i = k, k + 4, ...: every file's min/max span the whole range
        t.append(pa.table({"id": pa.array(range(k, 40, 4), pa.int32()),
                                "s": [f"s{i}" for i in range(k, 40, 4)],
                                "n": pa.array([i * 10 for i in range(k, 40, 4)], pa.int64())}))
    t = catalog.get_table("db.t")
    entries = t.new_scan().read_entries()
    assert len(entries) == 4
    keep = {f.file_name for s in t.new_scan(Leaf("=", "s", ("s13",))).plan() for f in s.files}
    assert len(keep) == 1  # s13 is in the file of k = 1 only
    for e in entries:
        if e.file.file_name not in keep:
            os.remove(f"{t.root}/bucket-0/{e.file.file_name}")

    df = paimon_ds.read(spark, t.path, where="s = 's13'")
    assert [tuple(r) for r in df.collect()] == [(13, "s13", 130)]
    assert "FileScan parquet" in plan_text(df)  # Spark's own reader, given the one file
    assert paimon_ds.read(spark, t.path, where="s = 'absent'").collect() == []  # every file ruled out
    df = paimon_ds.read(spark, t.path, where="n IN (50, 130, 170) AND id > 1")
    assert sorted(tuple(r) for r in df.collect()) == [(5, "s5", 50), (13, "s13", 130), (17, "s17", 170)]

    paimon_ds.attach(spark, warehouse)
    rows = paimon_ds.sql(spark, "SELECT id, s FROM db.t x WHERE x.S = 's13' AND id >= 0")
    assert [tuple(r) for r in rows.collect()] == [(13, "s13")]
    rows = paimon_ds.sql(spark, "SELECT id FROM db.t WHERE t.s = 's13'")
    assert [tuple(r) for r in rows.collect()] == [(13,)]
    rows = paimon_ds.sql(spark, "SELECT n FROM db.t WHERE n IN (50, 170) ORDER BY n")
    assert [tuple(r) for r in rows.collect()] == [(50,), (170,)]
    # a test Spark answers after a cast this package does not repeat prunes nothing: the read fails on the
    # deleted files rather than skipping rows it must give (Spark's reader misses them, then the Python source)
    native_read.reset_warnings()  # warned once per process: an earlier test of this worker may have used it up
    with pytest.warns(RuntimeWarning, match="Spark cannot read"), \
            pytest.raises(Exception, match="(?i)not exist|FileNotFound|MissingFileError"):
        paimon_ds.sql(spark, "SELECT * FROM db.t WHERE s = 13").collect()
    native_read.reset_warnings()
    catalog.drop_table("db.t")  # broken on purpose: not a table for the suite-wide native read check
