"""Dedicated compaction (Paimon's compact action): plan per bucket on the driver, compact per task.

Each bucket is compacted by exactly one task, which reads its files as of one snapshot and returns
a CommitMessage with compact_before/compact_after; the driver commits them as one COMPACT snapshot
that fails (and is retried by the caller) if another compaction removed any of the inputs meanwhile.
Writers may keep appending: their new files have higher sequence numbers and are untouched.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..format.partition import partition_path
from ..manifest.meta import DataFileMeta
from ..mergetree.compact import CompactionOptions, UniversalCompaction, sorted_runs
from ..mergetree.merge import FirstRow, merge_engine
from ..mergetree.writer import MergeTreeWriter
from ..snapshot import BATCH_COMMIT_IDENTIFIER
from ..types import SchemaError
from .messages import CommitMessage
from .scan import TableScan
from .write import DataFileNamer

if TYPE_CHECKING:
    from ..table import Table


@dataclass
class BucketTask:
    partition: bytes
    bucket: int
    total_buckets: int
    directory: str
    partition_path: str
    files: list[DataFileMeta]


def plan_compaction(table: Table, full: bool = False, only: set[tuple[bytes, int]] | None = None
                    ) -> list[BucketTask]:
    """The buckets worth compacting (all with more than one run, or not yet at the top level, if full);
    ``only``: just these (partition, bucket)s."""
    if not table.schema.primary_keys:
        raise SchemaError("compaction of append tables is not supported yet; compact primary-key tables")
    scan = TableScan(table)
    entries = scan.read_entries(table.latest_snapshot())
    groups: dict[tuple[bytes, int], list] = defaultdict(list)
    for e in entries:
        groups[(e.partition, e.bucket)].append(e)
    opts = CompactionOptions.from_options(table.options)
    strategy = UniversalCompaction(opts)
    default_name = table.options.get("partition.default-name")
    tasks = []
    force_up = isinstance(merge_engine(table.schema, table.options), FirstRow)
    for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if only is not None and (partition, bucket) not in only:
            continue
        files = [e.file for e in group]
        runs = sorted_runs(files)
        if full or force_up:  # first-row: keys must stay in one run (see UniversalCompaction.pick_first_row)
            unit = strategy.pick_full(opts.num_levels, runs)
        else:
            unit = strategy.pick(opts.num_levels, runs)
        if unit is None:
            continue
        rel = partition_path(table.schema.partition_keys, scan._partition_values(partition), default_name) \
            if table.schema.partition_keys else ""
        directory = f"{table.root}/{rel}/bucket-{bucket}" if rel else f"{table.root}/bucket-{bucket}"
        tasks.append(BucketTask(partition, bucket, group[0].total_buckets, directory, rel, files))
    return tasks


def run_compaction(table: Table, task: BucketTask, full: bool) -> CommitMessage:
    """Compact one bucket (the task's files) and describe the result."""
    writer = MergeTreeWriter(table, merge_engine(table.schema, table.options), task.directory, DataFileNamer(),
                             base_seq=0, restored=task.files, compact=True, full_compaction=full)
    try:
        _, before, after = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return CommitMessage(task.partition, task.bucket, task.total_buckets, [], task.partition_path,
                         compact_before=before, compact_after=after)


def compact_in_process(table: Table, buckets: set[tuple[bytes, int]], full: bool = False,
                       commit_user: str | None = None, identifier: int | None = None):
    """Compact the given buckets here (no Spark tasks) and commit a COMPACT snapshot; None if nothing to do.

    Used after a non-clustered write to a first-row table, whose level-0 files Paimon's readers skip:
    the driver is then the one owner of those buckets' compaction.
    """
    from ..table import Table as _Table
    fresh = _Table.load(table.path, table.dynamic_options, table.storage_options)
    tasks = plan_compaction(fresh, full, only=buckets)
    if not tasks:
        return None
    commit = fresh.new_commit(commit_user)
    messages = []
    try:
        for t in tasks:
            messages.append(run_compaction(fresh, t, full))
    except BaseException:
        commit.abort(messages)
        raise
    return commit.commit_or_abort(messages, BATCH_COMMIT_IDENTIFIER if identifier is None else identifier)
