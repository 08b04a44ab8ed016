"""Hash index files (`index/index-<uuid>-<n>`, or in the bucket's directory: see paths.py) and their upkeep
per bucket.

A HASH index file lists the hash of every key a dynamic bucket holds: 32-bit ints, big-endian,
back to back, nothing else (Paimon's HashIndexFile over IntFileUtils; a reader stops at the end
of the file). The hash is the trimmed primary key's BinaryRow hashCode (see bucket_assigner).

HashIndexMaintainer follows Paimon's class of the same name: a bucket's writer records the hash of every
record it writes (deletes too), and at commit hands over the hashes its bucket's index file in the base
snapshot lacks. Writers write no index file: the committer merges every writer's new hashes into the
bucket's current file (merge_hashes), so several writers of one bucket, and commits that raced, end with
one full file per bucket, as Paimon's readers and writers expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import CorruptFileError
from ..fs.file_io import FileIO
from ..io.names import FileNamer
from .manifest import HASH_INDEX, IndexFileMeta
from .paths import index_file_path, new_index_file_path

if TYPE_CHECKING:
    from ..store.file_store import FileStore

# hashes kept unsorted by a maintainer before they are deduplicated (bounds its memory)
_PENDING_LIMIT = 1 << 20


class IndexFileNamer(FileNamer):
    """`index-<uuid>-<n>`, one uuid per writer, as Paimon's FileStorePathFactory.indexFileFactory (see FileNamer:
    a failed job's index files are found by name with its data files)."""

    def __init__(self, job_prefix: str | None = None) -> None:
        super().__init__(job_prefix, "index", "")


def write_hash_index(table: FileStore, partition: bytes, bucket: int, hashes: np.ndarray,
                     namer: IndexFileNamer) -> IndexFileMeta:
    """Write ``hashes`` (int32) as a new HASH index file of the bucket; its IndexFileMeta (row count = hashes)."""
    name = namer.next()
    path, external = new_index_file_path(table, partition, bucket, name)
    data = np.ascontiguousarray(hashes, dtype=np.int32).astype(">i4").tobytes()
    table.io.write_bytes(path, data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes), external_path=external)


def read_hash_index(table: FileStore, partition: bytes, bucket: int, file: IndexFileMeta) -> np.ndarray:
    """The int32 hashes of the bucket's HASH index file ``file``."""
    if file.index_type != HASH_INDEX:
        raise ValueError(f"{file.file_name} is a {file.index_type} index, not a hash index")
    path = index_file_path(table, partition, bucket, file)
    hashes = read_hash_file(table.io, path)
    if file.file_size > 0 and hashes.nbytes != file.file_size:
        # no checksum in the format: the size its index manifest recorded is the one check of a whole file
        problem = ("the file is empty (0 bytes)" if hashes.nbytes == 0 else
                   f"{hashes.nbytes} bytes of hashes where its index manifest records {file.file_size} (truncated "
                   "or damaged)")
        raise CorruptFileError(path, "hash index file", problem)
    return hashes


def read_hash_file(io: FileIO, path: str) -> np.ndarray:
    """The int32 hashes of the HASH index file at ``path`` (a trailing partial int is ignored, as Java's reader
    does)."""
    data = io.read_bytes(path)
    usable = len(data) - len(data) % 4
    return np.frombuffer(data[:usable], dtype=">i4").astype(np.int32)


class HashIndexMaintainer:
    """The keys one writer adds to one bucket of a dynamic-bucket table."""

    def __init__(self, table: FileStore, partition: bytes, bucket: int, base: IndexFileMeta | None) -> None:
        self.table = table
        self.partition, self.bucket = partition, bucket
        self.base = base  # the bucket's index file in the writer's base snapshot (None: no index yet)
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0

    def notify(self, key_hashes: np.ndarray) -> None:
        """Record the keys of rows written to the bucket (any row kind, as Paimon's notifyNewRecord)."""
        if len(key_hashes) == 0:
            return
        self._pending.append(np.asarray(key_hashes, dtype=np.int32))
        self._pending_rows += len(key_hashes)
        if self._pending_rows > _PENDING_LIMIT:
            self._pending = [unique_sorted(np.concatenate(self._pending))]
            self._pending_rows = len(self._pending[0])

    def new_hashes(self) -> np.ndarray:
        """The recorded hashes the base file lacks (sorted, unique); empty if every key was indexed."""
        if not self._pending:
            return np.empty(0, np.int32)
        pending = unique_sorted(np.concatenate(self._pending))
        self._pending, self._pending_rows = [], 0
        if self.base is None or len(pending) == 0:
            return pending
        old = read_hash_index(self.table, self.partition, self.bucket, self.base)
        return pending[~np.isin(pending, old)]


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique by sort-then-mask (numpy 2.x's np.unique takes a hash path that is much slower on ints)."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def merge_hashes(table: FileStore, partition: bytes, bucket: int, base: IndexFileMeta | None, added: np.ndarray,
                 namer: IndexFileNamer) -> IndexFileMeta | None:
    """A new full index file of the bucket: ``base``'s hashes and ``added``; None if ``base`` has them all."""
    old = read_hash_index(table, partition, bucket, base) if base is not None else np.empty(0, np.int32)
    fresh = added[~np.isin(added, old)] if len(old) else added
    if len(fresh) == 0 and base is not None:
        return None
    return write_hash_index(table, partition, bucket, unique_sorted(np.concatenate([old, fresh])), namer)
