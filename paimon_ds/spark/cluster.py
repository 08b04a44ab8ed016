"""Jobs the package runs itself, because Spark cannot be asked for them by a Python data source.

write(): the clustered write (Flink's shuffle by bucket before the writer): rows are given their
bucket with Paimon's hash, repartitioned by (partition, bucket), and written, so each bucket has one
writer per commit and that writer compacts it inline.
compact(): the dedicated compaction job, one Spark task per bucket worth compacting.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, IntegerType, MapType, StringType, StructField, StructType

from ..format.bucket import bucket_ids
from ..format.partition import POSTPONE_BUCKET, partition_filter
from ..index.bucket_assigner import (
    DynamicBucketAssigner,
    assigner_ids,
    default_num_assigners,
    key_hashes,
    max_buckets,
    partition_hashes,
)
from ..index.cross_partition import is_cross_partition
from ..index.keys import row_channels
from ..operation.compact import plan_compaction, run_task
from ..operation.index_bootstrap import GlobalIndexAssigner
from ..schema.types import conform_array
from ..snapshot.manager import Snapshot
from ..table import Table
from .bucket_expr import quoted, with_bucket_column
from .connect import is_connect
from .connect_shim import ShippedFunction
from .native_write import native_enabled, say_fallback, unsupported, write_native
from .options import (
    BASE_SNAPSHOT_OPTION,
    BUCKET_COLUMN,
    CLUSTERED_OPTION,
    COMMIT_IDENTIFIER_OPTION,
    COMMIT_USER_OPTION,
    ROW_KIND_COLUMN_OPTION,
    session_storage,
)
from .session import activate
from .shuffle import repartition_by_bucket, repartition_by_slot
from .types import input_arrow_schema, spark_schema

CHANNEL_COLUMN = "_paimon_ds_channel"  # a row's bucket-assigner channel
ROW_KIND_COLUMN = "_paimon_ds_row_kind"  # cross-partition upserts: -D rows for keys that left a partition


def _as_table_column(df: DataFrame, field: StructField, table: Table) -> Column:
    """The table column ``field`` from ``df``, as the table types it. With `write.merge-schema` (the schema merged
    already) a column the data lacks is null and a nested column keeps its own fields (the writer aligns them by
    name); names compare as Spark's resolver compares them."""
    present = [c for c in df.columns if c.lower() == field.name.lower()]
    if not present:
        return F.lit(None).cast(field.dataType).alias(field.name)
    column = df[quoted(present[0])]
    if table.options.get("write.merge-schema") and isinstance(field.dataType, (StructType, ArrayType, MapType)):
        return column.alias(field.name)
    return column.cast(field.dataType).alias(field.name)


def write(df: DataFrame, path: str, mode: str = "append", options: dict[str, Any] | None = None,
          parallelism: int | None = None) -> None:
    """Write ``df`` clustered by (partition, bucket): one writer per bucket, which compacts inline.

    Dynamic-bucket tables (bucket=-1) first route rows to bucket assigners, as Paimon's Flink sinks do:
    by (partition, key) hash to HashBucketAssigner channels (primary key holding the partition keys), or
    by key hash to global-index assigners (cross-partition upsert), then by (partition, bucket) to writers.
    """
    opts = {**session_storage(df.sparkSession), **{str(k).lower(): str(v) for k, v in (options or {}).items()}}
    kind_column = opts.get(ROW_KIND_COLUMN_OPTION)
    data_schema = input_arrow_schema(df.schema)
    if kind_column:
        data_schema = data_schema.remove(data_schema.get_field_index(kind_column))
    table = Table.for_write(path, data_schema, opts)
    if not table.table_schema.primary_keys and native_enabled(opts):
        # append tables: Spark's own parquet writer encodes the files (spark/native_write.py), where it can
        reason = unsupported(df.sparkSession, table, opts)
        if reason is None:
            write_native(df, table, mode, opts, opts)
            return
        say_fallback(path, reason)
    n = parallelism or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions", "200"))
    job_options: dict[str, str] = {}
    writer_df = df
    clustered = True
    if table.bucket == POSTPONE_BUCKET and table.table_schema.primary_keys:
        # postpone-bucket tables: each partition's own bucket count, and Paimon writes them write-only: no owner
        # to compact a bucket inline, so no shuffle; tasks share buckets as in df.write.format("paimon")
        clustered = False
    elif table.bucket > 0:
        writer_df = repartition_by_bucket(_with_fixed_buckets(df, table, n), n, quoted(BUCKET_COLUMN),
                                          [quoted(k) for k in table.partition_keys]).drop(BUCKET_COLUMN)
    elif table.table_schema.primary_keys:
        # the assigners hash keys as the table types them; a row-kind column (row-level changes) goes along
        df = df.select(*[_as_table_column(df, f, table) for f in spark_schema(table.arrow_schema())],
                       *([kind_column] if kind_column else []))
        # the job's option (in table.options, over the stored one) or the shuffle's partitions
        channels = table.options.get("dynamic-bucket.assigner-parallelism") or n
        if is_cross_partition(table.table_schema):
            assigned = _with_global_index_buckets(df, table, channels, mode == "overwrite", kind_column)
            job_options[ROW_KIND_COLUMN_OPTION] = ROW_KIND_COLUMN  # the assigner's kinds replace the input's
        else:
            if max_buckets(table.store) != -1:  # Paimon's Spark writer: no more assigners than buckets may exist
                channels = min(channels, max_buckets(table.store))
            snapshot = table.latest_snapshot()
            if snapshot is not None:  # the writers restore from the snapshot the assigners read
                job_options[BASE_SNAPSHOT_OPTION] = str(snapshot.id)
            assigned = _with_dynamic_buckets(df, table, snapshot.id if snapshot else None, channels,
                                             overwrite=mode == "overwrite")
        # the writers read each row's bucket from BUCKET_COLUMN
        writer_df = repartition_by_bucket(assigned, n, quoted(BUCKET_COLUMN), [quoted(k) for k in table.partition_keys])
    activate(df.sparkSession)  # this thread may be new: the source is looked up in its active session
    w = writer_df.write.format("paimon").mode(mode).option(CLUSTERED_OPTION, str(clustered).lower())
    for k, v in {**(options or {}), **job_options}.items():
        w = w.option(k, str(v))
    w.save(path)


def foreach_batch_writer(path: str, commit_user: str, options: dict[str, Any] | None = None,
                         parallelism: int | None = None) -> Callable[[DataFrame, int], None]:
    """A `writeStream.foreachBatch` function: each micro-batch goes through write() (the package's shuffle,
    which dynamic-bucket tables need) and is committed once as ``commit_user`` with the batch id as its
    identifier, so a batch Spark replays after a failure is dropped. Keep ``commit_user`` with the query's
    checkpoint (e.g. the query name): a new user is a new query to the table."""
    if not commit_user:
        raise ValueError("foreach_batch_writer needs a commit_user that stays the same across restarts")

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        write(batch, path, "append", {**(options or {}), COMMIT_USER_OPTION: commit_user,
                                       COMMIT_IDENTIFIER_OPTION: str(batch_id)}, parallelism)

    return ShippedFunction(write_batch)  # on Connect it runs in a server process that cannot import paimon_ds


def _with_fixed_buckets(df: DataFrame, table: Table, n: int) -> DataFrame:
    """``df`` with each row's fixed bucket: a Spark SQL expression where the key types allow
    (spark/bucket_expr.py), so rows reach Python once, in the writer; else computed in Python."""
    schema = table.table_schema
    keys = schema.bucket_keys
    spark_types = {f.name: f.dataType for f in spark_schema(schema.arrow_schema())}
    # the key as the table types it (the DataFrame's column may be narrower)
    as_table_typed = {k: f"CAST({quoted(k)} AS {spark_types[k].simpleString()})" for k in keys}
    with_bucket = with_bucket_column(df, schema, table.bucket, BUCKET_COLUMN, as_table_typed)
    if with_bucket is not None:
        return with_bucket
    key_types = [schema.field(k).type for k in keys]
    arrow_by_name = {f.name: f.type for f in schema.arrow_schema()}
    num_buckets = table.bucket

    def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            cols = [conform_array(b.column(b.schema.get_field_index(k)), arrow_by_name[k]) for k in keys]
            ids = bucket_ids(cols, key_types, num_buckets)
            yield b.append_column(BUCKET_COLUMN, pa.array(ids, pa.int32()))

    out_schema = StructType(list(df.schema.fields) + [StructField(BUCKET_COLUMN, IntegerType(), False)])
    return df.mapInArrow(add_bucket, out_schema)


def _routed(df: DataFrame, channel_of: Callable[[pa.RecordBatch], np.ndarray], channels: int) -> DataFrame:
    """``df`` with each row's assigner channel, repartitioned so that a channel's rows meet in one task."""
    def add_channel(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield b.append_column(CHANNEL_COLUMN, pa.array(channel_of(b), pa.int32()))

    out_schema = StructType(list(df.schema.fields) + [StructField(CHANNEL_COLUMN, IntegerType(), False)])
    return repartition_by_slot(df.mapInArrow(add_channel, out_schema), channels, quoted(CHANNEL_COLUMN))


def _per_channel(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    """A batch's rows by assigner channel (Spark's hash partitioning may put several channels in one task)."""
    channel = batch.column(batch.schema.get_field_index(CHANNEL_COLUMN))
    rows = batch.drop_columns([CHANNEL_COLUMN])
    ids = pc.unique(channel).to_pylist()
    if len(ids) == 1:
        yield ids[0], rows
        return
    for c in ids:
        yield c, rows.filter(pc.equal(channel, c))


def _with_dynamic_buckets(df: DataFrame, table: Table, snapshot_id: int | None, channels: int,
                          overwrite: bool) -> DataFrame:
    """HASH_DYNAMIC: route by (partition, key) hash to HashBucketAssigner channels; each gives buckets."""
    num_assigners = min(default_num_assigners(table.store, channels), channels)

    def channel_of(b: pa.RecordBatch) -> np.ndarray:
        return assigner_ids(partition_hashes(table.store, b), key_hashes(table.store, b), channels, num_assigners)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assigners: dict[int, DynamicBucketAssigner] = {}
        for b in batches:
            for channel, rows in _per_channel(b):
                assigner = assigners.get(channel)
                if assigner is None:
                    assigner = assigners[channel] = DynamicBucketAssigner(
                        table.store, channels, num_assigners, channel, snapshot=snapshot_id, overwrite=overwrite)
                yield rows.append_column(BUCKET_COLUMN, pa.array(assigner.assign(rows), pa.int32()))

    out_schema = StructType(list(df.schema.fields) + [StructField(BUCKET_COLUMN, IntegerType(), False)])
    return _routed(df, channel_of, channels).mapInArrow(assign, out_schema)


def _with_global_index_buckets(df: DataFrame, table: Table, channels: int, overwrite: bool,
                               kind_column: str | None = None) -> DataFrame:
    """Cross-partition upsert: route by key hash to global-index assigners (each bootstraps its keys from
    the table); they give each row its (partition, bucket) and a row kind, and -D rows for keys that moved."""
    if overwrite:
        raise ValueError("overwrite of a cross-partition upsert table is not supported: its keys may live in any "
                         "partition; delete the rows (paimon_ds.delete) and append instead")
    names = [c for c in df.columns if c != kind_column]

    def channel_of(b: pa.RecordBatch) -> np.ndarray:
        return row_channels(table.table_schema, b, channels)

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assigners: dict[int, GlobalIndexAssigner] = {}
        work = tempfile.mkdtemp(prefix="paimon_ds-index-")
        try:
            for b in batches:
                for channel, rows in _per_channel(b):
                    assigner = assigners.get(channel)
                    if assigner is None:
                        assigner = assigners[channel] = GlobalIndexAssigner(
                            table, f"{work}/{channel}", channels, channel, row_kind_column=kind_column)
                        assigner.bootstrap()
                    out = assigner.process(rows)
                    if out.num_rows:
                        yield out.select([*names, BUCKET_COLUMN, ROW_KIND_COLUMN])
        finally:
            for assigner in assigners.values():
                assigner.close()
            shutil.rmtree(work, ignore_errors=True)

    out_schema = StructType([f for f in df.schema.fields if f.name != kind_column]
                            + [StructField(BUCKET_COLUMN, IntegerType(), False),
                               StructField(ROW_KIND_COLUMN, StringType(), False)])
    return _routed(df, channel_of, channels).mapInArrow(assign, out_schema)


def compact(spark: SparkSession, path: str, full: bool = False, options: dict[str, Any] | None = None,
            partitions: str | list[dict[str, Any]] | Callable[[bytes], bool] | None = None) -> Snapshot | None:
    """Compact a table's buckets in Spark tasks; commit one COMPACT snapshot.

    Runs alongside writers: their new files are untouched. Returns the snapshot, or None if no
    bucket needed compaction. ``partitions``: only these (`dt=x,hr=1;dt=y`, a list of dicts, or a function of a
    serialized partition). The job runs min(buckets to compact, the session's parallelism) tasks, as Paimon's
    readParallelism (the larger of spark.default.parallelism and spark.sql.shuffle.partitions).
    """
    table = Table.load(path, {**session_storage(spark), **{str(k): str(v) for k, v in (options or {}).items()}})
    accept = partitions if callable(partitions) else partition_filter(table, partitions)
    tasks = plan_compaction(table, full, partitions=accept)
    if not tasks:
        return None
    payload = [(i, pickle.dumps(t)) for i, t in enumerate(tasks)]
    result_schema = pa.schema([pa.field("message", pa.binary())])

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            out = [pickle.dumps(run_task(table, pickle.loads(blob), full))
                   for blob in b.column(b.schema.get_field_index("task")).to_pylist()]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.binary())], schema=result_schema)

    # Paimon's readParallelism: the larger of the default parallelism and the shuffle partitions (a Spark Connect
    # client has no SparkContext: the default parallelism only as far as the session's conf sets it)
    default = int(spark.conf.get("spark.default.parallelism", "1") or 1) if is_connect(spark) \
        else spark.sparkContext.defaultParallelism
    parallelism = max(default, int(spark.conf.get("spark.sql.shuffle.partitions", "200")))
    jobs = spark.createDataFrame(payload, "i int, task binary").repartition(min(len(tasks), parallelism), "i")
    rows = jobs.mapInArrow(run, "message binary").collect()
    return table.new_commit().commit_or_abort([m for r in rows for m in pickle.loads(r["message"])])
