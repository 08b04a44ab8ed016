"""The Python data source read floor: a reader that hands Spark Arrow batches it already holds.

Its rows are the read benchmark's (bench.rounds.append_rows), built once per Python worker and kept there
(Spark reuses its workers), so a timed query costs only what every Python data source pays: the batches
crossing from the worker to the JVM and Spark turning them into rows. No Python source reads faster, so
`spark.read.format("paimon")` is measured against it as well as against Spark's parquet reader.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

SCHEMA = "id bigint, k int, name string, amount double, flag boolean"
BATCH_ROWS = 65536  # paimon_ds's read batch (operation/read.py)

_held: dict[tuple[int, int], list[pa.RecordBatch]] = {}  # (start, end) -> batches, per worker process


def _batches(start: int, end: int) -> list[pa.RecordBatch]:
    """Rows ``start``..``end`` - 1 of append_rows, in BATCH_ROWS batches."""
    held = _held.get((start, end))
    if held is None:
        _held.clear()  # one range per worker: the previous query's rows are not needed
        ids = np.arange(start, end, dtype=np.int64)
        names = pc.binary_join_element_wise("name-", pc.cast(pa.array(ids % 100_000), pa.string()), "")
        table = pa.table({"id": ids, "k": (ids % 1000).astype(np.int32), "name": names,
                          "amount": ids.astype(np.float64) * 1.5, "flag": ids % 2 == 0})
        held = _held[(start, end)] = table.combine_chunks().to_batches(max_chunksize=BATCH_ROWS)
    return held


class _MemoryReader(DataSourceReader):
    def __init__(self, rows: int, partitions: int) -> None:
        self.rows, self.parts = rows, partitions

    def partitions(self):
        bounds = np.linspace(0, self.rows, self.parts + 1, dtype=np.int64).tolist()
        return [InputPartition((lo, hi)) for lo, hi in zip(bounds, bounds[1:])]

    def read(self, partition):
        yield from _batches(*partition.value)


class MemorySource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "paimon_ds_bench_memory"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema):
        return _MemoryReader(int(self.options["rows"]), int(self.options.get("partitions", 2)))


def register(spark) -> str:
    spark.dataSource.register(MemorySource)
    return MemorySource.name()
