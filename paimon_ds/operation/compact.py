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
from ..mergetree.merge import merge_engine
from ..mergetree.writer import MergeTreeWriter
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


def plan_compaction(table: Table, full: bool = False) -> list[BucketTask]:
    """The buckets worth compacting (all with more than one run, or not yet at the top level, if full)."""
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
    for (partition, bucket), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        files = [e.file for e in group]
        runs = sorted_runs(files)
        unit = strategy.pick_full(opts.num_levels, runs) if full else strategy.pick(opts.num_levels, runs)
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
