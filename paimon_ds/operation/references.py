"""The files a table's snapshots, tags and changelogs use, across its branches: what maintenance must keep.

Branches share data files, manifests and index files, so a file one branch dropped may still be another's;
a snapshot's expiry may have left its changelog (`changelog/changelog-<id>`), which keeps the files a stream
still reads. Metadata a Paimon expiry already removed (a tag's changelog, the manifest lists of a changelog
whose snapshot expired) is skipped, not an error.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..index.manifest import IndexManifestFile
from ..index.paths import index_file_rel
from ..manifest.meta import FileKind, ManifestEntry, ManifestFileMeta, live_entries
from ..snapshot.branch import BranchError
from ..snapshot.manager import Snapshot, SnapshotNotFound
from .scan import TableScan

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)


def tag_snapshots(table: FileStore) -> list[Snapshot]:
    sm = table.snapshot_manager
    return [sm.tag(name) for name in sm.tag_names()]


def changelog_snapshots(table: FileStore) -> list[Snapshot]:
    sm = table.snapshot_manager
    out = []
    for cid in sm.changelog_ids():
        try:
            out.append(sm.changelog(cid))
        except SnapshotNotFound:
            continue  # expired while we looked
    return out


class DataPaths:
    """Table-relative paths of a scan's bucket directories and data files, each directory computed once."""

    def __init__(self, scan: TableScan) -> None:
        self.scan = scan
        self.dirs: dict[tuple[bytes, int], str] = {}

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        if key not in self.dirs:
            self.dirs[key] = self.scan.bucket_dir(partition, bucket)
        return self.dirs[key]

    def data_path(self, e: ManifestEntry) -> str:
        """Table-relative path of a data file, or its full external location (`_EXTERNAL_PATH`)."""
        return e.file.external_path or f"{self.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}"


class References:
    """Data files (relative to the table; external ones by their full location) and metadata files (names under
    `manifest/`) a set of snapshots uses."""

    def __init__(self, table: FileStore) -> None:
        self.table = table
        self.scan = TableScan(table)
        self.data: set[str] = set()
        self.manifests: set[str] = set()
        self.paths = DataPaths(self.scan)
        self._index_manifests_read: set[str] = set()  # consecutive snapshots often share one

    def read_list(self, name: str | None) -> list[ManifestFileMeta] | None:
        """A manifest list, or None if it is gone (an expiry removed it)."""
        if not name:
            return None
        try:
            return self.scan.manifest_list.read(name)
        except FileNotFoundError:
            return None

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Every file ``snapshot`` uses: its live data files, its changelog, its manifests and lists, its index
        files; lists an expiry already removed are skipped."""
        mf = self.scan.manifest_file
        metas = {name: ms for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list,
                                       snapshot.changelog_manifest_list)
                 if (ms := self.read_list(name)) is not None}
        data_metas = [m for name in (snapshot.base_manifest_list, snapshot.delta_manifest_list)
                      for m in metas.get(name, [])]
        for e in live_entries(e for m in data_metas for e in mf.read(m.file_name)).values():
            self.add_data_file(e)
        for name, ms in metas.items():
            self.manifests.add(name)
            self.manifests.update(m.file_name for m in ms)
            if name == snapshot.changelog_manifest_list:
                for m in ms:
                    for e in mf.read(m.file_name):
                        self.add_data_file(e)
        if snapshot.index_manifest and snapshot.index_manifest not in self._index_manifests_read:
            # the index manifest and every index file it lists (hash indexes, deletion vectors), in `index/` or
            # beside the data (`index-file-in-data-file-dir`), or at a recorded external location
            self._index_manifests_read.add(snapshot.index_manifest)
            try:
                entries = IndexManifestFile(self.table.io, self.table.root).read(snapshot.index_manifest)
            except FileNotFoundError:
                entries = None  # a changelog's: its snapshot's expiry removed it
            if entries is not None:
                self.manifests.add(snapshot.index_manifest)
                for e in entries:
                    self.data.add(index_file_rel(self.table.store, e.partition, e.bucket, e.index_file))

    def add_data_file(self, e: ManifestEntry) -> None:
        """A data file and its extra files (a file index `<file>.index`), which live beside it."""
        path = self.paths.data_path(e)
        self.data.add(path)
        directory = path.rsplit("/", 1)[0]
        self.data.update(f"{directory}/{extra}" for extra in e.file.extra_files)

    def add_delta_files(self, snapshot: Snapshot) -> None:
        """Files a snapshot's delta added or removed (everything its predecessor did not have live)."""
        mf = self.scan.manifest_file
        for m in self.read_list(snapshot.delta_manifest_list) or []:
            for e in mf.read(m.file_name):
                if e.kind in (FileKind.ADD, FileKind.DELETE):
                    self.add_data_file(e)

    def add_table(self, table: FileStore) -> None:
        """Every snapshot, tag and changelog of ``table``'s branch."""
        # a damaged old snapshot is skipped with a warning (what it alone references cannot be known: it cannot
        # be read either); a damaged latest one raises, so that its files are never taken for orphans
        for snapshot in table.snapshot_manager.readable_snapshots():
            self.add_snapshot(snapshot)
        for snapshot in tag_snapshots(table) + changelog_snapshots(table):
            self.add_snapshot(snapshot)


def branch_tables(table: FileStore) -> list[FileStore]:
    """``table`` and each other branch of it (main too), opened; raises, before anything is deleted, if one
    cannot be read: it might use any file (Paimon's orphan clean aborts on such a branch too)."""
    out = [table]
    for branch in ["main", *table.branch_manager().branches()]:
        if branch == table.branch:
            continue
        try:
            out.append(table.reload({"branch": branch}))
        except (LookupError, ValueError) as e:
            raise BranchError(f"branch {branch!r} of {table.path} cannot be read ({e}), so the files it uses are "
                              "unknown: nothing was deleted; repair or delete the branch first") from e
    return out


def other_branches_references(table: FileStore) -> References | None:
    """What the other branches of the table (main too, from a branch) use; None if it has no other branch.
    Raises BranchError if one cannot be read."""
    others = branch_tables(table)[1:]
    if not others:
        return None
    refs = References(table)
    for other in others:
        refs.add_table(other)
    return refs


def still_referenced(table: FileStore) -> References:
    """Everything the snapshots, tags and changelogs of every branch of the table use now (Paimon's orphan clean
    walks them all)."""
    keep = References(table)
    keep.add_table(table)
    others = other_branches_references(table)
    if others is not None:
        keep.data |= others.data
        keep.manifests |= others.manifests
    return keep
