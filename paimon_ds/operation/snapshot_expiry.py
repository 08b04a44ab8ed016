"""Snapshot and changelog expiry, as Paimon's committer runs it after each commit (and its procedure on demand).

Which snapshots go is Paimon 0.9's ExpireSnapshotsImpl.expire: the oldest beyond `snapshot.num-retained.max`,
then those older than `snapshot.time-retained` beyond `snapshot.num-retained.min`, never one a consumer still
needs (``protected_from``), at most `snapshot.expire.limit` in one run. What goes with them is its
SnapshotDeletion's: the data files the deltas of the snapshots after the first expired one removed (the files
the expired snapshots alone held), the changelog files of the expired snapshots, and their manifests, manifest
lists, index manifests, index files and statistics, except what the first retained snapshot and the tags in the
range still use (data files: the tag before each snapshot; Paimon's skipping sets). Files another branch uses
are kept too (Paimon 0.9 looks at one branch only; see README "Branches").

When the changelog outlives its snapshots (retention.changelog_decoupled), each expired snapshot's JSON stays
as `changelog/changelog-<id>`, its changelog files (or, without a changelog producer, the files its commit
appended and its manifest lists) stay for streams, and ExpireChangelogImpl's rules remove them later
(`changelog.num-retained.*`, `changelog.time-retained`).

Unlike Paimon, which deletes the files first and the snapshot file last, the order here is readers first: the
changelog files are written, the snapshot files go (oldest first, so that those left are always whole), then
EARLIEST moves, and only once every snapshot file went, the files they used. A crash or a failed delete
anywhere leaves orphans (remove_orphan_files), never a snapshot whose files are gone. Everything is read, and
every branch checked, before anything is deleted. Snapshot files an interrupted expiry left below EARLIEST
(an older order wrote the hint first) are deleted by the next expiry.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from ..errors import CorruptFileError
from ..fs.file_io import StorageError, is_uri
from ..index.manifest import IndexManifestEntry, IndexManifestFile
from ..index.paths import index_file_path, index_file_rel
from ..manifest.meta import FileKind, FileSource, ManifestEntry, ManifestFileMeta, live_entries
from ..options.registry import EXPIRE, check_supported
from ..snapshot.manager import Snapshot, SnapshotManager, SnapshotNotFound, warn_skipped
from ..snapshot.retention import Retention
from ..store.consumer import protected_from
from .references import DataPaths, References, other_branches_references, tag_snapshots
from .scan import TableScan

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

STATISTICS_DIR = "statistics"


@dataclass
class ExpireResult:
    expired: list[int] = field(default_factory=list)  # snapshot ids whose snapshot file went
    deleted_files: list[str] = field(default_factory=list)  # table-relative (external files: full location)
    expired_changelogs: list[int] = field(default_factory=list)  # ids of changelog/changelog-<id> that went


def consumer_protected_from(table: FileStore) -> int | None:
    """The first snapshot a consumer of the table still needs (Paimon's ConsumerManager.minNextSnapshot): snapshot
    and changelog expiry keep it and every later one (every expiry passes here: after each commit, the procedure,
    the CLI, SQL CALL). None: no consumer."""
    return protected_from(table.store)


def expire(table: FileStore, retention: Retention | None = None, now_ms: int | None = None) -> ExpireResult:
    """Expire ``table``'s snapshots, then, when its changelog is decoupled, its changelogs: what Paimon's committer
    runs after each commit (AbstractFileStoreTable.newCommit's expire runnable), and what expire_snapshots runs.
    ``retention``: the table's (Retention.from_options) unless given."""
    check_supported(table.options, EXPIRE, table.path)
    retention = retention or Retention.from_options(table.options)
    retention.check()
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    protected = consumer_protected_from(table)
    result = expire_snapshots(table, retention, now_ms, protected)
    if retention.changelog_decoupled:
        changelogs = expire_changelogs(table, retention, now_ms, protected)
        result.expired_changelogs = changelogs.expired_changelogs
        result.deleted_files += changelogs.deleted_files
    return result


# ------------------------------------------------------------------------------------------- snapshots
def expire_snapshots(table: FileStore, retention: Retention, now_ms: int, protected_from: int | None = None
                     ) -> ExpireResult:
    """Paimon 0.9's ExpireSnapshotsImpl.expire: the range to expire, then expire_snapshots_until."""
    sm = table.snapshot_manager
    remnants = delete_remnants(table)
    latest = sm.latest_id()
    earliest = sm.earliest_id() if latest is not None else None
    if latest is None or earliest is None:
        return ExpireResult(expired=remnants)
    older_than = now_ms - retention.snapshot_time_ms
    # beyond `snapshot.num-retained.max` a snapshot goes whatever its age
    lowest = max(latest - retention.snapshot_max + 1, earliest)
    # `snapshot.num-retained.min`, the consumers, `snapshot.expire.limit`
    end = latest - retention.snapshot_min + 1
    if protected_from is not None:
        end = min(end, protected_from)
    end = min(end, earliest + retention.max_deletes)
    existing = set(sm.list_ids())
    for sid in range(lowest, end):
        # the first snapshot young enough stops the expiry (`snapshot.time-retained`)
        if sid in existing and older_than <= _time_of(sm, sid, older_than):
            return _with_remnants(remnants, expire_snapshots_until(table, retention, earliest, sid, existing))
    return _with_remnants(remnants, expire_snapshots_until(table, retention, earliest, end, existing))


def _with_remnants(remnants: list[int], result: ExpireResult) -> ExpireResult:
    result.expired[:0] = remnants
    return result


def _time_of(sm: SnapshotManager, sid: int, default: int) -> int:
    try:
        return sm.snapshot(sid).time_millis
    except SnapshotNotFound:  # expired meanwhile by another writer: old
        return default - 1
    except CorruptFileError as e:  # a damaged old snapshot: no time travel can read it, so it is not kept for one
        warn_skipped(e)
        return default - 1


def expire_snapshots_until(table: FileStore, retention: Retention, earliest: int, end: int,
                           existing: set[int] | None = None) -> ExpireResult:
    """Expire the snapshots from ``earliest`` to ``end`` (exclusive), as ExpireSnapshotsImpl.expireUntil."""
    sm = table.snapshot_manager
    result = ExpireResult()
    if end <= earliest:
        # nothing to expire: the EARLIEST hint is written if missing, so that readers find the earliest directly
        if sm.hint("EARLIEST") is None:
            _write_earliest(table, earliest)
        return result
    existing = existing if existing is not None else set(sm.list_ids())
    # the snapshots before a missing one are gone: the expiry starts after the last gap
    begin = earliest
    for sid in range(end - 1, earliest - 1, -1):
        if sid not in existing:
            begin = sid + 1
            break
    if end not in existing:
        return result  # the first snapshot to keep is gone (another writer's expiry): nothing to do (Paimon 1.x)
    # a damaged snapshot of the range is expired without its files (left for remove-orphans); a damaged first
    # retained one stops the expiry: what it still uses cannot be known, so nothing may be deleted
    snapshots: dict[int, Snapshot | None] = {}
    for sid in range(begin, end + 1):
        try:
            snapshots[sid] = sm.snapshot(sid)
        except CorruptFileError as e:
            warn_skipped(e)
            if sid == end:
                log.warning("expiry of %s stopped: the first snapshot to keep (%d) cannot be read", table.path, sid)
                return result
            snapshots[sid] = None
    decoupled = retention.changelog_decoupled
    produces_changelog = table.options.get("changelog-producer") != "none"
    other_branches = other_branches_references(table)  # every branch readable, or nothing is deleted
    deletion = FileDeletion(table, other_branches)
    tags = sorted({t.id: t for t in tag_snapshots(table)}.values(), key=lambda s: s.id)

    # data files: those the deltas of (begin, end] removed, unless the tag before held them; with a decoupled
    # changelog and no changelog producer, appended files are the changelog: the changelog expiry removes them
    for sid in range(begin + 1, end + 1):
        delta = snapshots[sid]
        keep = deletion.tag_files(tags, sid) if delta is not None else None
        if keep is None or delta is None:
            continue  # the tag could not be read: its files might be any (Paimon skips this snapshot too)
        deletion.unused_data_files(delta.delta_manifest_list, keep,
                                   keep_appended=decoupled and not produces_changelog)
    if not decoupled:
        for sid in range(begin, end):
            changelog_list = getattr(snapshots[sid], "changelog_manifest_list", None)  # None: damaged
            if changelog_list:
                deletion.added_data_files(changelog_list)

    # metadata: what the first retained snapshot and the tags in the range still use stays
    first_kept = cast(Snapshot, snapshots[end])  # read, or the expiry stopped above
    skipping = deletion.manifest_skipping_set(_tags_in_range(tags, begin, end) + [first_kept])
    for sid in range(begin, end):
        snapshot = snapshots[sid]
        if snapshot is None:
            continue
        if not decoupled or produces_changelog:
            deletion.unused_manifest_list(snapshot.base_manifest_list, skipping)
            deletion.unused_manifest_list(snapshot.delta_manifest_list, skipping)
        if not decoupled and snapshot.changelog_manifest_list:
            deletion.unused_manifest_list(snapshot.changelog_manifest_list, skipping)
        deletion.unused_index_files(snapshot, skipping)
        deletion.unused_statistics(snapshot, skipping)

    # readers first: the changelogs that outlive their snapshots, then the snapshot files, oldest first (those left
    # are always the newest ones, whole), then EARLIEST; the files they used only once every snapshot file went
    if decoupled:
        for sid in range(begin, end):
            if snapshots[sid] is not None:  # a damaged one would be a damaged changelog
                _keep_changelog(table, sid)
    for sid in range(begin, end):
        try:
            table.io.delete(sm.path(sid))
        except StorageError as e:
            # the snapshots from sid on stay, whole: the files they use stay too; those only the expired ones
            # used are orphans now (remove_orphan_files), and the next expiry goes on from sid
            log.warning("expiry of %s stopped at snapshot %d, which could not be deleted (%s); the files of the "
                        "expired snapshots are left", table.path, sid, e)
            _write_earliest(table, sid)
            return result
        result.expired.append(sid)
    _write_earliest(table, end)
    result.deleted_files = deletion.run()
    return result


def _write_earliest(table: FileStore, sid: int) -> None:
    """The EARLIEST hint, after the snapshot files before ``sid`` went (a hint: readers check it, and a failure
    to write it is only logged)."""
    try:
        table.io.write_bytes(f"{table.snapshot_manager.dir}/EARLIEST", str(sid).encode())
    except OSError as e:
        log.warning("expiry of %s: the EARLIEST hint was not written (%s); readers find the earliest snapshot by "
                    "listing", table.path, e)


def delete_remnants(table: FileStore) -> list[int]:
    """Delete the snapshot files an interrupted expiry left below the EARLIEST hint (SnapshotManager.remnants):
    expired already, the files they used partly gone. Those files that remain are orphans (remove_orphan_files)."""
    sm = table.snapshot_manager
    deleted = []
    for sid in sm.remnants():
        try:
            table.io.delete(sm.path(sid))
        except StorageError as e:
            log.warning("expiry of %s: the expired snapshot file %d was not deleted (%s)", table.path, sid, e)
            break
        deleted.append(sid)
    if deleted:
        log.info("expiry of %s deleted snapshot files %s that an interrupted expiry had left below EARLIEST",
                 table.path, deleted)
    return deleted


def _keep_changelog(table: FileStore, sid: int) -> None:
    """Write `changelog/changelog-<id>`: the snapshot's JSON as it is (Paimon re-serializes the same fields),
    then the changelog LATEST hint. A changelog already there (an expiry that stopped half-way) stays."""
    sm = table.snapshot_manager
    table.io.try_create(sm.changelog_path(sid), table.io.read_bytes(sm.path(sid)))
    table.io.write_bytes(f"{sm.changelog_dir}/LATEST", str(sid).encode())


def _tags_in_range(tags: list[Snapshot], begin: int, end: int) -> list[Snapshot]:
    """Paimon's findOverlappedSnapshots: the tags from the last one at or before ``begin`` to the last one before
    ``end``."""
    right = _previous(tags, end)
    if right < 0:
        return []
    left = max(next((i for i in range(len(tags) - 1, -1, -1) if tags[i].id <= begin), -1), 0)
    return tags[left:right + 1]


def _previous(tags: list[Snapshot], sid: int) -> int:
    """Index of the last tag before snapshot ``sid``, or -1 (SnapshotManager.findPreviousSnapshot)."""
    return next((i for i in range(len(tags) - 1, -1, -1) if tags[i].id < sid), -1)


# ------------------------------------------------------------------------------------------- changelogs
def expire_changelogs(table: FileStore, retention: Retention, now_ms: int, protected_from: int | None = None
                      ) -> ExpireResult:
    """Paimon 0.9's ExpireChangelogImpl.expire: the changelogs left by expired snapshots, by the `changelog.*`
    retention counted from the latest snapshot; the latest changelog always stays."""
    sm = table.snapshot_manager
    latest = sm.latest_id()
    if latest is None or sm.earliest_id() is None:
        return ExpireResult()
    latest_changelog, earliest_changelog = sm.latest_changelog_id(), sm.earliest_changelog_id()
    if latest_changelog is None or earliest_changelog is None:
        return ExpireResult()
    older_than = now_ms - retention.changelog_time_ms
    lowest = max(latest - retention.changelog_max + 1, earliest_changelog)
    end = latest - retention.changelog_min + 1
    if protected_from is not None:
        end = min(end, protected_from)
    end = min(end, earliest_changelog + retention.max_deletes, latest_changelog)
    for cid in range(lowest, end + 1):
        if sm.changelog_exists(cid) and older_than <= sm.changelog(cid).time_millis:
            return expire_changelogs_until(table, earliest_changelog, cid)
    return expire_changelogs_until(table, earliest_changelog, end)


def expire_changelogs_until(table: FileStore, earliest: int, end: int) -> ExpireResult:
    """Remove the changelogs from ``earliest`` to ``end`` (exclusive) and the files only they kept, as
    ExpireChangelogImpl.expireUntil; then the changelog EARLIEST hint."""
    sm = table.snapshot_manager
    result = ExpireResult()
    if end < earliest:
        # Paimon 0.9 fails here (it reads changelog-<end>, which is gone) and writes nothing: nothing happens
        return result
    try:
        end_changelog = sm.changelog(end)
    except SnapshotNotFound:
        return result  # as above: Paimon's expiry fails before it deletes anything
    other_branches = other_branches_references(table)
    deletion = FileDeletion(table, other_branches)
    tags = sorted({t.id: t for t in tag_snapshots(table)}.values(), key=lambda s: s.id)
    skipping_snapshots = _tags_in_range(tags, earliest, end) + [end_changelog]
    earliest_snapshot = sm.earliest_id()
    if earliest_snapshot is not None:
        try:
            skipping_snapshots.append(sm.snapshot(earliest_snapshot))  # Paimon 1.x adds it: its files stay
        except SnapshotNotFound:
            pass  # expired meanwhile by another writer
    skipping = deletion.manifest_skipping_set(skipping_snapshots, only_existing=True)
    expired = []
    for cid in range(earliest, end):
        try:
            changelog = sm.changelog(cid)
        except SnapshotNotFound:
            continue  # a gap (Paimon 0.9 would fail on it)
        keep = deletion.tag_files(tags, cid)
        if keep is None:
            continue
        if changelog.changelog_manifest_list:
            deletion.added_data_files(changelog.changelog_manifest_list)
        elif deletion.list_exists(changelog.delta_manifest_list):
            deletion.unused_data_files(changelog.delta_manifest_list, keep)
        if changelog.changelog_manifest_list:
            deletion.unused_manifest_list(changelog.changelog_manifest_list, skipping)
        else:
            for name in (changelog.delta_manifest_list, changelog.base_manifest_list):
                if deletion.list_exists(name):
                    deletion.unused_manifest_list(name, skipping)
        expired.append(cid)
    # the changelog files first, oldest first; the files only they kept once every one of them went
    for cid in expired:
        try:
            table.io.delete(sm.changelog_path(cid))
        except StorageError as e:
            log.warning("changelog expiry of %s stopped at changelog %d, which could not be deleted (%s)",
                        table.path, cid, e)
            return result
        result.expired_changelogs.append(cid)
    result.deleted_files = deletion.run()
    try:
        table.io.write_bytes(f"{sm.changelog_dir}/EARLIEST", str(end).encode())
    except OSError as e:
        log.warning("changelog expiry of %s: the EARLIEST hint was not written (%s)", table.path, e)
    return result


# ------------------------------------------------------------------------------------------- the files
class FileDeletion:
    """What one expiry run deletes (Paimon's FileDeletionBase), gathered before anything is deleted; run()
    deletes it, minus what other branches use, and then the directories it emptied."""

    def __init__(self, table: FileStore, keep: References | None) -> None:
        self.table = table
        self.io = table.io
        self.scan = TableScan(table)
        self.keep = keep  # references.References of the other branches, or None
        self.data: dict[str, None] = {}  # paths, in the order found
        self.manifests: dict[str, None] = {}  # names under manifest/ (lists, manifests, index manifests)
        self.index_files: dict[str, str] = {}  # table-relative (or full) path -> where it is deleted
        self.statistics: dict[str, None] = {}
        self.buckets: set[tuple[bytes, int]] = set()  # where data files went (empty directories)
        self.paths = DataPaths(self.scan)
        self._tag: tuple[int, set[str]] | None = None  # the tag whose data files were read last
        self._index = IndexManifestFile(self.io, table.root)

    # -- reading, as Paimon's tryRead*: a list or manifest already gone is skipped
    def list_exists(self, name: str | None) -> bool:
        return bool(name) and self.io.exists(f"{self.table.root}/manifest/{name}")

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        try:
            return self.scan.manifest_list.read(name)
        except (OSError, ValueError) as e:
            log.warning("expiry of %s: manifest list %s not read (%s): its files are left", self.table.path, name, e)
            return []

    def read_manifest(self, name: str) -> list[ManifestEntry] | None:
        try:
            return self.scan.manifest_file.read(name)
        except (OSError, ValueError) as e:
            log.warning("expiry of %s: manifest %s not read (%s)", self.table.path, name, e)
            return None

    def read_index_manifest(self, name: str) -> list[IndexManifestEntry] | None:
        try:
            return self._index.read(name)
        except FileNotFoundError:
            return None

    # -- data files
    def unused_data_files(self, list_name: str, keep: set[str], keep_appended: bool = False) -> None:
        """The files the delta ``list_name`` removed (DELETE entries), except those in ``keep`` and, with
        ``keep_appended``, those a write appended (file source APPEND, or none recorded); a file the same delta
        added again (a compaction that only moved it up a level) stays. A manifest that cannot be read cancels
        the delta (Paimon: "Cancel deletion")."""
        entries: list[ManifestEntry] = []
        for meta in self.read_list(list_name):
            read = self.read_manifest(meta.file_name)
            if read is None:
                return
            entries += read
        added = {self.paths.data_path(e) for e in entries if e.kind == FileKind.ADD}
        for e in entries:
            path = self.paths.data_path(e)
            if e.kind != FileKind.DELETE or path in added or path in keep:
                continue
            if keep_appended and (e.file.file_source if e.file.file_source is not None else FileSource.APPEND) \
                    == FileSource.APPEND:
                continue
            self._add_data(path, e)
            directory = path.rsplit("/", 1)[0]
            for extra in e.file.extra_files:
                self._add_data(f"{directory}/{extra}", e)

    def added_data_files(self, list_name: str) -> None:
        """Every file the manifests of ``list_name`` add: a changelog's files."""
        for meta in self.read_list(list_name):
            for e in self.read_manifest(meta.file_name) or []:
                if e.kind == FileKind.ADD:
                    self._add_data(self.paths.data_path(e), e)

    def _add_data(self, path: str, e: ManifestEntry) -> None:
        self.data[path] = None
        self.buckets.add((e.partition, e.bucket))

    def tag_files(self, tags: list[Snapshot], sid: int) -> set[str] | None:
        """The data files of the last tag before snapshot ``sid`` (they stay); None if it cannot be read."""
        i = _previous(tags, sid)
        if i < 0:
            return set()
        tag = tags[i]
        if self._tag is None or self._tag[0] != tag.id:
            try:
                files = set()
                metas = self.scan.manifest_list.read(tag.base_manifest_list) + \
                    self.scan.manifest_list.read(tag.delta_manifest_list)
                for e in live_entries(e for m in metas for e in self.scan.manifest_file.read(m.file_name)).values():
                    files.add(self.paths.data_path(e))
            except (OSError, ValueError) as e:
                log.info("expiry of %s: tag of snapshot %s not read (%s): the files of snapshot %s stay",
                         self.table.path, tag.id, e, sid)
                return None
            self._tag = (tag.id, files)
        return self._tag[1]

    # -- metadata
    def manifest_skipping_set(self, snapshots: Iterable[Snapshot], only_existing: bool = False) -> set[str]:
        """The manifest lists, manifests, index manifests, index files and statistics ``snapshots`` use (Paimon's
        manifestSkippingSet; ``only_existing``: lists already removed are left out, as ChangelogDeletion's)."""
        skipping: set[str] = set()
        for s in snapshots:
            for name in (s.base_manifest_list, s.delta_manifest_list):
                if only_existing and not self.list_exists(name):
                    continue
                skipping.add(name)
                skipping.update(m.file_name for m in self.scan.manifest_list.read(name))
            if s.index_manifest:
                entries = self.read_index_manifest(s.index_manifest)
                if entries is not None:
                    skipping.add(s.index_manifest)
                    skipping.update(self._index_rel(e) for e in entries)
            statistics = s.extra.get("statistics")
            if statistics:
                skipping.add(statistics)
        return skipping

    def unused_manifest_list(self, name: str, skipping: set[str]) -> None:
        """The manifests of list ``name`` and the list itself, unless skipped (each manifest once)."""
        for meta in self.read_list(name):
            if meta.file_name not in skipping:
                self.manifests[meta.file_name] = None
                skipping.add(meta.file_name)
        if name not in skipping:
            self.manifests[name] = None

    def unused_index_files(self, snapshot: Snapshot, skipping: set[str]) -> None:
        if not snapshot.index_manifest:
            return
        entries = self.read_index_manifest(snapshot.index_manifest)
        if entries is None:
            return  # removed with another snapshot
        for e in entries:
            rel = self._index_rel(e)
            if rel not in skipping:
                self.index_files[rel] = index_file_path(self.table.store, e.partition, e.bucket, e.index_file)
        if snapshot.index_manifest not in skipping:
            self.manifests[snapshot.index_manifest] = None

    def unused_statistics(self, snapshot: Snapshot, skipping: set[str]) -> None:
        statistics = snapshot.extra.get("statistics")
        if statistics and statistics not in skipping:
            self.statistics[statistics] = None

    def _index_rel(self, e: IndexManifestEntry) -> str:
        return index_file_rel(self.table.store, e.partition, e.bucket, e.index_file)

    # -- deleting
    def run(self) -> list[str]:
        """Delete what was gathered, minus what other branches use; the data files first, then the directories
        they emptied (`snapshot.clean-empty-directories`), then the metadata. Returns what was deleted."""
        keep_data = self.keep.data if self.keep is not None else set()
        keep_manifests = self.keep.manifests if self.keep is not None else set()
        data = [p for p in self.data if p not in keep_data]
        index = [(rel, where) for rel, where in self.index_files.items() if rel not in keep_data]
        manifests = [m for m in self.manifests if m not in keep_manifests]
        root = self.table.root
        self._delete([p if is_uri(p) else f"{root}/{p}" for p in data])
        if self.table.options.get("snapshot.clean-empty-directories"):
            self._clean_empty_directories()
        self._delete([where for _, where in index] + [f"{root}/manifest/{m}" for m in manifests]
                     + [f"{root}/{STATISTICS_DIR}/{s}" for s in self.statistics])
        return data + [rel for rel, _ in index] + [f"manifest/{m}" for m in manifests] + \
            [f"{STATISTICS_DIR}/{s}" for s in self.statistics]

    def _delete(self, paths: list[str]) -> None:
        if len(paths) < 2:
            for p in paths:
                self.io.delete_quietly(p)
            return
        threads = self.table.options.get("delete-file.thread-num") or os.cpu_count() or 1
        with ThreadPoolExecutor(max_workers=min(threads, len(paths))) as pool:
            list(pool.map(self.io.delete_quietly, paths))

    def _clean_empty_directories(self) -> None:
        """Paimon's cleanEmptyDirectories: each bucket directory a file went from, then its partition's deepest
        directory, and if that went, the partition's upper directories, deepest first; only empty ones go."""
        root = self.table.root
        upper: dict[int, set[str]] = {}
        for partition in {p for p, _ in self.buckets}:
            for p, bucket in self.buckets:
                if p == partition:
                    self.io.delete_empty_dir(f"{root}/{self.paths.bucket_dir(p, bucket)}")
            rel = self.scan.partition_dir(partition)
            if not rel:
                continue
            parts = rel.split("/")
            if self.io.delete_empty_dir(f"{root}/{rel}"):
                for depth in range(len(parts) - 1):
                    upper.setdefault(depth, set()).add("/".join(parts[:depth + 1]))
        for depth in sorted(upper, reverse=True):
            for rel in upper[depth]:
                self.io.delete_empty_dir(f"{root}/{rel}")
