"""Structured Streaming: the micro-batch writer (exactly once) and the snapshot-offset reader.

Spark builds a new stream writer for every micro-batch, one instance for the tasks and another for
the driver's commit, in different processes; what they share comes from the options, the table
and the tasks' commit messages. Tasks learn the query id and batch id from the local properties
Spark sets on every micro-batch job.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (  # admission control, Trigger.AvailableNow
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ..operation.messages import CommitMessage
from ..operation.stream import StreamLimit, StreamPosition, StreamScan
from ..operation.stream_commit import StreamCommit
from ..operation.write import BucketRestore
from ..options.registry import OptionError, Options
from ..table import Table
from .options import ROW_KIND_COLUMN_OPTION
from .python_worker import WorkerSide
from .types import arrow_schema_for_spark, input_arrow_schema
from .write import PaimonCommitMessage, delete_job_files, refuse_cross_partition, task_sequence_layout

log = logging.getLogger(__name__)

# Local properties Spark's MicroBatchExecution sets on the jobs of a micro-batch.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"



@dataclass
class StreamCommitMessage(PaimonCommitMessage):
    query_id: str | None = None
    base_snapshot_id: int | None = None


def stream_job_prefix(query_id: str, batch_id: str) -> str:
    """12 hex digits naming every data file of one micro-batch of one query (see abort())."""
    return hashlib.sha1(f"{query_id}/{batch_id}".encode()).hexdigest()[:12]


def stream_commit_user(options: dict[str, str], query_id: str) -> str:
    """The streaming query's id (Spark keeps it in the checkpoint, so it survives restarts)."""
    prefix = options.get("commit.user-prefix")
    return (f"{prefix}_" if prefix else "") + f"spark-stream-{query_id}"


class PaimonStreamWriter(WorkerSide, DataSourceStreamArrowWriter):
    def __init__(self, path: str, options: dict[str, str], schema: StructType, overwrite: bool,
                 storage_options: dict | None) -> None:
        self.options = options
        self.overwrite = overwrite  # complete output mode
        self.input_schema = input_arrow_schema(schema)
        self.table = Table.for_write(path, self.input_schema, options, storage_options)
        refuse_cross_partition(self.table, "writeStream.format('paimon')")
        self.restore = BucketRestore.from_table(self.table) if self.table.table_schema.primary_keys else None

    def write(self, iterator: Iterator) -> StreamCommitMessage:
        ctx = TaskContext.get()
        query_id = ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None
        batch_id = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
        if not query_id or batch_id is None:
            raise RuntimeError("the paimon stream writer runs outside a Structured Streaming micro-batch "
                               f"(no {QUERY_ID_PROPERTY!r} / {BATCH_ID_PROPERTY!r} in the task's properties)")
        layout = task_sequence_layout(self.restore, self.table.path)
        table_write = self.table.new_write(job_prefix=stream_job_prefix(query_id, batch_id), overwrite=self.overwrite,
                                           **layout)
        try:
            for batch in iterator:  # micro-batches reach the writer as Arrow batches
                table_write.write_arrow(batch)
            messages = table_write.prepare_commit()
        except BaseException:
            table_write.abort()
            raise
        return StreamCommitMessage(messages, query_id,
                                   self.restore.snapshot_id if self.restore is not None else None)

    @staticmethod
    def _unpack(messages: list) -> tuple[list[CommitMessage], str | None, int | None]:
        present = [m for m in messages if m is not None]
        query_ids = {m.query_id for m in present}
        if len(query_ids) > 1:
            raise RuntimeError(f"one micro-batch carries messages of several queries: {sorted(query_ids)}")
        bases = [m.base_snapshot_id for m in present if m.base_snapshot_id is not None]
        return ([c for m in present for c in m.messages], next(iter(query_ids), None),
                min(bases) if bases else None)

    def commit(self, messages: list, batchId: int) -> None:
        commit_messages, query_id, base = self._unpack(messages)
        if query_id is None:
            return  # no task ran: nothing was written
        stream_commit = StreamCommit(self.table, stream_commit_user(self.options, query_id))
        try:
            stream_commit.commit(commit_messages, batchId, overwrite=self.overwrite, base_snapshot_id=base)
        except Exception as e:
            # raised after the batch's snapshot landed (the store's answer lost, a step after it failed): the batch
            # is committed, and the query goes on
            try:
                committed = stream_commit.is_committed(batchId)
            except Exception:  # noqa: BLE001 - cannot tell: the commit's own error is the one to report
                committed = False
            if not committed:
                raise
            log.warning("the commit of batch %s to %s raised after it landed; the batch is committed: %s",
                        batchId, self.table.path, e)

    def abort(self, messages: list, batchId: int) -> None:
        """Delete the batch's files: those of the tasks that finished, and every file named with the batch's
        prefix; nothing if the batch is committed (by this run: Spark aborts a batch whose commit() raised or whose
        Python worker died after the snapshot landed; or by an earlier run of the query), nor if that cannot be
        told (files no snapshot uses are orphans, which remove_orphan_files deletes). A batch that landed is
        skipped when the query restarts and replays it."""
        commit_messages, query_id, _ = self._unpack(messages)
        if query_id is None:
            return  # no task finished: a task's files go with it (TableWrite.abort)
        stream_commit = StreamCommit(self.table, stream_commit_user(self.options, query_id))
        stream_commit.cancel()  # the query's background compaction stops, deleting what it wrote
        try:
            committed = stream_commit.is_committed(batchId)
        except Exception as e:  # noqa: BLE001 - whatever the store said, deleting would be a guess
            log.error("abort of batch %s to %s deletes nothing: could not tell whether it was committed (%s). Files "
                      "no snapshot uses stay; remove_orphan_files deletes them", batchId, self.table.path, e)
            return
        if committed:
            log.warning("abort of batch %s to %s deletes nothing: the batch is committed (a restart of the query "
                        "skips it)", batchId, self.table.path)
            return
        self.table.new_commit().abort(commit_messages)
        delete_job_files(self.table, stream_job_prefix(query_id, str(batchId)))


# ---------------------------------------------------------------------------- reader
_LIMIT_OPTIONS = ("read.stream.maxFilesPerTrigger", "read.stream.maxRowsPerTrigger", "read.stream.maxBytesPerTrigger",
                  "read.stream.minRowsPerTrigger", "read.stream.maxTriggerDelayMs")


@dataclass
class StreamPartition(InputPartition):
    stream_split: object


class PaimonStreamReader(WorkerSide, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are positions in the table's snapshots (see paimon_ds.operation.stream)."""

    def __init__(self, table: Table, schema: StructType, options: dict[str, str]) -> None:
        self.table = table
        self.row_kind_column = options.get(ROW_KIND_COLUMN_OPTION)
        self.read_schema = arrow_schema_for_spark(schema)
        self.scan = StreamScan(table)
        self.scan.check_streamable()
        self.default_limit = _parse_limit(options)
        self.until_snapshot: int | None = None
        self.last_end: dict | None = None
        # when the last micro-batch that took splits was planned (time.monotonic); the driver keeps this reader for
        # the whole query, as Paimon's source keeps lastTriggerMillis
        self.last_batch_time: float | None = None

    def initialOffset(self) -> dict:
        return self.scan.initial_position().to_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        # Spark hands this limit back to latestOffset at every trigger (Trigger.AvailableNow too), and
        # ReadAllAvailable under Trigger.Once (measured, pyspark 4.3). pyspark's limits have no delay and no
        # composite, so this only names one of ours; latestOffset applies all of them (self.default_limit).
        limit = self.default_limit
        if limit.unlimited:
            return ReadAllAvailable()
        if limit.min_rows is not None:
            return ReadMinRows(limit.min_rows)
        if limit.max_files is not None:
            return ReadMaxFiles(limit.max_files)
        if limit.max_rows is not None:
            return ReadMaxRows(limit.max_rows)
        return ReadMaxBytes(limit.max_bytes)

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        if start is None:  # the no-argument form of Spark's API: continue from the last end
            start = self.last_end or self.initialOffset()
            limit = None
        else:
            # `consumer-id`: Spark plans the next micro-batch only once the one ending at `start` is committed by the
            # sink (its commit log written), so everything before `start` is consumed. commit(end) says the same,
            # but Spark calls it only once a next batch with data is planned: a query that goes idle, or an
            # availableNow run, would leave its consumer a batch behind, and a new query would read that batch
            # again (measured, pyspark 4.3). Both are recorded (commit's `end` is a `start` already recorded).
            self.scan.record_progress(StreamPosition.from_offset(start))
        # Spark passes back the default limit, or ReadAllAvailable (Trigger.Once: everything, as Paimon's source)
        stream_limit = None if limit is None or isinstance(limit, ReadAllAvailable) else self.default_limit
        # Paimon's PaimonMicroBatchStream: a batch under minRowsPerTrigger rows is held back until
        # maxTriggerDelayMs passed since the last batch that took splits; a query's first batch never is
        now = time.monotonic()
        hold = (stream_limit is not None and stream_limit.min_rows is not None and self.last_batch_time is not None
                and (now - self.last_batch_time) * 1000 <= stream_limit.max_delay_ms)
        begin = StreamPosition.from_offset(start)
        end_position = self.scan.latest_position(begin, stream_limit, self.until_snapshot, hold)
        if end_position != begin and self.scan.splits_between(begin, end_position):
            self.last_batch_time = time.monotonic()  # once planned, as Paimon sets lastTriggerMillis
        end = end_position.to_offset()
        self.last_end = end
        return end

    def reportLatestOffset(self) -> dict | None:
        latest = self.table.snapshot_manager.latest_id()
        return None if latest is None else StreamPosition(latest + 1).to_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        # Trigger.AvailableNow: read what is committed now, then stop.
        self.until_snapshot = self.table.snapshot_manager.latest_id() or 0

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        splits = self.scan.splits_between(StreamPosition.from_offset(start), StreamPosition.from_offset(end))
        return [StreamPartition(s) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        s = partition.stream_split
        read = self.table.new_read(_data_schema(self.read_schema, self.row_kind_column),
                                   row_kind_column=self.row_kind_column)
        yield from read.read(s.split, delta=s.delta, changelog=s.changelog)

    def commit(self, end: dict) -> None:
        position = StreamPosition.from_offset(end)
        self.scan.record_progress(position)  # Spark's own signal that the batch ending here is done
        self.scan.forget_before(position)


def _data_schema(schema: pa.Schema, row_kind_column: str | None) -> pa.Schema:
    if row_kind_column is not None and row_kind_column in schema.names:
        return schema.remove(schema.get_field_index(row_kind_column))
    return schema


def _parse_limit(options: dict[str, str]) -> StreamLimit:
    """The read.stream.* limits; minRowsPerTrigger and maxTriggerDelayMs only together (PaimonMicroBatchStream)."""
    opts = Options(options)  # Spark passes the keys lower-cased: Options.get finds them either way
    values = [opts.get(k) for k in _LIMIT_OPTIONS]
    if (values[3] is None) != (values[4] is None):
        raise OptionError("Can't provide only one of read.stream.minRowsPerTrigger and read.stream.maxTriggerDelayMs.")
    return StreamLimit(*values)
