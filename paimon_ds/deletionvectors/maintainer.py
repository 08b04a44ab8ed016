"""A bucket's deletion vectors while it is compacted: Paimon's DeletionVectorsMaintainer.

It starts from the bucket's DELETION_VECTORS index files of the snapshot the compaction read, takes
new deleted positions (older versions of keys that a compaction rewrote into a higher level) and
drops the vectors of files that compaction removed. At commit it writes one new index file with every
vector of the bucket, which replaces the old files (none if no vector is left).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..index.hash_index import IndexFileNamer
from ..index.manifest import DELETION_VECTORS_INDEX, IndexFileMeta, IndexManifestEntry, IndexManifestFile
from ..index.paths import index_file_path
from ..manifest.meta import FileKind
from .index_file import read_index_file, write_index_file

if TYPE_CHECKING:
    from ..store.file_store import FileStore


def dv_enabled(table: FileStore) -> bool:
    return table.options.get("deletion-vectors.enabled")


class DeletionVectorsMaintainer:
    def __init__(self, table: FileStore, partition: bytes, bucket: int, base: list[IndexFileMeta],
                 namer: IndexFileNamer | None = None) -> None:
        self.table = table
        self.partition, self.bucket = partition, bucket
        self.base = list(base)
        self.namer = namer or IndexFileNamer()
        self.vectors: dict[str, np.ndarray] = {}
        for f in self.base:
            self.vectors.update(read_index_file(table.io, index_file_path(table, partition, bucket, f), f))
        self.changed = False
        self.written: list[str] = []

    def positions(self, file_name: str) -> np.ndarray | None:
        return self.vectors.get(file_name)

    def delete(self, file_name: str, positions: np.ndarray) -> None:
        """Mark rows of a data file deleted (in addition to those already)."""
        if len(positions) == 0:
            return
        old = self.vectors.get(file_name)
        new = np.asarray(positions, dtype=np.int64)
        self.vectors[file_name] = np.union1d(old, new) if old is not None else np.unique(new)
        self.changed = True

    def remove(self, file_name: str) -> None:
        """A data file left the bucket: its vector goes too."""
        if self.vectors.pop(file_name, None) is not None:
            self.changed = True

    def prepare_commit(self) -> tuple[list[IndexFileMeta], list[IndexFileMeta]]:
        """(new index files, the index files they replace); nothing if no vector changed."""
        if not self.changed:
            return [], []
        live = {name: v for name, v in self.vectors.items() if len(v)}
        new = [write_index_file(self.table, self.partition, self.bucket, live, self.namer)] if live else []
        self.written += [index_file_path(self.table, self.partition, self.bucket, f) for f in new]
        replaced, self.base, self.changed = self.base, new, False
        return new, replaced

    def abort(self) -> None:
        for path in self.written:
            self.table.io.delete_quietly(path)
        self.written = []


def drop_positions(chunks: Iterable, deleted: np.ndarray | None) -> Iterator:
    """The rows of a file read as consecutive batches (or tables), without those at ``deleted``
    positions (sorted): one boolean mask per chunk."""
    if deleted is None or len(deleted) == 0:
        yield from chunks
        return
    start = 0
    for chunk in chunks:
        n = chunk.num_rows
        lo, hi = np.searchsorted(deleted, [start, start + n])
        if hi > lo:
            keep = np.ones(n, dtype=bool)
            keep[deleted[lo:hi] - start] = False
            chunk = chunk.filter(pa.array(keep))
        start += n
        if chunk.num_rows:
            yield chunk


def drop_vectors_of(table: FileStore, snapshot, removed: list) -> list:
    """Index manifest changes that drop the deletion vectors of data files a commit removes (manifest
    entries ``removed``, as of ``snapshot``): each index file holding one is replaced by a new file with
    the rest of its vectors (none if no vector is left)."""
    if not dv_enabled(table) or snapshot is None or not snapshot.index_manifest or not removed:
        return []
    gone = {(e.partition, e.bucket, e.file.file_name) for e in removed}
    changes = []
    for e in IndexManifestFile(table.io, table.root).read(snapshot.index_manifest):
        f = e.index_file
        if f.index_type != DELETION_VECTORS_INDEX or not any(
                (e.partition, e.bucket, name) in gone for name, *_ in f.dv_ranges or ()):
            continue
        path = index_file_path(table, e.partition, e.bucket, f)
        kept = {name: v for name, v in read_index_file(table.io, path, f).items()
                if (e.partition, e.bucket, name) not in gone and len(v)}
        changes.append(IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, f))
        if kept:
            new = write_index_file(table, e.partition, e.bucket, kept, IndexFileNamer())
            changes.append(IndexManifestEntry(FileKind.ADD, e.partition, e.bucket, new))
    return changes
