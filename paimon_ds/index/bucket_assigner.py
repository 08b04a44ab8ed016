"""Dynamic bucket assignment (`bucket=-1` on a primary-key table that holds its partition keys).

Paimon's HASH_DYNAMIC mode, vectorised per batch. A key's hash is the hashCode of its trimmed
primary key (primary key minus partition keys) as a BinaryRow: murmur-hash-by-words with seed 42,
the same function as the fixed-bucket hash (format/bucket.py). Per partition:

- a key whose hash the partition's hash index already holds keeps that bucket (PartitionIndex.assign
  step 1), so an upsert lands where the key lives;
- a new hash goes to the first bucket, in id order, that holds fewer than
  `dynamic-bucket.target-row-num` hashes (step 2; Java walks a HashMap of Integer ids, which is id
  order while the ids are below the map's capacity);
- when every bucket is full, a new bucket opens: the lowest id not used that passes the assigner
  filter `bucket % numAssigners == assignId % numAssigners`, so parallel assigners never open the
  same id (step 3);
- `dynamic-bucket.max-buckets` (not in Paimon 0.9: added in 1.1, implemented here as Paimon 1.1+
  does) caps the ids a new bucket may take; past the cap a new hash goes to a random bucket of this
  assigner (step 4).

Parallel assigners (Flink's dynamic-bucket sink, the Spark shuffle in paimon_ds.spark.cluster):
rows are routed to assigner `computeAssigner(partitionHash, keyHash, numChannels, numAssigners)`,
and `numAssigners` is `dynamic-bucket.initial-buckets` capped by the channels (Paimon 0.9 uses the
option only that way). Each assigner loads, per partition, the hashes routed to it and the counts
of its own buckets from the hash index of a snapshot (PartitionIndex.loadIndex).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.binary_row import EMPTY_ROW, serialize_arrow_row
from ..format.bucket import hash_rows, row_hashes
from ..options.registry import OptionError
from ..schema.types import conform_array, to_arrow_type
from ..snapshot.manager import Snapshot
from .hash_index import read_hash_index
from .manifest import HASH_INDEX, IndexManifestEntry, IndexManifestFile

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# An int column with this name gives each row's bucket (assigned upstream, e.g. by the Spark shuffle).
BUCKET_COLUMN = "_paimon_ds_bucket"
DEFAULT_TARGET_ROW_NUM = 2_000_000
# Java keeps bucket ids in shorts: new ids are tried in [0, Short.MAX_VALUE).
MAX_BUCKET_ID = 32767


# ------------------------------------------------------------------------------------ table facts
def is_dynamic_bucket(table: FileStore) -> bool:
    """Paimon's HASH_DYNAMIC: a primary key holding every partition key, and bucket = -1."""
    schema = table.table_schema
    return (bool(schema.primary_keys) and table.bucket == -1
            and all(k in schema.primary_keys for k in schema.partition_keys))


def trimmed_primary_keys(table: FileStore) -> list[str]:
    return [k for k in table.table_schema.primary_keys if k not in table.table_schema.partition_keys]


def _columns(table: FileStore, batch: pa.RecordBatch | pa.Table, names: list[str]) -> list[pa.Array]:
    """The named columns in the table's Arrow types (input may come with other, castable types)."""
    out = []
    for name in names:
        idx = batch.schema.get_field_index(name)
        if idx < 0:
            raise KeyError(f"the batch has no column {name!r}")
        col = batch.column(idx)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        want = to_arrow_type(table.table_schema.field(name).type)
        out.append(conform_array(col, want))
    return out


_EMPTY_ROW_HASH = int(hash_rows(np.zeros(8, np.uint8), np.array([0, 8], np.int64))[0])


def _hashes_of(table: FileStore, batch: pa.RecordBatch | pa.Table, names: list[str]) -> np.ndarray:
    if not names:
        return np.full(batch.num_rows, _EMPTY_ROW_HASH, dtype=np.int32)  # BinaryRow.EMPTY_ROW
    return row_hashes(_columns(table, batch, names), [table.table_schema.field(n).type for n in names])


def key_hashes(table: FileStore, batch: pa.RecordBatch | pa.Table) -> np.ndarray:
    """Each row's trimmed primary key as a BinaryRow, its hashCode (int32): the hash index's unit."""
    return _hashes_of(table, batch, trimmed_primary_keys(table))


def partition_hashes(table: FileStore, batch: pa.RecordBatch | pa.Table) -> np.ndarray:
    """Each row's partition as a BinaryRow, its hashCode (int32)."""
    return _hashes_of(table, batch, list(table.table_schema.partition_keys))


def partition_hash(partition: bytes) -> int:
    """hashCode of a serialized partition (4-byte arity, then the BinaryRow)."""
    row = np.frombuffer(partition[4:], dtype=np.uint8)
    return int(hash_rows(row, np.array([0, len(row)], np.int64))[0])


def _java_mod(a: np.ndarray, n: int) -> np.ndarray:
    return np.fmod(a, n)  # Java's % truncates toward zero, as fmod does


def assigner_ids(partition_hash: np.ndarray | int, key_hash: np.ndarray | int, num_channels: int,
                 num_assigners: int) -> np.ndarray:
    """BucketAssigner.computeAssigner, vectorised: which assigner channel handles each row."""
    ph = np.asarray(partition_hash, dtype=np.int64)
    kh = np.asarray(key_hash, dtype=np.int64)
    start = np.abs(_java_mod(ph, num_channels))
    ident = np.abs(_java_mod(kh, num_assigners))
    return ((start + ident) % num_channels).astype(np.int32)


def is_my_bucket(bucket: int, num_assigners: int, assign_id: int) -> bool:
    """BucketAssigner.isMyBucket: the ids this assigner may open."""
    return bucket % num_assigners == assign_id % num_assigners


def default_num_assigners(table: FileStore, num_channels: int) -> int:
    """`dynamic-bucket.initial-buckets` capped by the channels, or the channels (Paimon 0.9's sink)."""
    n = table.options.get("dynamic-bucket.initial-buckets") or num_channels
    return min(n, num_channels)


def target_row_num(table: FileStore) -> int:
    return table.options.get("dynamic-bucket.target-row-num")


def max_buckets(table: FileStore) -> int:
    return table.options.get("dynamic-bucket.max-buckets")


def snapshot_index_entries(table: FileStore, snapshot: Snapshot | None,
                           index_type: str | None = HASH_INDEX) -> list[IndexManifestEntry]:
    """The index manifest entries of ``snapshot`` (of one type; None: all)."""
    if snapshot is None or not snapshot.index_manifest:
        return []
    entries = IndexManifestFile(table.io, table.root).read(snapshot.index_manifest)
    return [e for e in entries if index_type is None or e.index_file.index_type == index_type]


# ------------------------------------------------------------------------------- partition index
class PartitionIndex:
    """One partition's hash -> bucket map and bucket fill counts, for one assigner (Paimon's PartitionIndex).

    The map is two sorted arrays (hashes, buckets) so a batch is looked up with one searchsorted.
    ``counts`` holds this assigner's buckets that may still take keys, with how many hashes each holds.
    """

    def __init__(self, hashes: np.ndarray, buckets: np.ndarray, counts: dict[int, int], target: int) -> None:
        order = np.argsort(hashes, kind="stable")
        self.hashes = np.ascontiguousarray(hashes[order], dtype=np.int32)
        self.buckets = np.ascontiguousarray(buckets[order], dtype=np.int16)
        self.counts = dict(counts)
        self.total = sorted(counts)  # this assigner's buckets: the ids it may not open again
        self._total_set = set(self.total)
        self.target = target

    @staticmethod
    def load(table: FileStore, entries: list[IndexManifestEntry], target: int, partition_hash_: int,
             num_channels: int, num_assigners: int, assign_id: int) -> PartitionIndex:
        """From the partition's HASH index files: the hashes routed to this assigner, and the hash
        count of each bucket this assigner owns (PartitionIndex.loadIndex)."""
        hashes, buckets = [], []
        counts: dict[int, int] = {}
        for e in entries:
            h = read_hash_index(table, e.partition, e.bucket, e.index_file)
            mine = assigner_ids(partition_hash_, h, num_channels, num_assigners) == assign_id
            hashes.append(h[mine])
            buckets.append(np.full(int(mine.sum()), e.bucket, dtype=np.int16))
            if is_my_bucket(e.bucket, num_assigners, assign_id):
                counts[e.bucket] = counts.get(e.bucket, 0) + len(h)
        all_h = np.concatenate(hashes) if hashes else np.empty(0, np.int32)
        all_b = np.concatenate(buckets) if buckets else np.empty(0, np.int16)
        return PartitionIndex(all_h, all_b, counts, target)

    def lookup(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, bucket of each found hash; -1 elsewhere)."""
        out = np.full(len(h), -1, dtype=np.int32)
        if len(self.hashes) == 0:
            return np.zeros(len(h), bool), out
        pos = np.searchsorted(self.hashes, h)
        pos_c = np.minimum(pos, len(self.hashes) - 1)
        found = self.hashes[pos_c] == h
        out[found] = self.buckets[pos_c[found]]
        return found, out

    def assign(self, h: np.ndarray, num_assigners: int, assign_id: int, max_buckets_: int,
               rng: np.random.Generator) -> np.ndarray:
        h = np.asarray(h, dtype=np.int32)
        found, out = self.lookup(h)
        if found.all():
            return out
        new = h[~found]
        uniq, first, inverse = np.unique(new, return_index=True, return_inverse=True)
        # Rows are assigned in input order: the first occurrence of a new hash decides its bucket.
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        assigned_in_order = self._assign_new(len(uniq), num_assigners, assign_id, max_buckets_, rng)
        per_uniq = assigned_in_order[rank]
        out[~found] = per_uniq[inverse.reshape(-1)]
        self._insert(uniq, per_uniq)
        return out

    def _assign_new(self, n: int, num_assigners: int, assign_id: int, max_buckets_: int,
                    rng: np.random.Generator) -> np.ndarray:
        """Buckets for ``n`` new hashes, in arrival order: fill non-full buckets, then open new ones."""
        out = np.empty(n, dtype=np.int32)
        i = 0
        for b in sorted(self.counts):
            if i == n:
                break
            room = self.target - self.counts[b]
            if room <= 0:
                del self.counts[b]  # full: Paimon drops it from the non-full buckets too
                continue
            take = min(room, n - i)
            out[i:i + take] = b
            self.counts[b] += take
            i += take
        limit = MAX_BUCKET_ID if max_buckets_ == -1 else min(max_buckets_, MAX_BUCKET_ID)
        candidate = 0
        while i < n:
            while candidate < limit and (not is_my_bucket(candidate, num_assigners, assign_id)
                                         or candidate in self._total_set):
                candidate += 1
            if candidate >= limit:
                if max_buckets_ == -1:
                    raise RuntimeError(f"Too many buckets ({max(self.total)}): increase "
                                       f"dynamic-bucket.target-row-num (now {self.target})")
                if not self.total:
                    raise RuntimeError(f"dynamic-bucket.max-buckets={max_buckets_} leaves assigner {assign_id} "
                                       f"of {num_assigners} no bucket id to open")
                # past the cap: a random bucket of this assigner (Paimon 1.1+)
                out[i:] = rng.choice(np.array(self.total, dtype=np.int32), size=n - i)
                break
            b = candidate
            self.total.append(b)
            self._total_set.add(b)
            take = min(self.target, n - i)
            out[i:i + take] = b
            self.counts[b] = take
            i += take
        return out

    def _insert(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Add new (sorted, unique, absent) hashes to the sorted map."""
        pos = np.searchsorted(self.hashes, hashes)
        self.hashes = np.insert(self.hashes, pos, hashes.astype(np.int32))
        self.buckets = np.insert(self.buckets, pos, buckets.astype(np.int16))

    def bucket_sizes(self) -> dict[int, int]:
        """Hashes per bucket known to this index (for tests and diagnostics)."""
        b, c = np.unique(self.buckets, return_counts=True)
        return {int(x): int(y) for x, y in zip(b, c)}


# ------------------------------------------------------------------------------------- assigner
class DynamicBucketAssigner:
    """Paimon's HashBucketAssigner for one assigner channel: buckets for rows, per batch.

    ``num_channels``: assigner channels rows are routed over (computeAssigner); ``num_assigners``:
    assigners that may open buckets (default `dynamic-bucket.initial-buckets`, capped by the
    channels); ``assign_id``: this channel. Rows routed elsewhere are refused, as Paimon does.
    ``snapshot``: whose hash index to start from (a Snapshot, an id, or None: the latest when the
    first partition is loaded); ``overwrite``: ignore the existing index (the data is replaced,
    Paimon's SimpleHashBucketAssigner).
    """

    def __init__(self, table: FileStore, num_channels: int = 1, num_assigners: int | None = None, assign_id: int = 0,
                 snapshot: Snapshot | int | None = None, overwrite: bool = False) -> None:
        if not is_dynamic_bucket(table):
            raise OptionError(f"{table.path} is not a dynamic-bucket table (bucket=-1 with a primary key "
                              "that holds the partition keys)")
        if num_channels <= 0 or not 0 <= assign_id < num_channels:
            raise ValueError(f"assign_id {assign_id} is not one of {num_channels} channel(s)")
        self.table = table
        self.num_channels = num_channels
        wanted = num_assigners if num_assigners is not None else default_num_assigners(table, num_channels)
        if wanted <= 0:
            raise ValueError(f"num_assigners must be positive, got {wanted}")
        self.num_assigners = min(wanted, num_channels)
        self.assign_id = assign_id
        self.target = target_row_num(table)
        self.max_buckets = max_buckets(table)
        self.overwrite = overwrite
        self._snapshot = snapshot
        self._entries: dict[bytes, list[IndexManifestEntry]] | None = None
        self.partitions: dict[bytes, PartitionIndex] = {}
        self._rng = np.random.default_rng()

    def _entries_by_partition(self) -> dict[bytes, list[IndexManifestEntry]]:
        if self._entries is None:
            self._entries = {}
            if not self.overwrite and self.table.is_created:
                snap = self._snapshot
                if isinstance(snap, int):
                    snap = self.table.snapshot_manager.snapshot(snap)
                elif snap is None:
                    snap = self.table.latest_snapshot()
                for e in snapshot_index_entries(self.table, snap):
                    self._entries.setdefault(e.partition, []).append(e)
        return self._entries

    def partition_index(self, partition: bytes) -> PartitionIndex:
        index = self.partitions.get(partition)
        if index is None:
            index = PartitionIndex.load(self.table, self._entries_by_partition().get(partition, []), self.target,
                                        partition_hash(partition), self.num_channels, self.num_assigners,
                                        self.assign_id)
            self.partitions[partition] = index
        return index

    def assign_hashes(self, partition: bytes, key_hash: np.ndarray) -> np.ndarray:
        """Buckets for keys (their hashes, in row order) of one partition (serialized BinaryRow)."""
        key_hash = np.asarray(key_hash, dtype=np.int32)
        if self.num_channels > 1:
            ids = assigner_ids(partition_hash(partition), key_hash, self.num_channels, self.num_assigners)
            if (ids != self.assign_id).any():
                raise ValueError(f"{int((ids != self.assign_id).sum())} row(s) belong to another assigner than "
                                 f"{self.assign_id} (route rows with assigner_ids before assigning)")
        return self.partition_index(partition).assign(key_hash, self.num_assigners, self.assign_id,
                                                      self.max_buckets, self._rng)

    def assign(self, batch: pa.RecordBatch | pa.Table, key_hash: np.ndarray | None = None) -> np.ndarray:
        """The bucket of every row of ``batch`` (int32), in row order. ``key_hash``: key_hashes(), if known."""
        if batch.num_rows == 0:
            return np.empty(0, dtype=np.int32)
        kh = key_hashes(self.table, batch) if key_hash is None else np.asarray(key_hash, dtype=np.int32)
        out = np.empty(batch.num_rows, dtype=np.int32)
        for partition, rows in partition_groups(self.table, batch):
            if rows is None:
                out[:] = self.assign_hashes(partition, kh)
            else:
                out[rows] = self.assign_hashes(partition, kh[rows])
        return out


def partition_groups(table: FileStore, batch: pa.RecordBatch | pa.Table) -> Iterator[tuple[bytes, np.ndarray | None]]:
    """(serialized partition, row indices in order) per partition of the batch; None: every row."""
    keys = list(table.table_schema.partition_keys)
    if not keys:
        yield EMPTY_ROW, None
        return
    cols = _columns(table, batch, keys)
    types = [table.table_schema.field(k).type for k in keys]
    names = [f"p{i}" for i in range(len(keys))]
    grouped = (pa.table(cols, names=names).append_column("row", pa.array(np.arange(batch.num_rows, dtype=np.int64)))
               .group_by(names, use_threads=False).aggregate([("row", "list")]))
    if grouped.num_rows == 1:
        yield serialize_arrow_row([c.slice(0, 1) for c in cols], types), None
        return
    lists = grouped.column("row_list")
    for g in range(grouped.num_rows):
        rows = lists[g].values.to_numpy()
        first = int(rows[0])
        yield serialize_arrow_row([c.slice(first, 1) for c in cols], types), np.sort(rows)
