"""Batch writer: tasks run TableWrite and return commit messages; the driver runs TableCommit."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from ..format.partition import PartitionFilter
from ..index.cross_partition import needs_global_index
from ..io.names import is_job_file, new_job_prefix
from ..mergetree.files import MAX_WRITE_TASKS
from ..operation.messages import CommitMessage
from ..operation.stream_commit import StreamCommit
from ..operation.write import BucketRestore
from ..options import OptionError, Options, parse_bool
from ..table import Table
from .options import (
    BASE_SNAPSHOT_OPTION,
    BUCKET_COLUMN,
    CLUSTERED_OPTION,
    COMMIT_IDENTIFIER_OPTION,
    COMMIT_USER_OPTION,
    OVERWRITE_PARTITION_OPTION,
    REPLACE_FILES_OPTION,
    ROW_KIND_COLUMN_OPTION,
)
from .types import input_arrow_schema

log = logging.getLogger(__name__)


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: list[CommitMessage]


def dynamic_overwrite(options: dict[str, str]) -> bool:
    """Paimon's Spark semantics: overwrite replaces the whole table unless dynamic mode is asked for."""
    mode = options.get("partitionoverwritemode")
    if mode is not None:
        if mode.lower() not in ("static", "dynamic"):
            raise OptionError(f"partitionOverwriteMode must be static or dynamic, got {mode!r}")
        return mode.lower() == "dynamic"
    return Options(options).get("dynamic-partition-overwrite")


class PaimonBatchWriter(DataSourceArrowWriter):
    def __init__(self, path: str, options: dict[str, str], schema: StructType, overwrite: bool,
                 storage_options: dict | None, job_options: dict[str, str] | None = None) -> None:
        """``job_options``: set by the package's own jobs: a row-kind column (row-level changes to a
        primary-key table), files to replace (copy-on-write on an append table), a static partition
        to overwrite (JSON {key: value}; INSERT OVERWRITE ... PARTITION)."""
        job_options = job_options or {}
        self.overwrite = overwrite
        self.dynamic = dynamic_overwrite(options)
        table_opts = {k: v for k, v in options.items() if k != "partitionoverwritemode"}
        self.row_kind_column = job_options.get(ROW_KIND_COLUMN_OPTION)
        input_schema = input_arrow_schema(schema)
        # columns of the package's own jobs, not of the table: row kinds, and buckets its assigners gave
        for extra in (self.row_kind_column, BUCKET_COLUMN):
            if extra is not None and extra in input_schema.names:
                input_schema = input_schema.remove(input_schema.get_field_index(extra))
        replace = job_options.get(REPLACE_FILES_OPTION)
        self.replace_files: list[str] | None = json.loads(replace) if replace is not None else None
        static = job_options.get(OVERWRITE_PARTITION_OPTION)
        self.static_partition: dict | None = json.loads(static) if static is not None else None
        # Resolve (and check) the table on the driver at planning time: bad input fails before any task.
        self.table = Table.for_write(path, input_schema, table_opts, storage_options)
        if BUCKET_COLUMN not in schema.names:  # the package's own shuffle gives cross-partition rows their bucket
            refuse_cross_partition(self.table, "df.write.format('paimon') / INSERT")
        self.commit_user = job_options.get(COMMIT_USER_OPTION)
        identifier = job_options.get(COMMIT_IDENTIFIER_OPTION)
        self.commit_identifier = int(identifier) if identifier is not None else None
        self.partition_filter = None
        if self.static_partition is not None:
            t = self.table
            self.partition_filter = PartitionFilter(t.partition_keys, [f.type for f in t.table_schema.partition_fields],
                                                    [self.static_partition], t.options.get("partition.default-name"))
        # Every data file of this job is named with this prefix, so abort() can find the files of
        # tasks whose commit messages never reach the driver (see abort()).
        self.job_prefix = new_job_prefix()
        # Primary-key tables: where each bucket's sequence numbers stand, read once here, and
        # whether the input was clustered by bucket (paimon_ds.write does that) so tasks own buckets.
        self.clustered = parse_bool(options.get(CLUSTERED_OPTION, "false"))
        base = job_options.get(BASE_SNAPSHOT_OPTION)
        self.restore = BucketRestore.from_table(self.table, with_files=self.clustered,
                                                snapshot_id=int(base) if base else None) \
            if self.table.table_schema.primary_keys else None

    @property
    def _abort_marker(self) -> str:
        return f"{self.table.root}/{ABORT_MARKER_DIR}/{self.job_prefix}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        table_write = self.table.new_write(job_prefix=self.job_prefix, row_kind_column=self.row_kind_column,
                                           overwrite=self.overwrite, **self._task_layout())
        try:
            for batch in iterator:
                table_write.write_arrow(batch)
            messages = table_write.prepare_commit()
        except BaseException:
            table_write.abort()  # a failed task leaves no files behind
            raise
        if self.table.io.exists(self._abort_marker):
            # A task that outlived its aborted job (killed task, see abort()): its files go too.
            self.table.new_commit().abort(messages)
            raise RuntimeError(f"the write job {self.job_prefix} to {self.table.path} was aborted")
        return PaimonCommitMessage(messages)

    def _task_layout(self) -> dict:
        if self.restore is not None and self.clustered:
            return {"restore": self.restore, "clustered": True}
        return task_sequence_layout(self.restore, self.table.path)

    def commit(self, messages: list[PaimonCommitMessage | None]) -> None:
        all_messages = [m for pm in messages if pm is not None for m in pm.messages]
        commit = self.table.new_commit()
        if self.commit_identifier is not None:  # one micro-batch of foreach_batch_writer: committed once
            StreamCommit(self.table, self.commit_user).commit(
                all_messages, self.commit_identifier, overwrite=self.overwrite,
                base_snapshot_id=self.restore.snapshot_id if self.restore else None)
        elif self.replace_files is not None:
            commit.replace_files(all_messages, self.replace_files)
        elif self.partition_filter is not None:
            commit.overwrite(all_messages, partitions=self.partition_filter)
        elif not self.overwrite:
            commit.commit(all_messages, base_snapshot_id=self.restore.snapshot_id if self.restore else None)
        elif self.dynamic and self.table.partition_keys:
            commit.overwrite(all_messages, partitions={m.partition for m in all_messages})
        else:
            commit.overwrite(all_messages)

    def abort(self, messages: list[PaimonCommitMessage | None]) -> None:
        """Delete every file of the job, also those of failed and killed tasks.

        Spark hands abort() only the messages of tasks that succeeded. A task whose input failed
        upstream (a UDF raising) sees a normal end of input and writes its files, and a killed task
        may still be writing when abort() runs. So: mark the job aborted (tasks finishing later
        check the mark and delete their own files), then delete all files carrying the job's prefix.
        """
        io = self.table.io
        try:
            io.write_bytes(self._abort_marker, b"")
        except OSError as e:  # the job's files are still deleted below; only late tasks' files may remain
            log.warning("abort of a write to %s: could not write the abort mark (%s); files of tasks still "
                        "running may be left behind", self.table.path, e)
        self.table.new_commit().abort([m for pm in messages if pm is not None for m in pm.messages])
        delete_job_files(self.table, self.job_prefix)


def task_sequence_layout(restore: BucketRestore | None, path: str) -> dict:
    """TableWrite arguments of this task of a write whose tasks may share buckets: its Spark partition
    id orders its rows after those of lower partitions (see mergetree.files.RUNS_PER_TASK)."""
    if restore is None:
        return {}
    ctx = TaskContext.get()
    task = ctx.partitionId() if ctx is not None else 0
    if task >= MAX_WRITE_TASKS:
        # the bound keeps a commit's advance of a bucket's sequence numbers to 2**32
        raise RuntimeError(f"more than {MAX_WRITE_TASKS} tasks write primary-key table {path} at once; "
                           "coalesce the DataFrame or use paimon_ds.write() (clustered by bucket)")
    # no routing of keys between tasks: dynamic buckets come from the base snapshot's index alone
    return {"restore": restore, "task": task, "independent": True}


def refuse_cross_partition(table: Table, entry: str) -> None:
    """Refuse, before any task runs, a write to a cross-partition upsert table without the package's shuffle.

    Such a table's key may move between partitions, so every row's (partition, bucket) comes from the table's
    global key index, bootstrapped from the data. paimon_ds.write builds it once per assigner of its shuffle;
    without a shuffle every task of the write would have to build the whole index (at 100M keys 125 s and
    3.3 GB of disk each, see the README), so these writes are refused instead."""
    if needs_global_index(table.table_schema, table.bucket):
        missing = [k for k in table.partition_keys if k not in table.table_schema.primary_keys]
        raise OptionError(
            f"{entry} cannot write {table.path}: it is a cross-partition upsert table (its primary key "
            f"{list(table.table_schema.primary_keys)} lacks the partition key(s) {missing}, bucket=-1), whose rows get "
            "their partition and bucket from a global key index that needs a shuffle Spark cannot give a Python "
            "data source. Nothing was written. Write it with paimon_ds.write(df, path), INSERT through "
            "paimon_ds.sql(spark, ...), or stream with foreachBatch(paimon_ds.foreach_batch_writer(path, "
            "commit_user)); or add the partition keys to the primary key")


def delete_job_files(table: Table, job_prefix: str) -> None:
    """Delete every data file named with the job's prefix (files of tasks whose messages never came)."""
    try:
        found = table.io.fs.find(table.root)
    except FileNotFoundError:
        found = []
    for path in found:
        if is_job_file(path.rsplit("/", 1)[-1], job_prefix):
            table.io.delete_quietly(path)
    # files placed under `data-file.external-paths` roots (the job prefix is unique, so shared roots are safe)
    for root in table.options.get("data-file.external-paths") or []:
        fs, base, _ = table.io.locate(root)
        try:
            found = fs.find(base)
        except (FileNotFoundError, OSError):
            continue
        for path in found:
            if is_job_file(path.rsplit("/", 1)[-1], job_prefix):
                fs.rm(path)


# Hidden (Hadoop and Paimon skip names starting with '.'), under the table: marks aborted write jobs.
ABORT_MARKER_DIR = ".paimon_ds-aborted"
