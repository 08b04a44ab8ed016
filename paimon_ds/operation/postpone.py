"""Postpone-bucket tables (Paimon 1.x, `bucket` = -2): each partition's number of buckets, and the compaction that
moves the rows of a partition's postpone bucket into its real buckets.

Batch reads see only real buckets (DataTableBatchScan: onlyReadRealBuckets), so rows written to a postpone bucket
(mergetree/postpone.py) are invisible to them until this compaction, as in Paimon. It is Paimon's postpone
compaction (Flink's CompactAction / Spark's SparkPostponeCompactProcedure), one partition per task:

- a partition's bucket count is the one its real buckets have (every real file's `_TOTAL_BUCKETS`), or, for a
  partition without any, ceil(postpone rows / `postpone.target-row-num-per-bucket`) when that is set, else
  `postpone.default-bucket-num` (PostponeUtils.determineBucketNum; Paimon's Flink compaction defaults to it);
- the postpone files are read writer by writer (the name up to `-w-`), each writer's files in creation order,
  every record as it was written (no merge: MergeFileSplitRead's no-merge reader for the postpone bucket);
- each row goes to its bucket by the fixed-bucket hash of its bucket key and is written there by the bucket's
  merge-tree writer, which numbers it after the bucket's files, so a later row wins; the bucket is compacted as a
  write would compact it (universal compaction, or everything with ``full``);
- one COMPACT snapshot removes the postpone files and adds the new files (BucketFiles.makeMessage: new files are
  compaction output, so streaming readers, which already read the postpone rows, do not read them again).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.bucket import row_hashes
from ..format.partition import POSTPONE_BUCKET, bucket_path
from ..io.names import DataFileNamer, postpone_writer_prefix
from ..manifest.meta import DataFileMeta, ManifestEntry
from ..mergetree.files import read_kv_file
from ..mergetree.kv import KIND, KeyValueLayout
from ..mergetree.merge import merge_engine
from ..mergetree.writer import MergeTreeWriter
from .messages import CommitMessage

if TYPE_CHECKING:
    from ..store.file_store import FileStore


class PostponeError(ValueError):
    """A postpone-bucket table whose files disagree on a partition's number of buckets."""


def known_bucket_counts(table: FileStore, entries: Iterable[ManifestEntry]) -> dict[bytes, int]:
    """Each partition's number of real buckets, from its real-bucket files (PostponeUtils.getKnownNumBuckets)."""
    known: dict[bytes, int] = {}
    for e in entries:
        if e.bucket < 0 or e.total_buckets < 0:
            continue
        previous = known.setdefault(e.partition, e.total_buckets)
        if previous != e.total_buckets:
            raise PostponeError(f"a partition of {table.path} has files of {previous} and of {e.total_buckets} buckets "
                                "(Paimon refuses such a table as well)")
    return known


def bucket_count(table: FileStore, partition: bytes, known: dict[bytes, int], postpone_rows: int) -> int:
    """The buckets a compaction gives a partition (PostponeUtils.determineBucketNum)."""
    if partition in known:
        return known[partition]
    target = table.options.get("postpone.target-row-num-per-bucket")
    if target is not None:
        return max(1, (postpone_rows - 1) // target + 1)
    return table.options.get("postpone.default-bucket-num")


@dataclass
class PostponeTask:
    """One partition of a postpone compaction: its postpone files, in the order they are read, and the files of
    its real buckets as of the same snapshot."""

    partition: bytes
    partition_path: str
    num_buckets: int
    files: list[DataFileMeta]
    bucket_files: dict[int, list[DataFileMeta]] = field(default_factory=dict)


def read_order(files: list[DataFileMeta]) -> list[DataFileMeta]:
    """Postpone files writer by writer, each writer's in creation order (PostponeUtils.groupPostponeFiles; writers
    have no order among themselves: here the one whose first file is oldest goes first)."""
    by_writer: dict[str, list[DataFileMeta]] = {}
    for f in files:
        by_writer.setdefault(postpone_writer_prefix(f.file_name), []).append(f)
    groups = [sorted(g, key=lambda f: (f.creation_time is None, f.creation_time, f.file_name))
              for g in by_writer.values()]
    groups.sort(key=lambda g: (g[0].creation_time is None, g[0].creation_time, g[0].file_name))
    return [f for g in groups for f in g]


def plan_postpone(table: FileStore, entries: Iterable[ManifestEntry], partition_path,
                  partitions=None) -> list[PostponeTask]:
    """A task for every partition with postpone files (``partitions``: only those it accepts)."""
    entries = list(entries)
    known = known_bucket_counts(table, entries)
    postponed: dict[bytes, list[DataFileMeta]] = {}
    real: dict[bytes, dict[int, list[DataFileMeta]]] = {}
    for e in entries:
        if e.bucket == POSTPONE_BUCKET:
            postponed.setdefault(e.partition, []).append(e.file)
        else:
            real.setdefault(e.partition, {}).setdefault(e.bucket, []).append(e.file)
    tasks = []
    for partition in sorted(postponed):
        if partitions is not None and not partitions(partition):
            continue
        files = read_order(postponed[partition])
        n = bucket_count(table, partition, known, sum(f.row_count for f in files))
        tasks.append(PostponeTask(partition, partition_path(partition), n, files, real.get(partition, {})))
    return tasks


def _postpone_rows(table: FileStore, task: PostponeTask) -> Iterator[pa.Table]:
    directory = f"{table.root}/{bucket_path(task.partition_path, POSTPONE_BUCKET)}"
    for f in task.files:
        yield from read_kv_file(table.store, f.external_path or f"{directory}/{f.file_name}", f.schema_id,
                                size=f.file_size)


def _bound_memory(writers: Iterable[MergeTreeWriter], limit: int) -> None:
    """Keep the writers' buffers within `write-buffer-size`: the largest spills (or writes a run) first."""
    writers = list(writers)
    total = sum(w.pending_bytes for w in writers)
    while total > limit:
        largest = max(writers, key=lambda w: w.pending_bytes)
        total -= largest.pending_bytes
        largest.flush_memory()


def run_postpone_compaction(table: FileStore, task: PostponeTask, full: bool = False) -> list[CommitMessage]:
    """Move one partition's postpone rows into its buckets and compact them; the commit messages (compaction
    only: the postpone files before, the new and compacted files after)."""
    engine = merge_engine(table.table_schema, table.options)
    layout = KeyValueLayout(table.table_schema)
    key_types = [table.table_schema.field(k).type for k in table.table_schema.bucket_keys]
    key_index = [layout.kv_schema.get_field_index(k) for k in table.table_schema.bucket_keys]
    namer = DataFileNamer()
    writers: dict[int, MergeTreeWriter] = {}
    try:
        for kv in _postpone_rows(table, task):
            rows = kv.select(list(range(len(layout.key_columns) + 2, kv.num_columns)))
            buckets = np.abs(np.fmod(row_hashes([kv.column(i) for i in key_index], key_types).astype(np.int64),
                                     task.num_buckets)).astype(np.int32)
            kinds = kv.column(KIND).to_numpy()
            for b in np.unique(buckets).tolist():
                w = writers.get(b)
                if w is None:
                    restored = task.bucket_files.get(b, [])
                    base = max((f.max_sequence_number for f in restored), default=-1)
                    directory = f"{table.root}/{bucket_path(task.partition_path, b)}"
                    w = writers[b] = MergeTreeWriter(table.store, engine, directory, namer, base, restored=restored,
                                                     compact=True, full_compaction=full)
                mine = buckets == b
                w.write(rows.filter(pa.array(mine)), kinds[mine])  # in the order read: a later row wins
            _bound_memory(writers.values(), table.options.get("write-buffer-size"))
        messages = [CommitMessage(task.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, [], task.partition_path,
                                  compact_before=list(task.files))]
        for b, w in sorted(writers.items()):
            new, before, after = w.prepare_commit()
            # new files are compaction output here (BucketFiles.makeMessage); one the compaction consumed goes
            new_names, compacted = {f.file_name for f in new}, {f.file_name for f in before}
            kept = {f.file_name for f in after}  # a file only moved up a level stays
            for f in new:
                if f.file_name in compacted and f.file_name not in kept:
                    table.io.delete_quietly(f.external_path or f"{w.directory}/{f.file_name}")
            after = [f for f in new if f.file_name not in compacted] + after
            before = [f for f in before if f.file_name not in new_names]
            messages.append(CommitMessage(task.partition, b, task.num_buckets, [], task.partition_path,
                                          compact_before=before, compact_after=after))
        return messages
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
