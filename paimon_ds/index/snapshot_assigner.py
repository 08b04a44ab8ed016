"""Dynamic buckets without a shuffle: a key's bucket as a pure function of its hash and of a snapshot's index.

Spark gives a Python data source no way to route a key to one bucket assigner, so the tasks of one
`df.write.format("paimon")`, `INSERT INTO` or micro-batch assign buckets independently. They agree because
each answer depends only on the key's hash and the partition's hash index at the write's base snapshot,
never on what a task has seen:

- a key the index holds goes to its bucket (as Paimon's PartitionIndex does);
- a new key goes to one of the partition's *candidate* buckets: every bucket with fewer than
  `dynamic-bucket.target-row-num` keys, then new bucket ids (lowest unused first) until the candidates
  have room for `dynamic-bucket.initial-buckets` x target keys, never more buckets than
  `dynamic-bucket.max-buckets` allows. Its hash, mixed, picks a point in [0, 2^32), and each candidate
  owns a slice of that range in proportion to its room, so the buckets fill evenly and reach the target
  together. With no candidate left (every bucket full and the cap reached) a new key goes to one of the
  existing buckets by its hash (Paimon 1.1+ picks one at random).

Two tasks that receive the same new key, and a retried task, therefore pick the same bucket. What no task
knows is how many new keys the others bring: a write with M new keys into a partition whose candidates
have room R fills bucket b to about count_b + M * room_b / R, so buckets overshoot the target only when
M > R (R is at least initial-buckets x target), ending near target * M / R. The next write sees them
full and opens new buckets. `paimon_ds.write` (a shuffle to real assigners) keeps exact sizes.

The commit merges the new hashes into the index files Paimon reads (see operation.commit).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..format.bucket import fmix32
from .bucket_assigner import MAX_BUCKET_ID, key_hashes, max_buckets, partition_groups, target_row_num
from .hash_index import read_hash_index
from .manifest import IndexFileMeta

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# Buckets a partition's first write spreads its keys over, without `dynamic-bucket.initial-buckets`. Paimon's
# own connectors open one bucket per assigner (Spark: one per shuffle partition, 200 by default); one bucket
# would put a whole first load into bucket 0 for good (keys never move), 16 keeps a 32M-key load of the
# default target within 2x and a small table in few files.
DEFAULT_INITIAL_BUCKETS = 16
# Keys of all partitions' indexes a task keeps loaded; beyond it the least recently used partitions are
# dropped and reloaded when needed (the answers do not change: they depend on the snapshot only).
LOADED_HASHES_LIMIT = 1 << 25
_SPACE = 1 << 32
_CHUNK = 1 << 20


def initial_buckets(table: FileStore) -> int:
    return table.options.get("dynamic-bucket.initial-buckets") or DEFAULT_INITIAL_BUCKETS


def mix32(hashes: np.ndarray) -> np.ndarray:
    """Key hashes spread again over [0, 2^32) (as uint64) by murmur3's finaliser, unrelated to other uses."""
    return fmix32(np.asarray(hashes, dtype=np.int32).view(np.uint32).copy()).astype(np.uint64)


def candidate_buckets(counts: dict[int, int], target: int, initial: int, max_buckets_: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(bucket ids, room of each) that new keys of a partition with these keys per bucket may go to."""
    ids = [b for b in sorted(counts) if counts[b] < target]
    room = [target - counts[b] for b in ids]
    free = sum(room)
    limit = MAX_BUCKET_ID if max_buckets_ == -1 else min(max_buckets_, MAX_BUCKET_ID)
    candidate = 0
    while free < initial * target and candidate < limit:
        if candidate not in counts:
            ids.append(candidate)
            room.append(target)
            free += target
        candidate += 1
    if not ids:  # every bucket full and no id left under the cap: spread over the buckets there are
        ids = sorted(counts)
        room = [1] * len(ids)
    if not ids:
        raise ValueError(f"dynamic-bucket.max-buckets={max_buckets_} leaves no bucket id to open")
    return np.array(ids, dtype=np.int32), np.array(room, dtype=np.int64)


class PartitionSnapshotIndex:
    """One partition's hash -> bucket map at a snapshot, and where its new keys go."""

    def __init__(self, hashes: np.ndarray, buckets: np.ndarray, candidates: np.ndarray, room: np.ndarray) -> None:
        self.hashes = hashes  # sorted int32
        self.buckets = buckets  # int16, aligned with hashes
        self.candidates = candidates
        # candidate i owns [bounds[i-1], bounds[i]) of the mixed-hash range, in proportion to its room
        self.bounds = (np.cumsum(room).astype(np.uint64) * np.uint64(_SPACE)) // np.uint64(int(room.sum()))

    @staticmethod
    def load(table: FileStore, partition: bytes, files: dict[int, IndexFileMeta], target: int, initial: int,
             max_buckets_: int) -> PartitionSnapshotIndex:
        """From the partition's HASH index files (bucket -> file) of the snapshot."""
        # one int64 per key, hash above bucket, filled in place file by file: one in-place sort orders the map
        # by hash; it is then split in chunks, so loading peaks near 14 bytes a key and keeps 6
        combined = np.empty(sum(meta.row_count for meta in files.values()), np.int64)
        counts, at = {}, 0
        for bucket, meta in files.items():
            h = read_hash_index(table, partition, bucket, meta)
            counts[bucket] = len(h)
            if at + len(h) > len(combined):  # a file holding more than its manifest entry said
                combined = np.concatenate([combined[:at], np.empty(len(h), np.int64)])
            part = combined[at:at + len(h)]
            part[:] = h
            part <<= 16
            part |= bucket
            at += len(h)
        combined = combined[:at]
        combined.sort()
        hashes, buckets = np.empty(at, np.int32), np.empty(at, np.int16)
        for start in range(0, at, _CHUNK):
            chunk = combined[start:start + _CHUNK]
            hashes[start:start + len(chunk)] = chunk >> 16
            buckets[start:start + len(chunk)] = chunk & 0xFFFF
        del combined
        candidates, room = candidate_buckets(counts, target, initial, max_buckets_)
        return PartitionSnapshotIndex(hashes, buckets, candidates, room)

    def assign(self, key_hash: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(bucket of each key, whether the key is new to the index)."""
        h = np.asarray(key_hash, dtype=np.int32)
        out = np.empty(len(h), dtype=np.int32)
        new = np.ones(len(h), dtype=bool)
        if len(self.hashes):
            pos = np.minimum(np.searchsorted(self.hashes, h), len(self.hashes) - 1)
            found = self.hashes[pos] == h
            out[found] = self.buckets[pos[found]]
            new = ~found
        if new.any():
            slot = np.searchsorted(self.bounds, mix32(h[new]), side="right")
            out[new] = self.candidates[slot]
        return out, new

    @property
    def size(self) -> int:
        return len(self.hashes)


class SnapshotBucketAssigner:
    """Buckets for the rows of one write task of a dynamic-bucket table, from the hash index of the snapshot
    the write started from (``index_files``: (partition, bucket) -> HASH file, none for an overwrite).

    Only the partitions the task writes are loaded, and at most LOADED_HASHES_LIMIT keys of them at once."""

    def __init__(self, table: FileStore, index_files: dict[tuple[bytes, int], IndexFileMeta]) -> None:
        self.table = table
        self.target = target_row_num(table)
        self.initial = initial_buckets(table)
        self.max_buckets = max_buckets(table)
        self.files: dict[bytes, dict[int, IndexFileMeta]] = {}
        for (partition, bucket), meta in index_files.items():
            self.files.setdefault(partition, {})[bucket] = meta
        self.loaded: OrderedDict[bytes, PartitionSnapshotIndex] = OrderedDict()
        self.loaded_hashes = 0
        self.peak_loaded_hashes = 0

    def partition_index(self, partition: bytes) -> PartitionSnapshotIndex:
        index = self.loaded.get(partition)
        if index is not None:
            self.loaded.move_to_end(partition)
            return index
        index = PartitionSnapshotIndex.load(self.table, partition, self.files.get(partition, {}), self.target,
                                            self.initial, self.max_buckets)
        while self.loaded and self.loaded_hashes + index.size > LOADED_HASHES_LIMIT:
            _, dropped = self.loaded.popitem(last=False)
            self.loaded_hashes -= dropped.size
        self.loaded[partition] = index
        self.loaded_hashes += index.size
        self.peak_loaded_hashes = max(self.peak_loaded_hashes, self.loaded_hashes)
        return index

    def assign(self, batch: pa.RecordBatch | pa.Table, key_hash: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """(bucket of every row, whether its key is new to the partition's index), in row order."""
        n = batch.num_rows
        buckets, new = np.empty(n, dtype=np.int32), np.empty(n, dtype=bool)
        if n == 0:
            return buckets, new
        kh = key_hashes(self.table, batch) if key_hash is None else np.asarray(key_hash, dtype=np.int32)
        for partition, rows in partition_groups(self.table, batch):
            index = self.partition_index(partition)
            if rows is None:
                buckets[:], new[:] = index.assign(kh)
            else:
                buckets[rows], new[rows] = index.assign(kh[rows])
        return buckets, new
