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

from ..errors import CommitLandedError
from ..format.partition import PartitionFilter
from ..index.cross_partition import needs_global_index
from ..io.names import is_job_file, new_job_prefix
from ..mergetree.files import MAX_WRITE_TASKS
from ..operation.commit import new_commit_user
from ..operation.messages import CommitMessage
from ..operation.stream_commit import StreamCommit
from ..operation.write import BucketRestore
from ..options.registry import OptionError, Options, parse_bool
from ..snapshot.manager import Snapshot
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
from .python_worker import WorkerSide
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


class PaimonBatchWriter(WorkerSide, DataSourceArrowWriter):
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
        # Fixed here, at planning, not by the commit: abort() runs in another Python worker and must be able to
        # recognise the commit's snapshots (the worker that ran commit() may have died after one landed).
        self.commit_user = job_options.get(COMMIT_USER_OPTION) or new_commit_user(self.table.options)
        # the snapshots above it are the only ones this write's commit can have made
        self.start_snapshot_id = self.table.snapshot_manager.latest_id()
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
        try:
            self._commit(all_messages)
        except Exception as e:
            # A commit that raised after its snapshot landed (the store's answer lost, a step after it failed) did
            # commit: reported as failed, the job would be run again and its rows land twice.
            try:
                landed = self.landed_snapshot()
            except Exception:  # noqa: BLE001 - cannot tell: the commit's own error is the one to report
                landed = None
            if landed is None:
                raise
            log.warning("the commit of write job %s to %s raised after it landed as snapshot %d; the write is done: "
                        "%s", self.job_prefix, self.table.path, landed.id, e)

    def _commit(self, all_messages: list[CommitMessage]) -> None:
        commit = self.table.new_commit(self.commit_user)
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
        """Delete every file of the job, also those of failed and killed tasks, unless its commit landed.

        Spark hands abort() only the messages of tasks that succeeded. A task whose input failed
        upstream (a UDF raising) sees a normal end of input and writes its files, and a killed task
        may still be writing when abort() runs. So: mark the job aborted (tasks finishing later
        check the mark and delete their own files), then delete all files carrying the job's prefix.

        Spark also aborts when the driver's commit() failed, even after its snapshot landed (commit() raised
        after it, or the Python worker running it died). Then the files are the table's: nothing is deleted and
        CommitLandedError says so. When the snapshots cannot be read to tell, nothing is deleted either (files
        no snapshot uses are orphans, which remove_orphan_files deletes).
        """
        io = self.table.io
        try:
            # safe even if the commit landed: a task still running holds files no commit message brought
            io.write_bytes(self._abort_marker, b"")
        except OSError as e:  # the job's files are still deleted below; only late tasks' files may remain
            log.warning("abort of a write to %s: could not write the abort mark (%s); files of tasks still "
                        "running may be left behind", self.table.path, e)
        try:
            landed = self.landed_snapshot()
        except Exception as e:  # noqa: BLE001 - whatever the store said, deleting would be a guess
            log.error("abort of write job %s to %s deletes nothing: could not tell whether its commit landed (%s). "
                      "Files no snapshot uses stay; remove_orphan_files deletes them", self.job_prefix,
                      self.table.path, e)
            return
        if landed is not None:
            message = (f"the commit of this write to {self.table.path} landed as snapshot {landed.id} (commit user "
                       f"{self.commit_user}), although Spark reports the job failed: its rows are in the table. "
                       "Nothing was deleted; " + (
                           "do not run the write again, or its rows will be there twice" if self.commit_identifier
                           is None else f"a restart of the stream skips its batch {self.commit_identifier}"))
            log.error("%s", message)
            raise CommitLandedError(message)
        self.table.new_commit().abort([m for pm in messages if pm is not None for m in pm.messages])
        delete_job_files(self.table, self.job_prefix)

    def landed_snapshot(self) -> Snapshot | None:
        """The first snapshot this write's commit made (None: none landed); raises when that cannot be told."""
        return landed_snapshot(self.table, self.commit_user, self.start_snapshot_id, self.commit_identifier)


def landed_snapshot(table: Table, commit_user: str, after_id: int | None,
                    identifier: int | None = None) -> Snapshot | None:
    """The oldest snapshot above ``after_id`` that ``commit_user`` made (with commit identifier ``identifier``,
    if given), or None. Raises (StorageError, SnapshotNotFound) when that cannot be told: a store error, or a
    snapshot of that range gone (expired), which may have been the one."""
    sm = table.snapshot_manager
    latest = sm.latest_id()
    for sid in range((after_id or 0) + 1, (latest or 0) + 1):
        snapshot = sm.snapshot(sid)
        if snapshot.commit_user == commit_user and (identifier is None or snapshot.commit_identifier == identifier):
            return snapshot
    return None


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
