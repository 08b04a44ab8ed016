"""Cross-partition upsert: the global-index bucket assigner of Paimon's cross-partition bucket mode.

A primary-key table whose primary key does not contain every partition key (``bucket = -1``; Paimon's
``BucketMode.CROSS_PARTITION``, the "global dynamic bucket" sink) keeps each key in exactly one
(partition, bucket). A global index maps every key to where it lives. This module assigns rows from that
index, after Paimon 0.9; the index itself is key_index.py (keys: keys.py), and the bootstrap that reads the
table's live keys into it is operation/index_bootstrap.py (Paimon's crosspartition/IndexBootstrap.java),
which also gives ``GlobalIndexAssigner``, this assigner with ``bootstrap()``.

* ``BucketAssigner`` (crosspartition/BucketAssigner.java): per partition, counts of keys per bucket; a
  new key goes to the first bucket in id order that passes the assigner filter
  (``bucket % numAssigners == assignId``) and holds fewer than ``dynamic-bucket.target-row-num`` keys,
  else to the smallest unused id passing the filter. Moving a key away decrements its old bucket.
* ``CrossPartitionAssigner`` (crosspartition/GlobalIndexAssigner.java + ExistingProcessor.java): loads the
  bootstrap's keys (``bootstrap_keys``), then for each input row, a key not in the index gets a bucket in
  its partition; a key indexed in the same partition keeps its bucket; a key indexed in another partition
  is handled by the merge engine's processor:
  deduplicate -> DeleteExistingProcessor (a -D of the key in the old (partition, bucket), then the row in
  a new bucket of its new partition), partial-update / aggregation -> UseOldExistingProcessor (the row
  goes to the old partition, its partition fields replaced, and the old bucket), first-row ->
  SkipNewExistingProcessor (the row is dropped). As in Paimon, only a new key or a key that moved writes
  the index (keys updated in place keep their entry and its TTL clock), and a -D input row does not
  remove its key from the index.

Batches, not rows: ``process`` looks up all distinct keys of a batch at once and resolves each key's rows
together, as Paimon's bulk-load path (``ExistingProcessor.bulkLoadNewRecords``) does for the rows it
buffers during bootstrap: deduplicate keeps the key's last run of rows in one partition (rows of the key
before it would be written and then deleted in the same batch; the -D in the indexed partition carries
the first row that left it), partial-update / aggregation send every row of a new key to the partition
of its first row, first-row keeps the rows in the first row's partition. Bucket counts see the batch's
assignments and decrements in input order. A batch of one row gives exactly Paimon's per-row output.

Measured end to end on a 2-core machine (tests/index/test_cross_partition.py, tests/test_soak_global_index.py):
2M new keys in random order through ``process`` in 100k-row batches with a 16 MiB cache: 8.3 s, peak
RSS flat from 1M to 2M keys (+1 MiB); bootstrap of a 20M-key table: 30 s, peak RSS +226 MiB over the
process's baseline with a 64 MiB cache (40M keys: 70 s, +228 MiB); then 1M keys moving partition: 12 s.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format.binary_row import deserialize_row, encode_rows
from ..mergetree.aggregation import Aggregation
from ..mergetree.engine import FirstRow
from ..mergetree.merge import merge_engine
from ..mergetree.partial_update import PartialUpdate
from ..options.registry import parse_duration_ms
from ..schema.types import SchemaError, to_arrow_type
from .bucket_assigner import BUCKET_COLUMN
from .key_index import KeyIndex, KeyIndexLoader
from .keys import KeySet, input_column

if TYPE_CHECKING:
    from ..schema.manager import TableSchema
    from ..store.file_store import FileStore

ROW_KIND_COLUMN = "_paimon_ds_row_kind"  # +I / -U / +U / -D of an output row
KEY_COLUMN = "_paimon_ds_key"  # bootstrap batches: the serialized primary key
PARTITION_COLUMN = "_paimon_ds_partition"  # bootstrap batches: the serialized partition (manifest form)
BOOTSTRAP_SCHEMA = pa.schema([pa.field(KEY_COLUMN, pa.large_binary(), nullable=False),
                              pa.field(PARTITION_COLUMN, pa.binary(), nullable=False),
                              pa.field(BUCKET_COLUMN, pa.int32(), nullable=False)])
BUCKET_MASK = (1 << 32) - 1  # the bucket half of a packed (partition id, bucket) index value
_Assigner = TypeVar("_Assigner", bound="CrossPartitionAssigner")  # `with` gives back the subclass it opened


# ------------------------------------------------------------------------------------ options

def parse_duration_seconds(text: str) -> float:
    """A Paimon duration in seconds."""
    return parse_duration_ms(text) / 1000


def is_cross_partition(schema: TableSchema) -> bool:
    """Paimon's ``TableSchema.crossPartitionUpdate``: a primary key that misses some partition key."""
    return bool(schema.primary_keys) and bool(schema.partition_keys) and \
        not set(schema.partition_keys) <= set(schema.primary_keys)


def needs_global_index(schema: TableSchema, bucket: int) -> bool:
    """Whether a write's rows get their partition and bucket from the table's global key index: a
    cross-partition upsert table with dynamic buckets (bucket=-1)."""
    return bucket == -1 and is_cross_partition(schema)


def index_ttl_seconds(table: FileStore) -> float | None:
    """``cross-partition-upsert.index-ttl`` in seconds: index entries older than it read as absent."""
    ttl_ms = table.options.get("cross-partition-upsert.index-ttl")
    return ttl_ms / 1000 if ttl_ms is not None else None


# ------------------------------------------------------------------------------------ bucket counts

class BucketAssigner:
    """Keys per bucket of each partition, and the choice of a new key's bucket (crosspartition/BucketAssigner)."""

    def __init__(self, num_assigners: int, assign_id: int, target_row_num: int) -> None:
        self.num_assigners = num_assigners
        self.assign_id = assign_id
        self.target = target_row_num
        self.stats: dict[int, dict[int, int]] = {}

    def passes(self, bucket: int) -> bool:
        return bucket % self.num_assigners == self.assign_id

    def bootstrap_bucket(self, part: int, bucket: int, count: int = 1) -> None:
        counts = self.stats.setdefault(part, {})
        counts[bucket] = counts.get(bucket, 0) + count

    def decrement(self, part: int, bucket: int, count: int = 1) -> None:
        counts = self.stats.setdefault(part, {})
        counts[bucket] = counts.get(bucket, 0) - count  # an unknown bucket appears with count 0 - 1, as in Paimon

    def assign(self, part: int, n: int) -> np.ndarray:
        """Buckets of ``n`` new keys of the partition, in order: what n single assignments would give."""
        counts = self.stats.setdefault(part, {})
        out = np.empty(n, dtype=np.int32)
        done = 0
        for bucket in sorted(counts):  # TreeMap order
            if done == n:
                break
            room = self.target - counts[bucket]
            if room > 0 and self.passes(bucket):
                take = min(room, n - done)
                out[done:done + take] = bucket
                counts[bucket] += take
                done += take
        bucket = self.assign_id  # the smallest ids passing the filter, skipping used ones
        while done < n:
            while bucket in counts:
                bucket += self.num_assigners
            take = min(max(self.target, 1), n - done)
            out[done:done + take] = bucket
            counts[bucket] = take
            done += take
        return out


# ------------------------------------------------------------------------------------ the assigner

class CrossPartitionAssigner:
    """Assigns the bucket of every row of a cross-partition primary-key table (GlobalIndexAssigner.java).

    One of ``num_assigners`` assigners: it owns the keys whose ``keys.key_channels`` is ``assign_id`` and
    opens only buckets with ``bucket % num_assigners == assign_id``. Use: ``bootstrap_keys`` for the
    table's live keys of this assigner (batches of BOOTSTRAP_SCHEMA, which operation/index_bootstrap.py
    reads; its ``GlobalIndexAssigner.bootstrap()`` reads and loads them), then ``end_bootstrap()``, then
    ``process`` each batch of rows of this assigner's keys, then ``close()``. Not thread-safe.
    """

    def __init__(self, table: FileStore, work_dir: str | None = None, num_assigners: int = 1, assign_id: int = 0, *,
                 cache_bytes: int | None = None, row_kind_column: str | None = None,
                 bootstrap_buffer_bytes: int = 16 << 20, clock: Callable[[], float] = time.time) -> None:
        """``work_dir``: a local directory; the index lives in a new directory inside it that ``close()``
        removes. ``cache_bytes``: the index's page cache (default: sink.cross-partition.managed-memory).
        ``row_kind_column``: an input column (not of the table) with each row's kind (+I, -U, +U, -D),
        carried to the output's row-kind column."""
        schema = table.table_schema
        if not is_cross_partition(schema):
            raise SchemaError(f"table {table.path} is not a cross-partition primary-key table: its primary key "
                              f"{list(schema.primary_keys)} must miss some partition key of "
                              f"{list(schema.partition_keys)}")
        if table.bucket != -1:
            raise SchemaError(f"a cross-partition primary-key table needs bucket = -1, not {table.bucket}")
        if not 0 <= assign_id < num_assigners:
            raise ValueError(f"assign_id {assign_id} is not in [0, {num_assigners})")
        self.table = table
        self.schema = schema
        self.num_assigners = num_assigners
        self.assign_id = assign_id
        self.row_kind_column = row_kind_column
        self.clock = clock
        self.target_row_num = table.options.get("dynamic-bucket.target-row-num")
        self.ttl_seconds = index_ttl_seconds(table)
        if cache_bytes is None:
            cache_bytes = table.options.get("sink.cross-partition.managed-memory")
        engine = merge_engine(schema, table.options)
        self.processor = ("skip-new" if isinstance(engine, FirstRow)
                          else "use-old" if isinstance(engine, (PartialUpdate, Aggregation)) else "delete")
        self.rowkind_field = table.options.get("rowkind.field") or None
        self.pk = list(schema.primary_keys)
        self.pk_types = [schema.field(k).type for k in self.pk]
        self.partition_keys = list(schema.partition_keys)
        self.partition_types = [f.type for f in schema.partition_fields]
        self.partition_arrow_types = [to_arrow_type(t) for t in self.partition_types]
        self._partition_prefix = struct.pack(">i", len(self.partition_types))
        if work_dir is not None:
            os.makedirs(work_dir, exist_ok=True)
        self.directory = tempfile.mkdtemp(prefix="paimon_ds-global-index-", dir=work_dir)
        self.index = KeyIndex(self.directory, cache_bytes, self.ttl_seconds, clock)
        self.buckets = BucketAssigner(num_assigners, assign_id, self.target_row_num)
        self._part_ids: dict[bytes, int] = {}  # Paimon's IDMapping of partitions
        self._part_bytes: list[bytes] = []
        self._part_values: list[list[pa.Array]] = []  # one-value arrays of each partition's fields
        self.loader = KeyIndexLoader(self.index, self.directory, bootstrap_buffer_bytes)
        self.in_bootstrap = True
        self.bootstrap_snapshot_id: int | None = None  # the snapshot a table bootstrap read
        self.bootstrapped_keys = 0

    # ---------------------------------------------------------------- partitions
    def _partition_id(self, serialized: bytes, values: list[pa.Array] | None = None) -> int:
        pid = self._part_ids.get(serialized)
        if pid is None:
            if values is None:
                decoded = deserialize_row(serialized, self.partition_types)
                values = [pa.array([v], t) for v, t in zip(decoded, self.partition_arrow_types)]
            pid = len(self._part_values)
            self._part_ids[serialized] = pid
            self._part_bytes.append(serialized)
            self._part_values.append(values)
        return pid

    def partition_bytes(self, part_id: int) -> bytes:
        """The serialized partition (manifest form) of a partition id of the index."""
        return self._part_bytes[part_id]

    def partition_values(self, part_id: int) -> list[Any]:
        """The partition field values of a partition id of the index."""
        return [a[0].as_py() for a in self._part_values[part_id]]

    def _row_partitions(self, batch: pa.RecordBatch) -> np.ndarray:
        cols = [input_column(batch, n, t) for n, t in zip(self.partition_keys, self.partition_arrow_types)]
        data, offsets = encode_rows(cols, self.partition_types)
        parts, pid = KeySet.of(data, offsets)
        _, first = np.unique(pid, return_index=True)  # a row of each partition
        serialized = [self._partition_prefix + row.tobytes() for _, mat in parts.groups for row in mat]
        ids = np.array([self._partition_id(b, [c.slice(int(first[j]), 1) for c in cols])
                        for j, b in enumerate(serialized)], dtype=np.int64)
        return ids[pid]

    # ---------------------------------------------------------------- bootstrap
    def bootstrap_keys(self, batch: pa.RecordBatch) -> None:
        """Load bootstrap rows (BOOTSTRAP_SCHEMA) of this assigner's keys (GlobalIndexAssigner.bootstrapKey)."""
        if not self.in_bootstrap:
            raise RuntimeError("bootstrap_keys after the bootstrap ended")
        n = batch.num_rows
        if n == 0:
            return
        parts = batch.column(batch.schema.get_field_index(PARTITION_COLUMN)).dictionary_encode()
        ids = np.array([self._partition_id(p.as_py()) for p in parts.dictionary], dtype=np.int64)
        part = ids[parts.indices.to_numpy()]
        bucket = batch.column(batch.schema.get_field_index(BUCKET_COLUMN)).to_numpy().astype(np.int64)
        packed = (part << 32) | bucket
        values, counts = np.unique(packed, return_counts=True)
        for v, c in zip(values.tolist(), counts.tolist()):
            self.buckets.bootstrap_bucket(v >> 32, v & BUCKET_MASK, c)
        self.bootstrapped_keys += n
        self.loader.add(batch.column(batch.schema.get_field_index(KEY_COLUMN)), packed)

    def end_bootstrap(self) -> None:
        """Finish loading the bootstrap's keys into the index (the first ``process`` does it too)."""
        if self.in_bootstrap:
            self.loader.finish()
            self.in_bootstrap = False

    # ---------------------------------------------------------------- assignment
    def process_all(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = self.process(batch)
            if out.num_rows:
                yield out

    def process(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
        """The rows to write for ``batch`` (rows of this assigner's keys with every primary-key and partition
        column): the batch's columns, in input order, plus BUCKET_COLUMN (int32) and ROW_KIND_COLUMN
        (string: the input kind, +I without a row-kind column, -D for a retraction in a key's old
        partition, placed just before the row that moved the key). Updates the index."""
        if isinstance(batch, pa.Table):
            batch = batch.combine_chunks().to_batches()[0] if batch.num_rows else \
                pa.RecordBatch.from_pylist([], schema=batch.schema)
        self.end_bootstrap()
        kinds_in = None
        if self.row_kind_column is not None:
            idx = batch.schema.get_field_index(self.row_kind_column)
            if idx < 0:
                raise SchemaError(f"the input has no row-kind column {self.row_kind_column!r}")
            kinds_in = batch.column(idx).cast(pa.string())
            batch = batch.drop_columns([self.row_kind_column])
        n = batch.num_rows
        if n == 0:
            return self._output(batch, np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int32),
                                np.zeros(0, np.int64), kinds_in)

        cols = [input_column(batch, k, to_arrow_type(t)) for k, t in zip(self.pk, self.pk_types)]
        ukeys, kid = KeySet.of(*encode_rows(cols, self.pk_types))  # the batch's keys, each row's key id
        parts = self._row_partitions(batch)
        found, packed = self.index.lookup(ukeys)
        old_part = packed >> 32
        old_bucket = (packed & BUCKET_MASK).astype(np.int32)

        # rows sorted by key, then input position: each key's rows are a contiguous, ordered run
        order = np.argsort(kid, kind="stable")
        ks, ps = kid[order], parts[order]
        pos = np.arange(n)
        key_change = np.ones(n, dtype=bool)
        key_change[1:] = ks[1:] != ks[:-1]
        starts = np.flatnonzero(key_change)  # the first row (sorted index) of key 0, 1, ...
        first_part = ps[starts]

        retract_rows = np.zeros(0, np.int64)
        retract_part = np.zeros(0, np.int64)
        retract_bucket = np.zeros(0, np.int32)
        if self.processor == "delete":
            # only the key's last run of rows in one partition survives the batch
            seg_change = key_change.copy()
            seg_change[1:] |= ps[1:] != ps[:-1]
            last_seg = np.maximum.reduceat(np.where(seg_change, pos, -1), starts)
            home = ps[last_seg]
            moved = found & (old_part != home)
            fresh = np.flatnonzero(~found | moved)
            assign_at = order[last_seg[fresh]]
            keep_sorted = np.flatnonzero(pos >= last_seg[ks])
            data_rows = order[keep_sorted]
            data_key = ks[keep_sorted]
            data_repl = np.full(len(data_rows), -1, dtype=np.int64)
            if moved.any():
                # -D in the old (partition, bucket), with the values of the first row that left it
                away = ps != old_part[ks]
                first_away = np.minimum.reduceat(np.where(away, pos, n), starts)
                mk = np.flatnonzero(moved)
                retract_rows = order[first_away[mk]]
                retract_part = old_part[mk]
                retract_bucket = old_bucket[mk]
        else:
            # use-old / skip-new: the key stays where the index has it, or where its first row puts it
            home = np.where(found, old_part, first_part)
            fresh = np.flatnonzero(~found)
            assign_at = order[starts[fresh]]
            row_home = home[kid]
            if self.processor == "use-old":
                data_rows = pos
                data_repl = np.where(parts != row_home, row_home, -1)
            else:
                data_rows = np.flatnonzero(parts == row_home)
                data_repl = np.full(len(data_rows), -1, dtype=np.int64)
            data_key = kid[data_rows]

        bucket = old_bucket.copy()
        if len(fresh):  # (a moved key is fresh too: retractions come with assignments)
            bucket[fresh] = self._assign(assign_at, home[fresh], retract_rows, retract_part, retract_bucket)
            self.index.put(ukeys.take(fresh), (home[fresh] << 32) | bucket[fresh].astype(np.int64))

        rows = np.concatenate([data_rows, retract_rows])
        is_retract = np.concatenate([np.zeros(len(data_rows), bool), np.ones(len(retract_rows), bool)])
        buckets = np.concatenate([bucket[data_key], retract_bucket])
        repl = np.concatenate([data_repl, retract_part])
        # input order; a retraction just before the row that caused it, as Paimon emits them
        out_order = np.argsort(rows * 2 + ~is_retract, kind="stable")
        return self._output(batch, rows[out_order], is_retract[out_order], buckets[out_order], repl[out_order],
                            kinds_in)

    def _assign(self, at: np.ndarray, part: np.ndarray, dec_at: np.ndarray, dec_part: np.ndarray,
                dec_bucket: np.ndarray) -> np.ndarray:
        """Buckets for new placements (input position ``at`` in partition ``part``), with the batch's
        decrements (moved-away keys) applied where they fall in input order."""
        out = np.empty(len(at), dtype=np.int32)
        assign_parts = set(np.unique(part).tolist())
        if len(dec_at):
            elsewhere = ~np.isin(dec_part, list(assign_parts))
            if elsewhere.any():  # no assignment in these partitions: the order does not matter
                packed = (dec_part[elsewhere] << 32) | dec_bucket[elsewhere].astype(np.int64)
                values, counts = np.unique(packed, return_counts=True)
                for v, c in zip(values.tolist(), counts.tolist()):
                    self.buckets.decrement(v >> 32, v & BUCKET_MASK, c)
        for p in sorted(assign_parts):
            idx = np.flatnonzero(part == p)
            idx = idx[np.argsort(at[idx], kind="stable")]
            done = 0
            if len(dec_at):
                decs = np.flatnonzero(dec_part == p)
                for d in decs[np.argsort(dec_at[decs], kind="stable")].tolist():
                    cut = int(np.searchsorted(at[idx], dec_at[d]))
                    if cut > done:
                        out[idx[done:cut]] = self.buckets.assign(p, cut - done)
                        done = cut
                    self.buckets.decrement(p, int(dec_bucket[d]))
            if done < len(idx):
                out[idx[done:]] = self.buckets.assign(p, len(idx) - done)
        return out

    def _output(self, batch: pa.RecordBatch, rows: np.ndarray, is_retract: np.ndarray, buckets: np.ndarray,
                repl: np.ndarray, kinds_in: pa.Array | None) -> pa.RecordBatch:
        out = batch.take(pa.array(rows, pa.int64()))
        columns = list(out.columns)
        names = out.schema.names
        mask = repl >= 0
        if mask.any():
            uniq, inverse = np.unique(repl[mask], return_inverse=True)
            take = np.zeros(len(repl), dtype=np.int64)
            take[mask] = inverse
            arrow_mask = pa.array(mask)
            for j, name in enumerate(self.partition_keys):
                i = names.index(name)
                values = pa.concat_arrays([self._part_values[g][j] for g in uniq.tolist()])
                values = values if values.type == columns[i].type else values.cast(columns[i].type)
                columns[i] = pc.if_else(arrow_mask, values.take(pa.array(take)), columns[i])
        retract_mask = pa.array(is_retract, pa.bool_())
        if self.rowkind_field is not None and is_retract.any() and self.rowkind_field in names:
            # a writer reading kinds from the rowkind.field column must see the retraction as one
            i = names.index(self.rowkind_field)
            columns[i] = pc.if_else(retract_mask, pa.scalar("-D", columns[i].type), columns[i])
        if kinds_in is not None:
            kinds = pc.if_else(retract_mask, pa.scalar("-D"), kinds_in.take(pa.array(rows, pa.int64())))
        else:
            kinds = pa.array(np.where(is_retract, "-D", "+I"), pa.string())
        return pa.RecordBatch.from_arrays(
            [*columns, pa.array(buckets.astype(np.int32), pa.int32()), kinds],
            schema=out.schema.append(pa.field(BUCKET_COLUMN, pa.int32(), nullable=False))
            .append(pa.field(ROW_KIND_COLUMN, pa.string(), nullable=False)))

    # ---------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Drop the index and its directory."""
        try:
            self.index.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self: _Assigner) -> _Assigner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

