"""Dedicated compaction (Paimon's compact action): plan per bucket on the driver, compact per task.

Each bucket is compacted by exactly one task, which reads its files as of one snapshot and returns
a CommitMessage with compact_before/compact_after; the driver commits them as one COMPACT snapshot
that fails (and is retried by the caller) if another compaction removed any of the inputs meanwhile.
Writers may keep appending: their new files have higher sequence numbers and are untouched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from ..deletionvectors.index_file import deletion_files, dv_index_files
from ..deletionvectors.maintainer import DeletionVectorsMaintainer, dv_enabled
from ..format.partition import POSTPONE_BUCKET
from ..io.data_files import AppendFileWriter
from ..io.names import DataFileNamer
from ..manifest.meta import DataFileMeta, FileSource
from ..mergetree.changelog import lookup_compaction
from ..mergetree.compact import CompactionOptions, UniversalCompaction, sorted_runs
from ..mergetree.engine import FirstRow
from ..mergetree.expire import RecordExpiry
from ..mergetree.merge import merge_engine
from ..mergetree.writer import MergeTreeWriter
from ..options.registry import WRITE, OptionError, check_supported
from ..schema.checks import check_writable
from ..snapshot.manager import BATCH_COMMIT_IDENTIFIER, Snapshot
from ..store.row_tracking import data_evolution_enabled, row_tracking_enabled, system_fields
from .after_commit import maintain
from .commit import BucketCompactor, TableCommit
from .messages import CommitMessage
from .postpone import PostponeTask, plan_postpone, run_postpone_compaction
from .read import TableRead
from .scan import Split, TableScan
from .tracking_compact import TrackedFileWriter, in_row_id_order

if TYPE_CHECKING:
    from ..store.file_store import FileStore


class CompactionCancelled(Exception):
    """A compaction stopped between buckets (its writer aborted); the files it wrote are deleted."""


@dataclass
class BucketTask:
    partition: bytes
    bucket: int
    total_buckets: int
    directory: str
    partition_path: str
    files: list[DataFileMeta]
    dv_index_files: list = field(default_factory=list)  # deletion-vector tables: the bucket's DV index files


def pick_small_files(files: list[DataFileMeta], target_size: int, min_files: int,
                     full: bool = False, with_deletions: frozenset[str] = frozenset()) -> list[DataFileMeta] | None:
    """Append tables (Paimon's BucketedAppendCompactManager): slide a window over the small files in
    sequence order and take it once it holds ``min_files`` files, dropping its oldest file whenever
    it reaches twice the target size; ``full``: every small file, if there are two or more, and every file
    with a deletion vector (``with_deletions``), which Paimon 1.x's full compaction always rewrites, alone too."""
    if full:
        picked = sorted((f for f in files if f.file_size < target_size or f.file_name in with_deletions),
                        key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
        return picked if len(picked) >= 2 or any(f.file_name in with_deletions for f in picked) else None
    small = sorted((f for f in files if f.file_size < target_size),
                   key=lambda f: (f.min_sequence_number, f.creation_time or 0, f.file_name))
    window: list[DataFileMeta] = []
    size = 0
    for f in small:
        window.append(f)
        size += f.file_size
        if len(window) >= min_files:
            return window
        if size >= 2 * target_size:
            size -= window.pop(0).file_size
    return None


def plan_compaction(table: FileStore, full: bool = False, only: set[tuple[bytes, int]] | None = None,
                    partitions: Callable[[bytes], bool] | None = None) -> list[BucketTask | PostponeTask]:
    """The buckets worth compacting (all with more than one run, or not yet at the top level, if full;
    append tables: enough small files); ``only``: just these (partition, bucket)s; ``partitions``: just
    the partitions it accepts (a format.partition.PartitionFilter). A postpone-bucket table's partition with rows
    in its postpone bucket is one PostponeTask (operation/postpone.py), which compacts its real buckets too."""
    check_supported(table.options, WRITE, table.path)  # a compaction writes and commits too
    if data_evolution_enabled(table.options):
        raise OptionError(f"compaction of data-evolution table {table.path} (data-evolution.enabled) is not supported "
                          "by this version of paimon_ds: its files of one row-id range hold different columns; "
                          "nothing was changed")
    scan = TableScan(table)
    entries = scan.read_entries(table.latest_snapshot())
    tasks: list[BucketTask | PostponeTask] = []
    if table.bucket == POSTPONE_BUCKET and table.table_schema.primary_keys and only is None:
        # the postpone compaction writes what a write of this table may write
        check_writable(table.path, table.table_schema, table.options)
        tasks += plan_postpone(table, entries, scan.partition_dir, partitions)
        moved = {t.partition for t in tasks}
        entries = [e for e in entries if e.partition not in moved]
    groups: dict[tuple[bytes, int], list] = defaultdict(list)
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            continue
        groups[(e.partition, e.bucket)].append(e)
    opts = CompactionOptions.from_options(table.options)
    strategy = UniversalCompaction(opts)
    first_row = bool(table.table_schema.primary_keys) and isinstance(
        merge_engine(table.table_schema, table.options), FirstRow)
    # tables that compact with lookup (Paimon's ForceUpLevel0Compaction): level 0 always goes up
    force_level0 = bool(table.table_schema.primary_keys) and lookup_compaction(table.options, first_row)
    dv_files = dv_index_files(table.store, scan.snapshot) if dv_enabled(table.store) else None
    # full: rewrite files with expired records
    expiry = RecordExpiry.of(table.store) if table.table_schema.primary_keys else None
    for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if only is not None and (partition, bucket) not in only:
            continue
        if partitions is not None and not partitions(partition):
            continue
        files = [e.file for e in group]
        if not table.table_schema.primary_keys:
            deleted_in = frozenset(name for meta in (dv_files or {}).get((partition, bucket), [])
                                   for name, _, _ in (meta.dv_ranges or ()))
            picked = pick_small_files(files, table.options.get("target-file-size"),
                                      table.options.get("compaction.min.file-num"), full, deleted_in)
            if picked:
                tasks.append(_bucket_task(table, scan, partition, bucket, group[0].total_buckets, picked))
                if dv_files is not None:
                    tasks[-1].dv_index_files = dv_files.get((partition, bucket), [])
            continue
        runs = sorted_runs(files)
        if full or first_row:  # first-row: keys must stay in one run (see UniversalCompaction.pick_first_row)
            unit = strategy.pick_full(opts.num_levels, runs, rewrite=expiry.expired_file if expiry and full else None)
        else:
            # a look ahead: the compaction's writer picks again, and records an optimization compaction
            unit = strategy.pick(opts.num_levels, runs, bucket=f"{table.root}/{scan.bucket_dir(partition, bucket)}",
                                 record=False)
        if unit is None and force_level0:
            unit = strategy.pick_force_level0(opts.num_levels, runs)
        if unit is None:
            continue
        tasks.append(_bucket_task(table, scan, partition, bucket, group[0].total_buckets, files))
        if dv_files is not None:
            tasks[-1].dv_index_files = dv_files.get((partition, bucket), [])
    return tasks


def _bucket_task(table: FileStore, scan: TableScan, partition: bytes, bucket: int, total_buckets: int,
                 files: list[DataFileMeta]) -> BucketTask:
    return BucketTask(partition, bucket, total_buckets, f"{table.root}/{scan.bucket_dir(partition, bucket)}",
                      scan.partition_dir(partition), files)


def run_append_compaction(table: FileStore, task: BucketTask) -> CommitMessage:
    """Rewrite an append bucket's small files (the task's) into files of the target size. Row-tracking tables'
    rows keep their _ROW_ID and _SEQUENCE_NUMBER (tracking_compact.TrackedFileWriter), in row-id order."""
    tracked = row_tracking_enabled(table.options)
    if tracked:
        files = in_row_id_order(task.files)
        writer: AppendFileWriter | TrackedFileWriter = TrackedFileWriter(table.store, task.directory, DataFileNamer())
        read = TableRead(table, pa.schema([*table.arrow_schema(), *system_fields()]))
    else:
        files = task.files
        writer = AppendFileWriter(table.store, task.directory, DataFileNamer())
        read = TableRead(table)
    # deletion-vector tables: the deleted rows are not rewritten, and the compacted files' vectors go
    dvs = DeletionVectorsMaintainer(table.store, task.partition, task.bucket, task.dv_index_files) \
        if task.dv_index_files else None
    new_dvs, old_dvs = [], []
    try:
        split = Split(task.partition, task.bucket, task.directory, files,
                      deletion_files=deletion_files(table.store, task.partition, task.bucket, task.dv_index_files))
        for batch in read.read(split):
            writer.add(batch)
        written = writer.close()
        if dvs is not None:
            for f in task.files:
                dvs.remove(f.file_name)
            new_dvs, old_dvs = dvs.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    if tracked:  # the files carry their rows' own sequence numbers
        after = written
    else:
        lo = min(f.min_sequence_number for f in task.files)
        hi = max(f.max_sequence_number for f in task.files)
        after = [replace(f, file_source=FileSource.COMPACT, min_sequence_number=lo, max_sequence_number=hi)
                 for f in written]
    return CommitMessage(task.partition, task.bucket, task.total_buckets, [], task.partition_path,
                         compact_before=task.files, compact_after=after, new_index_files=new_dvs,
                         deleted_index_files=old_dvs)


def run_compaction(table: FileStore, task: BucketTask, full: bool) -> CommitMessage:
    """Compact one bucket (the task's files) and describe the result."""
    if not table.table_schema.primary_keys:
        return run_append_compaction(table, task)
    dvs = DeletionVectorsMaintainer(table.store, task.partition, task.bucket, task.dv_index_files) \
        if dv_enabled(table.store) else None
    writer = MergeTreeWriter(table.store, merge_engine(table.table_schema, table.options), task.directory,
                             DataFileNamer(),
                             base_seq=0, restored=task.files, compact=True, full_compaction=full,
                             deletion_vectors=dvs)
    try:
        _, before, after = writer.prepare_commit()
        new_dvs, old_dvs = dvs.prepare_commit() if dvs is not None else ([], [])
    except BaseException:
        writer.abort()
        raise
    return CommitMessage(task.partition, task.bucket, task.total_buckets, [], task.partition_path,
                         compact_before=before, compact_after=after, new_index_files=new_dvs,
                         deleted_index_files=old_dvs, compact_changelog=writer.take_compact_changelog())


def run_task(table: FileStore, task: BucketTask | PostponeTask, full: bool) -> list[CommitMessage]:
    """A planned task's commit messages: a bucket's compaction, or a partition's postpone compaction."""
    if isinstance(task, PostponeTask):
        return run_postpone_compaction(table, task, full)
    return [run_compaction(table, task, full)]


def new_commit(table: FileStore, commit_user: str | None = None, compact_buckets: BucketCompactor | None = None,
               streaming: bool = False) -> TableCommit:
    """A commit of ``table`` that compacts the buckets its writers did not (in this process, or with
    ``compact_buckets``, a stream's own compaction) and runs the table's maintenance after each commit (expiry,
    partition expiration, automatic tags). ``streaming``: a stream's commit, which also compacts unaware-bucket
    append tables, as Paimon's Flink sink does. (Table.new_commit; it lives here, by the compaction it runs.)"""
    if compact_buckets is None:
        def compact_buckets(buckets: set[tuple[bytes, int]], full: bool, user: str, identifier: int
                            ) -> Snapshot | None:
            return compact_in_process(table, buckets, full, commit_user=user, identifier=identifier)
    return TableCommit(table, commit_user, compact_buckets, lambda snapshot: maintain(table, snapshot),
                       streaming=streaming)


def compact_in_process(table: FileStore, buckets: set[tuple[bytes, int]] | None, full: bool = False,
                       commit_user: str | None = None, identifier: int | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       partitions: Callable[[bytes], bool] | None = None,
                       cancelled: Callable[[], bool] | None = None):
    """Compact the given buckets (None: all) here, no Spark tasks, and commit a COMPACT snapshot; None if nothing to do.

    Used after a write whose writers did not compact the buckets it wrote (TableCommit's compaction: the
    committer is then the one owner of those buckets), by a stream's background compaction, and by the
    compact procedure without Spark. ``cancelled``: checked between buckets; the compaction stops, deleting
    what it wrote (CompactionCancelled).
    """
    fresh = table.reload()
    tasks = plan_compaction(fresh, full, only=buckets, partitions=partitions)
    if not tasks:
        return None
    commit = new_commit(fresh, commit_user)
    messages: list[CommitMessage] = []
    try:
        for done, t in enumerate(tasks, 1):
            if cancelled is not None and cancelled():
                raise CompactionCancelled(f"the compaction of {table.path} was cancelled; nothing was committed")
            messages += run_task(fresh, t, full)
            if progress is not None:
                progress(done, len(tasks))
    except BaseException:
        commit.abort(messages)
        raise
    return commit.commit_or_abort(messages, BATCH_COMMIT_IDENTIFIER if identifier is None else identifier)
