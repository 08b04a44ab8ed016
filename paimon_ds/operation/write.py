"""The write side of a task: route rows to (partition, bucket) writers, roll parquet files.

Append tables only in this module: each (partition, bucket) gets a AppendFileWriter that buffers
batches into row groups and rolls files at `target-file-size`. Memory across all writers of a task
is bounded by `write-buffer-size`: when buffers exceed it the largest one is written out.
"""

from __future__ import annotations

import os
import random
import struct
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..casts.defaults import default_array, fill_defaults
from ..format.binary_row import EMPTY_ROW, encode_rows, serialize_arrow_row
from ..format.bucket import bucket_ids, row_hashes
from ..format.partition import POSTPONE_BUCKET, bucket_path, partition_path
from ..index.bucket_assigner import (
    BUCKET_COLUMN,
    DynamicBucketAssigner,
    is_dynamic_bucket,
    key_hashes,
    snapshot_index_entries,
)
from ..index.hash_index import HashIndexMaintainer
from ..index.keys import large_binary_array
from ..index.manifest import IndexFileMeta
from ..index.snapshot_assigner import SnapshotBucketAssigner
from ..io.data_files import AppendFileWriter
from ..io.names import DataFileNamer, PostponeFileNamer
from ..manifest.meta import DataFileMeta
from ..mergetree.compact import full_compaction_due, full_compaction_interval
from ..mergetree.engine import row_kind_filter
from ..mergetree.kv import ROW_KINDS
from ..mergetree.merge import merge_engine
from ..mergetree.postpone import PostponeBucketWriter
from ..mergetree.writer import MergeTreeWriter
from ..options.registry import OptionError
from ..schema.types import SchemaError, align_by_name, canonical_nans, conform_array, name_index, nulls_under_required
from ..store.external_paths import external_roots
from .messages import CommitMessage
from .postpone import known_bucket_counts
from .scan import TableScan

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# threads that close an append write's (partition, bucket) writers, each encoding its own file
CLOSE_WORKERS = max(1, min(8, os.cpu_count() or 1))


@dataclass
class BucketRestore:
    """What writers must know of the buckets already in the table, read once on the driver.

    ``max_sequence``: the highest sequence number of each (partition, bucket), so new rows go above
    it; ``files``: each bucket's live files, for writers that own their buckets and compact them;
    ``delta_commits``: how many commits (snapshots other than COMPACT) the table has had, counted
    only when writers compact fully every few commits (`full-compaction.delta-commits`; compaction snapshots must
    not advance it);
    ``index_files``: dynamic-bucket tables, each bucket's hash index file at the snapshot;
    ``total_buckets``: postpone-bucket tables (bucket=-2), each partition's number of real buckets
    (PostponeUtils.getKnownNumBuckets; a partition with none is absent).
    """

    snapshot_id: int | None = None
    max_sequence: dict[tuple[bytes, int], int] = field(default_factory=dict)
    files: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
    delta_commits: int = 0
    index_files: dict[tuple[bytes, int], IndexFileMeta] = field(default_factory=dict)
    total_buckets: dict[bytes, int] = field(default_factory=dict)

    @staticmethod
    def from_table(table: FileStore, with_files: bool = False, snapshot_id: int | None = None) -> BucketRestore:
        """At the latest snapshot, or at ``snapshot_id`` (the one a write's bucket assigners read)."""
        if snapshot_id is not None:
            snapshot = table.snapshot_manager.snapshot(snapshot_id)
        else:
            snapshot = table.latest_snapshot() if table.is_created else None
        restore = BucketRestore(snapshot.id if snapshot else None, {}, {} if with_files else None)
        if snapshot is None:
            return restore
        if (full_compaction_interval(table.options) or 1) > 1:  # every commit: nothing to count
            sm = table.snapshot_manager
            restore.delta_commits = sum(1 for s in sm.readable_snapshots([i for i in sm.list_ids() if i <= snapshot.id])
                                        if s.commit_kind != "COMPACT")
        entries = TableScan(table).read_entries(snapshot)
        for e in entries:
            key = (e.partition, e.bucket)
            restore.max_sequence[key] = max(restore.max_sequence.get(key, -1), e.file.max_sequence_number)
            if restore.files is not None:
                restore.files.setdefault(key, []).append(e.file)
        if table.bucket == POSTPONE_BUCKET:
            restore.total_buckets = known_bucket_counts(table, entries)
        if is_dynamic_bucket(table.store):
            for ie in snapshot_index_entries(table.store, snapshot):
                if (ie.partition, ie.bucket) in restore.index_files:
                    raise ValueError(f"snapshot {snapshot.id} of {table.path} has several hash index files for "
                                     f"bucket {ie.bucket} of one partition")
                restore.index_files[(ie.partition, ie.bucket)] = ie.index_file
        return restore


class TableWrite:
    """Buffers and writes a task's rows; `prepare_commit()` returns the CommitMessages.

    Primary-key tables: one MergeTreeWriter per (partition, bucket). ``task``: this write is the task
    with that Spark partition id of a write whose tasks may share buckets in one commit; each level-0
    run it writes then takes one sequence number, above those of lower tasks (mergetree.files.
    RUNS_PER_TASK). Without it, rows take per-row numbers as from Paimon's single writer. ``clustered``
    says this task owns its buckets (the package clustered the input), so it may compact them.

    Dynamic-bucket tables (bucket=-1): a batch carrying an int column `_paimon_ds_bucket` (BUCKET_COLUMN)
    is written to those buckets (assigned upstream, one assigner per key). Otherwise, with ``independent``
    (one of several tasks of a Spark write, which cannot route keys), buckets are a pure function of the
    key and the restore snapshot's hash index (SnapshotBucketAssigner); without it this write is the
    table's single assigner (DynamicBucketAssigner, filling buckets in order). Each message carries the
    hashes its bucket's index lacked; the commit merges them into the index file. ``overwrite``: the data
    replaces the partitions written, so the existing index is ignored (Paimon assigns and indexes afresh).
    """

    def __init__(self, table: FileStore, commit_user: str | None = None, job_prefix: str | None = None,
                 restore: BucketRestore | None = None, task: int | None = None,
                 clustered: bool = False, row_kind_column: str | None = None, overwrite: bool = False,
                 independent: bool = False, parallel_files: int = 1) -> None:
        """``row_kind_column``: an input column (not of the table) giving each row's kind (+I, -U, +U, -D);
        row-level DELETE / UPDATE / MERGE write their changes to primary-key tables through it.
        ``parallel_files``: an append writer may write a large row group as up to that many files encoded in
        parallel (AppendFileWriter); the Spark-free write sets it, a Spark task (one of several in parallel) not."""
        self.parallel_files = parallel_files
        self.table = table
        table.options.get("manifest.format")  # refuses tables with orc/parquet manifests before any file is written
        external_roots(table.store)  # refuses a bad `data-file.external-paths*` setting before any file is written
        self.row_kind_column = row_kind_column
        self.schema = table.table_schema
        self.arrow_schema = table.arrow_schema()
        self.namer = DataFileNamer(job_prefix)
        self.job_prefix = job_prefix
        # names of postpone-bucket files: this write's user and id (Paimon: the job's user, the writer's subtask)
        self.commit_user = commit_user or str(uuid.uuid4())
        self.write_id = task if task is not None else random.randrange(2**31 - 1)
        self.num_buckets = table.bucket
        self.partition_fields = table.table_schema.partition_fields
        self.partition_idx = [self.schema.field_names.index(k) for k in self.schema.partition_keys]
        self.bucket_idx: list[int] = []
        # postpone-bucket tables (bucket=-2, Paimon 1.x): rows go into real buckets, as many as their partition has
        # (postpone.batch-write-fixed-bucket, as Paimon's Spark writer), or into the partition's postpone bucket
        self.postpone = bool(self.schema.primary_keys) and table.bucket == POSTPONE_BUCKET
        self.postpone_fixed = self.postpone and table.options.get("postpone.batch-write-fixed-bucket")
        if self.num_buckets > 0 or self.postpone_fixed:
            keys = self.schema.bucket_keys
            self.bucket_idx = [self.schema.field_names.index(k) for k in keys]
        self.not_null_idx = [i for i, f in enumerate(self.schema.fields) if not f.type.nullable]
        # Paimon 1.x column defaults, written in place of nulls (a default Paimon cannot read fails here, before
        # anything is written, as Java's TableWriteImpl fails to open)
        self.defaults = [(i, default_array(f.default_value, f.type)) for i, f in enumerate(self.schema.fields)
                         if f.default_value is not None]
        self.by_name = table.options.get("write.merge-schema")
        # FLOAT / DOUBLE columns that make keys, partitions or buckets: their NaNs are stored canonical (one key)
        key_names = set(self.schema.primary_keys) | set(self.schema.partition_keys) | set(self.schema.bucket_keys)
        self.float_key_idx = [i for i, f in enumerate(self.schema.fields)
                              if f.name in key_names and f.type.root in ("FLOAT", "DOUBLE")]
        self.default_partition = table.options.get("partition.default-name")
        self.buffer_limit = table.options.get("write-buffer-size")
        self.writers: dict[tuple[bytes, int], Any] = {}
        self.partition_dirs: dict[bytes, str] = {}
        self.primary_key = bool(self.schema.primary_keys)
        if self.primary_key:
            self.engine = merge_engine(self.schema, table.options)
            self.restore = restore if restore is not None else BucketRestore.from_table(table, with_files=clustered)
            self.task, self.clustered = task, clustered
            rowkind = table.options.get("rowkind.field")
            self.rowkind_idx = self.schema.field_names.index(self.schema.field(rowkind).name) if rowkind else None
            # postpone-bucket tables: Paimon writes real buckets write-only (PostponeUtils.tableForFixBucketWrite)
            self.compact = clustered and not table.options.get("write-only") and not self.postpone
            # this write is the table's (delta_commits + 1)-th commit; COMPACT snapshots do not count
            self.full_compaction = full_compaction_due(full_compaction_interval(table.options),
                                                       self.restore.delta_commits + 1)
        self.dynamic = is_dynamic_bucket(table.store)
        # cross-partition upsert (primary key without every partition key, bucket=-1): the package's global
        # index assigners give each row its bucket (and -D rows for keys that moved); no hash index is kept
        self.cross_partition = self.primary_key and table.bucket == -1 and not self.dynamic
        self.overwrite = overwrite
        self.independent = independent or task is not None  # a task among several: no key routing
        self.index_maintainers: dict[tuple[bytes, int], HashIndexMaintainer] = {}
        self.assigner: DynamicBucketAssigner | SnapshotBucketAssigner | None = None

    # ---------------------------------------------------------------- input
    def align(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Put the batch's columns in table order and in the table's Arrow types."""
        names = batch.schema.names
        if self.by_name and (names != self.arrow_schema.names or batch.schema != self.arrow_schema):
            # write.merge-schema: columns and nested fields matched by name, case-insensitively, those the data
            # lacks null (Paimon's SchemaHelper.alignColumns)
            columns = []
            for f in self.arrow_schema:
                i = name_index(names, f.name)
                try:
                    columns.append(align_by_name(batch.column(i), f.type) if i >= 0 else
                                   pa.nulls(batch.num_rows, f.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                    raise SchemaError(f"column {f.name!r}: a value of the data's {batch.schema.field(i).type} does "
                                      f"not fit the table's {f.type} ({e})") from None
            batch = pa.RecordBatch.from_arrays(columns, names=self.arrow_schema.names)
        elif names != self.arrow_schema.names:
            batch = pa.RecordBatch.from_arrays([batch.column(names.index(n)) for n in self.arrow_schema.names],
                                               names=self.arrow_schema.names)
        for i in self.not_null_idx:
            if batch.column(i).null_count:
                raise SchemaError(f"column {self.arrow_schema.names[i]!r} is NOT NULL in the table "
                                  f"but the data has {batch.column(i).null_count} null value(s)")
        if batch.schema != self.arrow_schema or any(nulls_under_required(c) for c in batch.columns):
            arrays = [conform_array(c, f.type) for c, f in zip(batch.columns, self.arrow_schema)]
            batch = pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
        for i, default in self.defaults:
            col = batch.column(i)
            filled = fill_defaults(col, default)
            if filled is not col:
                batch = batch.set_column(i, self.arrow_schema.field(i), filled)
        for i in self.float_key_idx:
            col = batch.column(i)
            canonical = canonical_nans(col)
            if canonical is not col:
                batch = batch.set_column(i, self.arrow_schema.field(i), canonical)
        return batch

    def write_arrow(self, batch: pa.RecordBatch | pa.Table) -> None:
        if isinstance(batch, pa.Table):
            for b in batch.to_batches():
                self.write_arrow(b)
            return
        if batch.num_rows == 0:
            return
        kind_names = None
        if self.row_kind_column is not None:
            idx = batch.schema.get_field_index(self.row_kind_column)
            if idx < 0:
                raise SchemaError(f"the input has no row-kind column {self.row_kind_column!r}")
            kind_names, batch = batch.column(idx), batch.drop_columns([self.row_kind_column])
            if not self.primary_key:
                # Paimon 1.x's RowKindFilter drops them before any writer (primary-key writers filter their own)
                keep = row_kind_filter(self._parse_kinds(kind_names, self.row_kind_column),
                                       self.table.options.get("ignore-delete"),
                                       self.table.options.get("ignore-update-before"))
                if keep is not None:
                    kind_names, batch = kind_names.filter(pa.array(keep)), batch.filter(pa.array(keep))
                    if batch.num_rows == 0:
                        return
        given_buckets = None
        if self.dynamic or self.cross_partition:
            given_buckets, batch = self._given_buckets(batch)
        batch = self.align(batch)
        buckets = hashes = new_keys = None
        if self.dynamic:
            hashes = key_hashes(self.table.store, batch)
            if given_buckets is not None:
                buckets = given_buckets
            else:
                buckets, new_keys = self._assign(batch, hashes)
        elif self.postpone_fixed:
            buckets = self._postpone_buckets(batch)
        elif self.postpone:
            buckets = np.zeros(batch.num_rows, dtype=np.int32)  # each partition's postpone bucket (see _route)
        elif self.cross_partition:
            if given_buckets is None:
                raise OptionError(f"{self.table.path} is a cross-partition upsert table (its primary key lacks a "
                                  "partition key): each row's (partition, bucket) comes from the global key index; "
                                  "write it with paimon_ds.write()")
            buckets = given_buckets
        if kind_names is not None:
            kinds = self._parse_kinds(kind_names, self.row_kind_column)
            if not self.primary_key and kinds.any():
                raise SchemaError("an append table takes inserts only (+I); deletes and updates of its rows "
                                  "rewrite its files (paimon_ds.delete / update / merge)")
            kinds = kinds if self.primary_key else None
        else:
            kinds = self._row_kinds(batch) if self.primary_key else None
        for (part_key, bucket), rows, idx in self._route(batch, buckets):
            if self.postpone and not self.postpone_fixed:
                bucket = POSTPONE_BUCKET
            writer = self.writers.get((part_key, bucket))
            if writer is None:
                writer = self._new_writer(part_key, bucket, rows)
            if hashes is not None:
                rows_of = slice(None) if idx is None else idx.to_numpy()
                mine = hashes[rows_of] if new_keys is None else hashes[rows_of][new_keys[rows_of]]
                self._maintainer(part_key, bucket).notify(mine)
            if kinds is None:
                writer.add(rows)
            else:
                writer.write(rows, kinds if idx is None else kinds[idx.to_numpy()])
        self._bound_memory()

    def partition_buckets(self, part_key: bytes) -> int:
        """A postpone-bucket table's buckets of a partition: those it has, else `postpone.default-bucket-num`."""
        return self.restore.total_buckets.get(part_key) or self.table.options.get("postpone.default-bucket-num")

    def _postpone_buckets(self, batch: pa.RecordBatch) -> np.ndarray:
        """Each row's real bucket in a postpone-bucket table: Paimon's fixed-bucket hash of the bucket key, modulo
        the number of buckets of the row's partition (PostponeFixBucketProcessor), vectorised per partition."""
        hashes = row_hashes([batch.column(i) for i in self.bucket_idx], [self.schema.fields[i].type
                                                                           for i in self.bucket_idx])
        if not self.partition_idx:
            counts: int | np.ndarray = self.partition_buckets(EMPTY_ROW)
        else:
            types = [f.type for f in self.partition_fields]
            data, offsets = encode_rows([batch.column(i) for i in self.partition_idx], types)
            encoded = pc.dictionary_encode(large_binary_array(data, offsets))
            arity = struct.pack(">i", len(types))  # manifests' partitions: arity, then the BinaryRow
            per_partition = np.array([self.partition_buckets(arity + p) for p in encoded.dictionary.to_pylist()],
                                     dtype=np.int64)
            counts = per_partition[encoded.indices.to_numpy(zero_copy_only=False)]
        return np.abs(np.fmod(hashes.astype(np.int64), counts)).astype(np.int32)

    def _given_buckets(self, batch: pa.RecordBatch) -> tuple[np.ndarray | None, pa.RecordBatch]:
        """The buckets an upstream assigner put in BUCKET_COLUMN (and the batch without it), if any."""
        idx = batch.schema.get_field_index(BUCKET_COLUMN)
        if idx < 0:
            return None, batch
        col = batch.column(idx)
        if not pa.types.is_integer(col.type) or col.null_count:
            raise SchemaError(f"column {BUCKET_COLUMN!r} must hold a non-null integer bucket for every row")
        buckets = col.to_numpy(zero_copy_only=False).astype(np.int32)
        if len(buckets) and (buckets.min() < 0 or buckets.max() >= 32767):
            raise SchemaError(f"column {BUCKET_COLUMN!r} holds bucket ids outside [0, 32767)")
        return buckets, batch.drop_columns([BUCKET_COLUMN])

    def _assign(self, batch: pa.RecordBatch, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Buckets of a batch's rows, and (stateless assignment) which keys are new to the index."""
        if self.assigner is None:
            if self.clustered:
                raise OptionError(f"a clustered write to dynamic-bucket table {self.table.path} must give each row "
                                  f"its bucket in column {BUCKET_COLUMN!r}")
            # an overwrite, or nothing committed at the restore point: no index to start from
            fresh = self.overwrite or self.restore.snapshot_id is None
            if self.independent:
                self.assigner = SnapshotBucketAssigner(self.table.store, {} if fresh else self.restore.index_files)
            else:
                self.assigner = DynamicBucketAssigner(self.table.store, snapshot=self.restore.snapshot_id,
                                                      overwrite=fresh)
        if isinstance(self.assigner, SnapshotBucketAssigner):
            return self.assigner.assign(batch, hashes)
        return self.assigner.assign(batch, hashes), None

    def _maintainer(self, part_key: bytes, bucket: int) -> HashIndexMaintainer:
        m = self.index_maintainers.get((part_key, bucket))
        if m is None:
            # the stateless assigner hands over only keys new to the index: no base file to compare with
            known_new = isinstance(self.assigner, SnapshotBucketAssigner)
            base = None if self.overwrite or known_new else self.restore.index_files.get((part_key, bucket))
            m = self.index_maintainers[(part_key, bucket)] = HashIndexMaintainer(self.table.store, part_key, bucket,
                                                                                 base)
        return m

    def _row_kinds(self, batch: pa.RecordBatch) -> np.ndarray:
        """Each row's kind: +I, or what the `rowkind.field` column says (+I, -U, +U, -D)."""
        if self.rowkind_idx is None:
            return np.zeros(batch.num_rows, dtype=np.int8)
        return self._parse_kinds(batch.column(self.rowkind_idx),
                                 f"rowkind.field column {self.arrow_schema.names[self.rowkind_idx]!r}")

    @staticmethod
    def _parse_kinds(col: pa.Array, what: str) -> np.ndarray:
        codes = pc.index_in(col, value_set=pa.array(list(ROW_KINDS)))
        if codes.null_count:
            bad = pc.filter(col, codes.is_null()).unique().to_pylist()[:5]
            raise SchemaError(f"{what} holds {bad}; row kinds are +I, -U, +U, -D")
        return np.array(list(ROW_KINDS.values()), dtype=np.int8)[codes.to_numpy()]

    def _route(self, batch: pa.RecordBatch, dynamic_buckets: np.ndarray | None = None):
        """Split a batch by (partition, bucket), vectorised: one group-by per batch, no per-row Python."""
        n = batch.num_rows
        if dynamic_buckets is None and not self.partition_idx and self.num_buckets <= 0:
            yield (serialize_arrow_row([], []), 0), batch, None
            return
        if dynamic_buckets is not None:
            buckets = dynamic_buckets
        elif self.num_buckets > 0:
            cols = [batch.column(i) for i in self.bucket_idx]
            buckets = bucket_ids(cols, [self.schema.fields[i].type for i in self.bucket_idx], self.num_buckets)
        else:
            buckets = np.zeros(n, dtype=np.int32)
        if not self.partition_idx:
            # buckets only: one stable argsort and slices instead of a hash group-by
            # the narrowest integer type: numpy's stable (radix) sort does a pass per byte
            narrow = buckets.astype(np.int8 if self.num_buckets <= 128 else np.int16) \
                if 0 < self.num_buckets <= 32768 else buckets
            order = np.argsort(narrow, kind="stable")
            counts = np.bincount(buckets, minlength=max(self.num_buckets, 0))
            part_key = serialize_arrow_row([], [])
            self.partition_dirs.setdefault(part_key, "")
            nonzero = np.flatnonzero(counts)
            if len(nonzero) == 1:
                yield (part_key, int(nonzero[0])), batch, None
                return
            taken = batch.take(pa.array(order))
            start = 0
            for b in nonzero:
                n_b = int(counts[b])
                yield (part_key, int(b)), taken.slice(start, n_b), pa.array(order[start:start + n_b])
                start += n_b
            return
        key_cols = [batch.column(i) for i in self.partition_idx] + [pa.array(buckets)]
        key_names = [f"p{i}" for i in range(len(self.partition_idx))] + ["bucket"]
        keys = pa.table(key_cols, names=key_names).append_column("row", pa.array(np.arange(n, dtype=np.int64)))
        groups = keys.group_by(key_names, use_threads=False).aggregate([("row", "list")])
        for g in range(groups.num_rows):
            rows = groups.column("row_list")[g].values
            first = rows[0].as_py()
            part_cols = [batch.column(i).slice(first, 1) for i in self.partition_idx]
            part_key = serialize_arrow_row(part_cols, [f.type for f in self.partition_fields])
            if part_key not in self.partition_dirs:
                values = [c[0].as_py() for c in part_cols]
                self.partition_dirs[part_key] = partition_path(self.schema.partition_keys, values,
                                                               self.default_partition,
                                                               [f.type for f in self.partition_fields])
            bucket = int(groups.column("bucket")[g].as_py())
            if groups.num_rows == 1:
                yield (part_key, bucket), batch, None
            else:
                yield (part_key, bucket), batch.take(rows), rows

    def _new_writer(self, part_key: bytes, bucket: int, rows: pa.RecordBatch) -> AppendFileWriter:
        rel = self.partition_dirs.get(part_key, "")
        directory = f"{self.table.root}/{bucket_path(rel, bucket)}"
        if self.primary_key and bucket == POSTPONE_BUCKET:
            namer = PostponeFileNamer(self.commit_user, self.write_id, self.job_prefix)
            writer: Any = PostponeBucketWriter(self.table.store, self.engine, directory, namer)
        elif self.primary_key:
            key = (part_key, bucket)
            restored = (self.restore.files or {}).get(key, []) if self.compact else []
            writer = MergeTreeWriter(
                self.table.store, self.engine, directory, self.namer, self.restore.max_sequence.get(key, -1),
                self.task, restored, compact=self.compact, full_compaction=self.full_compaction)
        else:
            writer = AppendFileWriter(self.table.store, directory, self.namer, parallel_files=self.parallel_files)
        self.writers[(part_key, bucket)] = writer
        return writer

    def _bound_memory(self) -> None:
        total = sum(w.pending_bytes for w in self.writers.values())
        while total > self.buffer_limit:
            largest = max(self.writers.values(), key=lambda w: w.pending_bytes)
            total -= largest.pending_bytes
            largest.flush_memory() if self.primary_key else largest.flush()

    # ---------------------------------------------------------------- output
    def prepare_commit(self) -> list[CommitMessage]:
        messages = []
        total_buckets = self.num_buckets if self.num_buckets > 0 else -1
        if self.primary_key:
            for (part_key, bucket), writer in self.writers.items():
                if self.postpone:  # Paimon: a postpone bucket's entries say -2, a real bucket's its partition's count
                    total_buckets = POSTPONE_BUCKET if bucket == POSTPONE_BUCKET else self.partition_buckets(part_key)
                new, before, after = writer.prepare_commit()
                changelog = writer.take_changelog()
                compact_changelog = writer.take_compact_changelog()
                maintainer = self.index_maintainers.get((part_key, bucket))
                added = maintainer.new_hashes() if maintainer is not None else None
                added = added if added is not None and len(added) else None
                if new or before or after or changelog or compact_changelog or added is not None:
                    messages.append(CommitMessage(part_key, bucket, total_buckets, new,
                                                  self.partition_dirs.get(part_key, ""), before, after,
                                                  changelog_files=changelog, added_hashes=added,
                                                  compact_changelog=compact_changelog))
            self.writers.clear()
            self.index_maintainers.clear()
            return messages
        # each (partition, bucket) writer encodes its last row group and finishes its file as it closes: in
        # parallel, as pyarrow's encoding releases the GIL (a write of several partitions or buckets uses every
        # core); the pool's exit waits for every close, so an abort after an error finds no file half written
        writers = list(self.writers.items())
        if len(writers) > 1:
            with ThreadPoolExecutor(min(len(writers), CLOSE_WORKERS), thread_name_prefix="paimon-ds-write") as pool:
                closed = list(pool.map(lambda item: item[1].close(), writers))
        else:
            closed = [writer.close() for _, writer in writers]
        for ((part_key, bucket), _), files in zip(writers, closed):
            if files:
                messages.append(CommitMessage(part_key, bucket, self.num_buckets if self.num_buckets > 0 else -1,
                                              files, self.partition_dirs.get(part_key, "")))
        self.writers.clear()
        return messages

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()
        self.writers.clear()
        self.index_maintainers.clear()
