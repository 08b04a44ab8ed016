"""Hash index files (`index/index-<uuid>-<n>`) and their upkeep per bucket.

A HASH index file lists the hash of every key a dynamic bucket holds: 32-bit ints, big-endian,
back to back, nothing else (Paimon's HashIndexFile over IntFileUtils; a reader stops at the end
of the file). The hash is the trimmed primary key's BinaryRow hashCode (see bucket_assigner).

HashIndexMaintainer is Paimon's class of the same name: a bucket's writer starts from the bucket's
index file in its base snapshot, adds the hash of every record it writes (deletes too), and at
commit writes a new full file only if some hash was new; the commit replaces the old file with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..fs import FileIO
from ..operation.names import FileNamer
from .manifest import HASH_INDEX, IndexFileMeta

if TYPE_CHECKING:
    from ..table import Table

INDEX_DIR = "index"
# hashes kept unsorted by a maintainer before they are deduplicated (bounds its memory)
_PENDING_LIMIT = 1 << 20


class IndexFileNamer(FileNamer):
    """`index-<uuid>-<n>`, one uuid per writer, as Paimon's FileStorePathFactory.indexFileFactory (see FileNamer:
    a failed job's index files are found by name with its data files)."""

    def __init__(self, job_prefix: str | None = None) -> None:
        super().__init__(job_prefix, "index", "")


def index_path(table_root: str, file_name: str) -> str:
    return f"{table_root}/{INDEX_DIR}/{file_name}"


def write_hash_index(io: FileIO, table_root: str, hashes: np.ndarray, namer: IndexFileNamer) -> IndexFileMeta:
    """Write ``hashes`` (int32) as a new HASH index file; its IndexFileMeta (row count = hashes)."""
    name = namer.next()
    data = np.ascontiguousarray(hashes, dtype=np.int32).astype(">i4").tobytes()
    io.write_bytes(index_path(table_root, name), data)
    return IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))


def read_hash_index(io: FileIO, table_root: str, file: IndexFileMeta | str) -> np.ndarray:
    """The int32 hashes of a HASH index file (a trailing partial int is ignored, as Java's reader does)."""
    if isinstance(file, IndexFileMeta):
        if file.index_type != HASH_INDEX:
            raise ValueError(f"{file.file_name} is a {file.index_type} index, not a hash index")
        file = file.file_name
    data = io.read_bytes(index_path(table_root, file))
    usable = len(data) - len(data) % 4
    return np.frombuffer(data[:usable], dtype=">i4").astype(np.int32)


class HashIndexMaintainer:
    """The hash index of one (partition, bucket) while a writer adds records to it."""

    def __init__(self, table: Table, base: IndexFileMeta | None, namer: IndexFileNamer) -> None:
        self.table = table
        self.base = base  # the bucket's index file in the writer's base snapshot (None: no index yet)
        self.namer = namer
        self._pending: list[np.ndarray] = []
        self._pending_rows = 0
        self.written: list[str] = []  # paths of index files this maintainer wrote

    def notify(self, key_hashes: np.ndarray) -> None:
        """Record the keys of rows written to the bucket (any row kind, as Paimon's notifyNewRecord)."""
        if len(key_hashes) == 0:
            return
        self._pending.append(np.asarray(key_hashes, dtype=np.int32))
        self._pending_rows += len(key_hashes)
        if self._pending_rows > _PENDING_LIMIT:
            self._pending = [np.unique(np.concatenate(self._pending))]
            self._pending_rows = len(self._pending[0])

    def prepare_commit(self) -> tuple[IndexFileMeta | None, IndexFileMeta | None]:
        """(new index file, the file it replaces): a new full file only if some key was new, else (None, None)."""
        if not self._pending:
            return None, None
        pending = np.unique(np.concatenate(self._pending))
        self._pending, self._pending_rows = [], 0
        old = (np.unique(read_hash_index(self.table.io, self.table.root, self.base))
               if self.base is not None else np.empty(0, np.int32))
        if len(old) and np.isin(pending, old, assume_unique=True).all():
            return None, None  # every key was in the index already: Paimon writes no new file
        merged = np.union1d(old, pending).astype(np.int32)
        new = write_hash_index(self.table.io, self.table.root, merged, self.namer)
        self.written.append(index_path(self.table.root, new.file_name))
        replaced, self.base = self.base, new
        return new, replaced

    def abort(self) -> None:
        for path in self.written:
            self.table.io.delete_quietly(path)
        self.written = []
