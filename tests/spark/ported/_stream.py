"""Helpers of the ported Paimon Spark streaming suites (PaimonSinkTest, PaimonSourceTest, PaimonCDCSourceTest).

Scala's `MemoryStream[(Int, String)]` has no PySpark counterpart: `MemoryInput` stands for it, a directory that a
file stream reads, where each `add(...)` is one new parquet file (written under a hidden name, then renamed, so the
stream never sees half a file); `query.processAllAvailable()` then takes it into one micro-batch, as in Scala.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

import paimon_ds

_SPARK_TYPES = {pa.int32(): "INT", pa.int64(): "BIGINT", pa.string(): "STRING", pa.float64(): "DOUBLE",
                pa.date32(): "DATE"}
_names = itertools.count()


class MemoryInput:
    """Scala's MemoryStream: `add(rows...)` appends rows, `df()` is the stream of them."""

    def __init__(self, spark: SparkSession, directory: Path, schema: pa.Schema) -> None:
        self.spark, self.directory, self.schema = spark, directory, schema
        directory.mkdir(parents=True, exist_ok=True)
        self.files = 0

    def add(self, *rows: tuple) -> None:
        data = pa.Table.from_pylist([dict(zip(self.schema.names, r)) for r in rows], schema=self.schema)
        tmp = self.directory / f".{self.files}.tmp"
        pq.write_table(data, tmp)
        os.replace(tmp, self.directory / f"{self.files:05d}.parquet")
        self.files += 1

    def df(self) -> DataFrame:
        ddl = ", ".join(f"`{f.name}` {_SPARK_TYPES[f.type]}" for f in self.schema)
        return self.spark.readStream.schema(ddl).parquet(str(self.directory))


def location(spark: SparkSession, warehouse: str, table: str) -> str:
    """Paimon's `loadTable(name).location()`: the attached table's path in the warehouse."""
    return paimon_ds.Catalog(warehouse).table_path(f"{spark.catalog.currentDatabase()}.{table}")


def to_memory(df: DataFrame, checkpoint: Path, trigger: dict | None = None) -> tuple[StreamingQuery, str]:
    """`writeStream.format("memory").queryName(...)` with a fresh name; the query and its table's name."""
    name = f"mem_table_{next(_names)}"
    writer = (df.writeStream.format("memory").option("checkpointLocation", str(checkpoint)).queryName(name)
              .outputMode("append"))
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start(), name


def answer(spark: SparkSession, query: str) -> list[tuple]:
    """Spark's checkAnswer compares rows as a multiset: sorted tuples (nulls first)."""
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=lambda r: [(v is not None, v) for v in r])


def rows_sorted(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=lambda r: [(v is not None, v) for v in r])
