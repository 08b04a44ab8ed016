"""Apache Paimon 1.4.1's `MarkPartitionDoneProcedureTest` (paimon-spark-ut/.../spark/procedure/), ported: its
statements and expected rows are the specification, run through paimon_ds.sql (`CALL sys.mark_partition_done`)."""

from __future__ import annotations

import json
import os

import pytest

from ._sql import rows, sql
from ._stream import location


def test_mark_partition_done(spark, wh):
    sql(spark, "CREATE TABLE T (id STRING, name STRING, day STRING) USING PAIMON PARTITIONED BY (day) "
               "TBLPROPERTIES ('primary-key'='day,id', 'partition.mark-done-action'='success-file')")
    sql(spark, "INSERT INTO T VALUES ('1', 'a', '2024-07-13')")
    sql(spark, "INSERT INTO T VALUES ('2', 'b', '2024-07-14')")
    db = spark.catalog.currentDatabase()
    assert rows(spark, f"CALL sys.mark_partition_done(table => '{db}.T', "
                       "partitions => 'day=2024-07-13;day=2024-07-14')") == [(True,)]
    root = location(spark, wh, "T")
    for day in ("2024-07-13", "2024-07-14"):  # Paimon's SuccessFile.safelyFromPath reads it
        with open(os.path.join(root, f"day={day}", "_SUCCESS")) as f:
            success = json.load(f)
        assert set(success) == {"creationTime", "modificationTime"}


@pytest.mark.skip(reason="partition.mark-done-action 'custom' runs a Java class "
                         "(partition.mark-done-action.custom.class), which paimon_ds cannot load: it refuses every "
                         "action but success-file. What works: 'success-file' (the case above)")
def test_custom_partition_mark_done():
    """Paimon procedure: custom partition mark done test."""
