"""Jobs the package runs itself, because Spark cannot be asked for them by a Python data source.

write(): the clustered write (Flink's shuffle by bucket before the writer): rows are given their
bucket with Paimon's hash, repartitioned by (partition, bucket), and written, so each bucket has one
writer per commit and that writer compacts it inline.
compact(): the dedicated compaction job, one Spark task per bucket worth compacting.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, StructField, StructType

from ..format.bucket import bucket_ids
from ..format.partition import partition_filter
from ..operation.compact import plan_compaction, run_compaction
from ..snapshot import Snapshot
from ..table import Table
from .types import input_arrow_schema
from .write import CLUSTERED_OPTION

BUCKET_COLUMN = "_paimon_ds_bucket"


def write(df: DataFrame, path: str, mode: str = "append", options: dict[str, Any] | None = None,
          parallelism: int | None = None) -> None:
    """Write ``df`` clustered by (partition, bucket): one writer per bucket, which compacts inline."""
    opts = {str(k).lower(): str(v) for k, v in (options or {}).items()}
    table = Table.for_write(path, input_arrow_schema(df.schema), opts)
    writer_df = df
    if table.bucket > 0:
        schema = table.schema
        keys = schema.bucket_keys
        key_types = [schema.field(k).type for k in keys]
        arrow_by_name = {f.name: f.type for f in schema.arrow_schema()}
        num_buckets = table.bucket

        def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for b in batches:
                cols = [b.column(b.schema.get_field_index(k)).cast(arrow_by_name[k]) for k in keys]
                ids = bucket_ids(cols, key_types, num_buckets)
                yield b.append_column(BUCKET_COLUMN, pa.array(ids, pa.int32()))

        out_schema = StructType(list(df.schema.fields) + [StructField(BUCKET_COLUMN, IntegerType(), False)])
        n = parallelism or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions", "200"))
        writer_df = (df.mapInArrow(add_bucket, out_schema)
                     .repartition(n, *schema.partition_keys, BUCKET_COLUMN)
                     .drop(BUCKET_COLUMN))
    w = writer_df.write.format("paimon").mode(mode).option(CLUSTERED_OPTION, "true")
    for k, v in (options or {}).items():
        w = w.option(k, str(v))
    w.save(path)


def compact(spark: SparkSession, path: str, full: bool = False, options: dict[str, Any] | None = None,
            partitions: str | list[dict[str, Any]] | None = None) -> Snapshot | None:
    """Compact a table's buckets in Spark tasks; commit one COMPACT snapshot.

    Runs alongside writers: their new files are untouched. Returns the snapshot, or None if no
    bucket needed compaction. ``partitions``: only these (`dt=x,hr=1;dt=y` or a list of dicts).
    """
    table = Table.load(path, {str(k): str(v) for k, v in (options or {}).items()})
    tasks = plan_compaction(table, full, partitions=partition_filter(table, partitions))
    if not tasks:
        return None
    payload = [(i, pickle.dumps(t)) for i, t in enumerate(tasks)]
    result_schema = pa.schema([pa.field("message", pa.binary())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            out = [pickle.dumps(run_compaction(table, pickle.loads(blob), full))
                   for blob in b.column(b.schema.get_field_index("task")).to_pylist()]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], schema=result_schema)

    jobs = spark.createDataFrame(payload, "i int, task binary").repartition(len(tasks), "i")
    rows = jobs.mapInArrow(run, "message binary").collect()
    return table.new_commit().commit_or_abort([pickle.loads(r["message"]) for r in rows])
