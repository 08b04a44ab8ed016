"""Helpers of the ported Paimon Spark procedure suites."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from paimon_ds import Table

from ._stream import MemoryInput, location

INT_STRING = pa.schema([("a", pa.int32()), ("b", pa.string())])


@contextmanager
def foreach_batch_appends(spark, warehouse: str, tmp_path: Path, table: str = "T"):
    """The suites' `MemoryStream[(Int, String)]` written by `foreachBatch` appending each batch to the table's
    location; yields `add(rows...)`, which adds the rows and waits for their batch (one snapshot each)."""
    path = location(spark, warehouse, table)
    source = MemoryInput(spark, tmp_path / "in", INT_STRING)
    stream = (source.df().toDF("a", "b").writeStream.option("checkpointLocation", str(tmp_path / "ck"))
              .foreachBatch(lambda batch, _: batch.write.format("paimon").mode("append").save(path)).start())

    def add(*rows: tuple) -> None:
        source.add(*rows)
        stream.processAllAvailable()
    try:
        yield add
    finally:
        stream.stop()


def load(spark, warehouse: str, table: str = "T") -> Table:
    """Paimon's `loadTable(name)`: the attached table, as stored now."""
    return Table.load(location(spark, warehouse, table))
