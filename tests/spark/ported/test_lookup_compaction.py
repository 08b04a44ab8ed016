"""Apache Paimon 1.4.1's `LookupCompactionTest` (paimon-spark-ut/.../spark/sql/), ported: its statements,
expected rows and data-file counts are the specification, run through paimon_ds.sql. Paimon's one case loops over
the merge engines; here each engine is one parametrized case.

Adapted: the case counts the data files of bucket 0, which depends on how many writers wrote it. Paimon's Spark
writer shuffles rows by (partition, bucket), so one writer writes bucket 0 and compacts it. paimon_ds's INSERT
into a fixed-bucket table writes without that shuffle (Spark's tasks share the bucket and the commit compacts it,
docs/tables/kinds.md "Compaction by every write"), so two tasks write two level-0 files. The INSERTs therefore run
through `paimon_ds.write`, paimon_ds's clustered write, which shuffles as Paimon's writer does: same rows, same
table, same one writer per bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

import paimon_ds

from ._sql import rows, sql
from ._stream import location


def _data_files(path: str) -> int:
    return sum(1 for f in (Path(path) / "bucket-0").iterdir() if f.name.startswith("data"))


def _insert(spark, path: str, values: str) -> None:
    """`INSERT INTO T VALUES ...`, through the clustered write (see the module docstring)."""
    paimon_ds.write(spark.sql(f"SELECT * FROM VALUES {values} AS v(id, name, count)"), path)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation", "first-row"])
def test_number_of_data_files_written(spark, wh, engine):
    extra = ", 'fields.count.aggregate-function' = 'sum'" if engine == "aggregation" else ""
    sql(spark, "CREATE TABLE T (id INT, name STRING, count INT) TBLPROPERTIES ('primary-key' = 'id', "
               f"'bucket' = '1', 'merge-engine' = '{engine}', 'changelog-producer' = 'lookup'{extra})")
    path = location(spark, wh, "T")
    # first insert: its file is upgraded to the max level by the compaction, not rewritten
    _insert(spark, path, "(1, 'aaaaaaaaaaa', 1), (2, 'b', 2)")
    assert _data_files(path) == 1
    assert rows(spark, "SELECT * FROM T ORDER BY id") == [(1, "aaaaaaaaaaa", 1), (2, "b", 2)]
    # second insert: upgraded to a lower level; only deduplicate may skip the rewrite
    _insert(spark, path, "(2, 'b', 22), (3, 'c', 3)")
    assert _data_files(path) == (2 if engine == "deduplicate" else 3)
    expected = {
        "deduplicate": [(1, "aaaaaaaaaaa", 1), (2, "b", 22), (3, "c", 3)],
        "partial-update": [(1, "aaaaaaaaaaa", 1), (2, "b", 22), (3, "c", 3)],
        "aggregation": [(1, "aaaaaaaaaaa", 1), (2, "b", 24), (3, "c", 3)],
        "first-row": [(1, "aaaaaaaaaaa", 1), (2, "b", 2), (3, "c", 3)],
    }
    assert rows(spark, "SELECT * FROM T ORDER BY id") == expected[engine]
