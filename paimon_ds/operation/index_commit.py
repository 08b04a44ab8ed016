"""A commit's changes to the index manifest: dynamic-bucket hash indexes and deletion vectors.

Writers of a dynamic-bucket table hand the committer the key hashes they added per bucket
(``CommitMessage.added_hashes``); each commit attempt merges them into the bucket's hash index file of
the latest snapshot, refusing as a conflict a key that a concurrent commit put in another bucket of the
same partition. A compaction hands it the deletion-vector files it replaced and wrote. ``IndexCommit``
derives the new snapshot's index manifest from the latest one and those changes, and deletes the hash
index files of attempts that did not land (operation/commit.py runs the attempts).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..index.hash_index import IndexFileNamer, merge_hashes, read_hash_index, unique_sorted
from ..index.manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
    IndexManifestFile,
    combine,
)
from ..index.paths import index_file_path
from ..manifest.meta import FileKind
from ..snapshot.manager import Snapshot
from .messages import CommitConflict, CommitMessage, OverwriteScope, overwritten

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..store.file_store import FileStore


@dataclass(frozen=True)
class IndexChange:
    """A bucket's new hash index file, and the one (of the writer's base snapshot) it replaces."""

    partition: bytes
    bucket: int
    new: IndexFileMeta
    replaced: IndexFileMeta | None


def hashes_added(messages: Sequence[CommitMessage]) -> dict[tuple[bytes, int], np.ndarray]:
    """Per (partition, bucket), the key hashes its writers added to the hash index (several writers of one
    bucket in one commit, when a write is not clustered by bucket, each bring their own)."""
    if any(f.index_type == HASH_INDEX for m in messages for f in m.new_index_files):
        raise ValueError("hash index changes travel as added_hashes, not as index files")
    by_bucket: dict[tuple[bytes, int], list[np.ndarray]] = {}
    for m in messages:
        if m.added_hashes is not None and len(m.added_hashes):
            by_bucket.setdefault((m.partition, m.bucket), []).append(m.added_hashes)
    return {k: v[0] if len(v) == 1 else unique_sorted(np.concatenate(v)) for k, v in by_bucket.items()}


def deletion_vector_changes(messages: Sequence[CommitMessage]) -> list[IndexManifestEntry]:
    """The deletion-vector index files a compaction replaced (DELETE) and wrote (ADD)."""
    return ([IndexManifestEntry(FileKind.DELETE, m.partition, m.bucket, f) for m in messages
             for f in m.deleted_index_files if f.index_type == DELETION_VECTORS_INDEX]
            + [IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, f) for m in messages
               for f in m.new_index_files if f.index_type == DELETION_VECTORS_INDEX])


class IndexCommit:
    """The index side of one TableCommit: hash index files written across its attempts, and each attempt's
    index manifest."""

    def __init__(self, table: FileStore, manifest: IndexManifestFile) -> None:
        self.table = table
        self.manifest = manifest
        # hash index files this commit wrote, by (partition, bucket, file they extend): reused by a retry that
        # finds the same file, deleted unless the snapshot that landed references them
        self.written: dict[tuple[bytes, int, str | None], IndexFileMeta | None] = {}

    def hash_changes(self, added: dict[tuple[bytes, int], np.ndarray], latest: Snapshot | None,
                     base_id: int | None, overwrite: OverwriteScope) -> list[IndexChange]:
        """Each bucket's new hash index file: its file at ``latest`` (none in an overwritten partition) with the
        added hashes merged in. Refuses, as a conflict, a key that a commit made since the writers' base
        snapshot ``base_id`` put in another bucket of the same partition: it would live in two buckets."""
        if not added:
            return []
        latest_files = self.hash_files(latest)
        self._check_conflicts(added, latest, latest_files, base_id, overwrite)
        changes = []
        for (partition, bucket), hashes in added.items():
            base = None if overwritten(overwrite, partition) else latest_files.get((partition, bucket))
            key = (partition, bucket, base.file_name if base is not None else None)
            if key not in self.written:
                self.written[key] = merge_hashes(self.table.store, partition, bucket, base, hashes, IndexFileNamer())
            if self.written[key] is not None:
                changes.append(IndexChange(partition, bucket, self.written[key], base))
        return changes

    def _check_conflicts(self, added: dict[tuple[bytes, int], np.ndarray], latest: Snapshot | None,
                         latest_files: dict[tuple[bytes, int], IndexFileMeta], base_id: int | None,
                         overwrite: OverwriteScope) -> None:
        sm = self.table.snapshot_manager
        base_files = self.hash_files(sm.snapshot(base_id)) if base_id is not None else {}
        for partition in {p for p, _ in added if not overwritten(overwrite, p)}:
            now = {b: f.file_name for (p, b), f in latest_files.items() if p == partition}
            then = {b: f.file_name for (p, b), f in base_files.items() if p == partition}
            if now == then:
                continue  # nobody changed the partition's index: the writers' view is still the table's
            first = (base_id or 0) + 1
            if latest is not None and any(sm.snapshot(i).commit_kind == "OVERWRITE"
                                          for i in range(max(first, sm.earliest_id() or first), latest.id + 1)):
                raise CommitConflict(f"an overwrite of {self.table.path} committed while this write ran rebuilt the "
                                     "hash index of a partition it writes; nothing was committed. Retry the write")
            for theirs_bucket, name in now.items():
                if then.get(theirs_bucket) == name:
                    continue
                theirs = read_hash_index(self.table.store, partition, theirs_bucket,
                                         latest_files[(partition, theirs_bucket)])
                for (p, bucket), ours in added.items():
                    if p == partition and bucket != theirs_bucket and np.isin(ours, theirs).any():
                        raise CommitConflict(
                            f"a commit to {self.table.path} since this write started put "
                            f"{int(np.isin(ours, theirs).sum())} of the keys it adds to bucket {bucket} into bucket "
                            f"{theirs_bucket} of the same partition; a key may live in one bucket only, so nothing "
                            "was committed. Retry the write (one writer per dynamic-bucket partition at a time)")

    def manifest_for(self, latest: Snapshot | None, overwrite: OverwriteScope, changes: list[IndexChange],
                     dv_changes: list[IndexManifestEntry]) -> str | None:
        """The new snapshot's index manifest: the latest one, or (if this commit changes the index) a new
        one with the latest entries minus the overwritten partitions' and the replaced, plus the new
        (``changes`` extend the latest snapshot's files, see hash_changes)."""
        previous = latest.index_manifest if latest is not None else None
        if not changes and not dv_changes and (overwrite is None or previous is None):
            return previous  # as Paimon: a commit that changes no index keeps the manifest
        entries = self.manifest.read(previous) if previous else []
        live_names = {e.index_file.file_name for e in entries}
        gone = [e.index_file.file_name for e in dv_changes if e.kind == FileKind.DELETE
                and e.index_file.file_name not in live_names]
        if gone:  # another compaction changed these vectors since this one read them
            raise CommitConflict(f"deletion vector files {gone[:3]} of {self.table.path} were replaced by another "
                                 "commit; nothing was committed")
        deletes = []
        if overwrite is not None:
            deletes = [IndexManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.index_file) for e in entries
                       if overwritten(overwrite, e.partition)]
        adds = [IndexManifestEntry(FileKind.ADD, c.partition, c.bucket, c.new) for c in changes]
        deletes += [e for e in dv_changes if e.kind == FileKind.DELETE]
        adds += [e for e in dv_changes if e.kind == FileKind.ADD]
        if not deletes and not adds:
            return previous
        return self.manifest.write(combine(entries, deletes + adds))

    def discard_unlanded(self, landed: Snapshot | None) -> None:
        """Delete the hash index files this commit wrote that ``landed`` (None: nothing landed) does not use."""
        kept: set[str] = set()
        if landed is not None and landed.index_manifest:
            try:
                kept = {e.index_file.file_name for e in self.manifest.read(landed.index_manifest)}
            except OSError as e:  # the commit landed: what it does not use stays, as orphans, rather than guessed
                log.warning("commit to %s: its index manifest was not read back (%s); hash index files of attempts "
                            "that did not land are left for remove_orphan_files", self.table.path, e)
                self.written = {}
                return
        for (partition, bucket, _), meta in self.written.items():
            if meta is not None and meta.file_name not in kept:
                self.table.io.delete_quietly(index_file_path(self.table.store, partition, bucket, meta))
        self.written = {}

    def hash_files(self, snapshot: Snapshot | None) -> dict[tuple[bytes, int], IndexFileMeta]:
        """(partition, bucket) -> HASH index file of a snapshot."""
        if snapshot is None or not snapshot.index_manifest:
            return {}
        return {(e.partition, e.bucket): e.index_file for e in self.manifest.read(snapshot.index_manifest)
                if e.index_file.index_type == HASH_INDEX}
