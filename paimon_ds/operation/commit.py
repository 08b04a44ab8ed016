"""The driver side of a write: turn commit messages into manifests and one atomic snapshot.

Like Paimon's FileStoreCommitImpl: write the new files' manifest once, then per attempt read the
latest snapshot, derive the base manifest list (merging manifests when there are too many) and
the delta list, and create `snapshot-N` only if absent. Losing that race means another writer
committed first: drop this attempt's lists, re-read, check that what we delete still exists, and
try again. Anything written by an attempt that did not land is deleted.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..deletionvectors.maintainer import drop_vectors_of
from ..format.partition import POSTPONE_BUCKET
from ..fs.file_io import OutcomeUnknown
from ..index.manifest import IndexManifestEntry, IndexManifestFile
from ..index.paths import in_data_dir, index_file_path
from ..manifest.files import ManifestFile, ManifestList
from ..manifest.meta import FileKind, ManifestEntry, ManifestFileMeta, live_entries
from ..mergetree.changelog import lookup_compaction
from ..mergetree.compact import full_compaction_due, full_compaction_interval
from ..options.registry import Options
from ..snapshot.manager import BATCH_COMMIT_IDENTIFIER, Snapshot
from ..store.row_tracking import assign_row_tracking, data_evolution_enabled, row_tracking_enabled
from .index_commit import IndexCommit, deletion_vector_changes, hashes_added
from .messages import CommitConflict, CommitMessage, OverwriteScope, overwritten
from .scan import TableScan

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..store.file_store import FileStore


# compacts the given (partition, bucket)s of a table (fully, if the flag says so) and commits them as the given
# commit user and identifier, those of the data commit, as Paimon's writer compacts within the commit
# (operation.compact's compaction, which commits through this module: the facade hands it in)
BucketCompactor = Callable[[set[tuple[bytes, int]], bool, str, int], Snapshot | None]

# the table's maintenance after a commit that landed a snapshot (operation.after_commit: consumer and snapshot
# expiry, partition expiration, automatic tags, in the order of Paimon's TableCommitImpl.expire); the facade hands
# it in, as it does the compaction
AfterCommit = Callable[[Snapshot], None]


def commits_due_full_compaction(table: FileStore) -> bool:
    """Whether the table's latest commit is one after which its buckets compact fully (every
    full_compaction_interval-th commit; COMPACT snapshots do not count)."""
    every = full_compaction_interval(table.options)
    if every is None or every == 1:
        return every == 1
    sm = table.snapshot_manager
    return full_compaction_due(every, sum(1 for s in sm.readable_snapshots() if s.commit_kind != "COMPACT"))


def new_commit_user(options: Options) -> str:
    """A fresh commit user, as Paimon makes one: `commit.user-prefix` (if set) and `_`, then a uuid."""
    prefix = options.get("commit.user-prefix")
    return ((prefix + "_") if prefix else "") + str(uuid.uuid4())


class TableCommit:
    def __init__(self, table: FileStore, commit_user: str | None = None,
                 compact_buckets: BucketCompactor | None = None, after_commit: AfterCommit | None = None,
                 streaming: bool = False) -> None:
        self.table = table
        self.streaming = streaming
        self.compact_buckets = compact_buckets
        self.after_commit = after_commit
        self.io = table.io
        self.commit_user = commit_user or new_commit_user(table.options)
        opts = table.options
        self.max_retries = opts.get("commit.max-retries")
        self.lost_races = 0  # attempts another writer's snapshot beat (each retried on the new latest)
        # a snapshot of this commit landed (or may have: its create's answer never came): abort() then deletes
        # nothing, since that snapshot uses the messages' files
        self.landed: Snapshot | None = None
        self.outcome_unknown = False
        self.merge_min_count = opts.get("manifest.merge-min-count")
        compression = opts.get("manifest.compression")
        manifest_format = opts.get("manifest.format")
        partition_types = [f.type for f in table.table_schema.partition_fields]
        self.manifest_file = ManifestFile(self.io, table.root, partition_types, table.table_schema.id, compression,
                                          opts.get("manifest.target-file-size"), manifest_format)
        self.manifest_list = ManifestList(self.io, table.root, compression, manifest_format)
        self.index = IndexCommit(table, IndexManifestFile(self.io, table.root, compression, manifest_format))

    # ---------------------------------------------------------------- public
    def commit(self, messages: Sequence[CommitMessage], identifier: int = BATCH_COMMIT_IDENTIFIER,
               base_snapshot_id: int | None = None) -> Snapshot | None:
        """Append the messages' files as one APPEND snapshot (none if there are no files).

        A new table is created even by an empty write (schema, no snapshot), as Paimon creates a
        table before writing to it: reading it then gives 0 rows with the written schema.
        ``base_snapshot_id``: the snapshot the writers took their sequence numbers from (primary-key
        tables); the commit fails if another writer added rows to the same buckets since then.
        """
        adds = self._add_entries(messages)
        compact_adds, compact_deletes = self._compact_entries(messages)
        added_hashes = hashes_added(messages)
        if not adds and not compact_adds and not compact_deletes and not added_hashes:
            self._ensure_schema()
            return None
        snapshot = None
        if adds or added_hashes:
            guard = None
            if self.table.table_schema.primary_keys and base_snapshot_id is not None:
                guard = (base_snapshot_id, _min_sequences(messages))
            changelog = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                         for m in messages for f in m.changelog_files]
            snapshot = self._commit(adds, "APPEND", identifier, overwrite=None, sequence_guard=guard,
                                    changelog=changelog, added_hashes=added_hashes, hash_base=base_snapshot_id)
        compact_changelog = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                             for m in messages for f in m.compact_changelog]
        if compact_adds or compact_deletes or compact_changelog:
            # as Paimon: new files land as APPEND, the compaction of the same commit as COMPACT (with the
            # deletion vectors it changed: they belong to the files it wrote, and the changelog it wrote)
            snapshot = self._commit(compact_adds, "COMPACT", identifier, overwrite=None, fixed_deletes=compact_deletes,
                                    changelog=compact_changelog, dv_changes=deletion_vector_changes(messages))
        return self._maintained(self._compact_written(messages, identifier) or snapshot)

    def _maintained(self, snapshot: Snapshot | None) -> Snapshot | None:
        """Run the table's maintenance after a commit that landed ``snapshot``. Like Paimon's committer it never
        fails or undoes the commit: the maintenance logs its failures and the next commit tries again."""
        if snapshot is not None and self.after_commit is not None:
            self.after_commit(snapshot)
        return snapshot

    def _compact_written(self, messages: Sequence[CommitMessage], identifier: int) -> Snapshot | None:
        """The compaction Paimon's writers do in every commit, for the buckets this commit wrote that its writers
        did not compact. Paimon's writer owns its bucket and compacts it before the commit whenever universal
        compaction picks (`num-sorted-run.compaction-trigger`, size amplification and ratio) and never lets it
        stay above `num-sorted-run.stop-trigger`; a fixed-bucket append writer compacts its small files. Here
        tasks of a Spark write may share a bucket and a core write owns them all, so the committer, the one
        owner at this point, compacts them after the data commit: an APPEND then a COMPACT snapshot, as
        Paimon's writers leave. Writers that owned their buckets (the clustered write) compacted already; the
        committer compacts those buckets again only to lift the level-0 files Paimon's writers would lift in
        every commit (first-row and deletion-vector tables, the lookup changelog producer: Paimon's
        ForceUpLevel0Compaction) and when the commit is due a full compaction (`full-compaction.delta-commits`,
        the full-compaction producer)."""
        opts = self.table.options
        if opts.get("write-only") or data_evolution_enabled(opts):
            return None
        primary_key = bool(self.table.table_schema.primary_keys)
        if not primary_key and self.table.bucket <= 0 and not self.streaming:
            # Paimon's unaware-bucket append writers do not compact: a batch job leaves it to a dedicated
            # compaction, a Flink sink to its compaction coordinator (the stream's committer here)
            return None
        lift = primary_key and lookup_compaction(opts, opts.get("merge-engine") == "first-row")
        full = primary_key and commits_due_full_compaction(self.table)
        lifted = {f.file_name for m in messages for f in m.compact_before}
        compacted = {(m.partition, m.bucket) for m in messages if m.compact_before or m.compact_after}
        buckets = set()
        for m in messages:
            if m.bucket == POSTPONE_BUCKET or not m.new_files:
                continue
            key = (m.partition, m.bucket)
            if key not in compacted or ((lift or full) and any(
                    f.level == 0 and f.file_name not in lifted for f in m.new_files)):
                buckets.add(key)
        if not buckets:
            return None
        if self.compact_buckets is None:
            raise ValueError(f"a commit to {self.table.path} wrote buckets its writers did not compact, and this "
                             "TableCommit has no compaction: build it with table.new_commit()")
        for attempt in range(2):
            try:
                return self.compact_buckets(buckets, full, self.commit_user, identifier)
            except CommitConflict as e:
                # another compaction (a concurrent job's, Java's) replaced some of its inputs first: as Paimon's
                # committer, the compaction that lost is dropped (its files deleted) and the data commit stands;
                # the next commit to these buckets compacts them again
                log.warning("the compaction after a commit to %s lost to a concurrent one and was dropped: %s",
                            self.table.path, e)
                return None
            except Exception as e:  # noqa: BLE001 - the data commit landed: it must not be reported failed
                # (a storage error): tried once more from the latest snapshot, then left to the next commit
                if attempt == 0:
                    continue
                log.warning("the compaction after a commit to %s failed and was left to the next commit: %s",
                            self.table.path, e)
        return None

    def overwrite(self, messages: Sequence[CommitMessage],
                  partitions: set[bytes] | Callable[[bytes], bool] | None = None,
                  identifier: int = BATCH_COMMIT_IDENTIFIER) -> Snapshot | None:
        """Replace the whole table (``partitions`` None), the given partitions (dynamic overwrite), or
        those a static spec names (a PartitionFilter: replaced even if the messages add nothing)."""
        adds = self._add_entries(messages)
        if partitions is not None and not callable(partitions) and not partitions:
            self._ensure_schema()
            return None  # dynamic overwrite that wrote nothing replaces nothing
        if callable(partitions):
            outside = sorted({e.file.file_name for e in adds if not partitions(e.partition)})
            if outside:
                self.abort(messages)
                raise ValueError("INSERT OVERWRITE with a static PARTITION clause wrote rows outside that partition "
                                 f"(files {outside[:3]}); nothing was committed")
        snapshot = self._commit(adds, "OVERWRITE", identifier,
                                overwrite=partitions if partitions is not None else "all",
                                added_hashes=hashes_added(messages))
        # readers that skip level 0 see the new rows
        return self._maintained(self._compact_written(messages, identifier) or snapshot)

    def replace_files(self, messages: Sequence[CommitMessage], file_names: Sequence[str],
                      identifier: int = BATCH_COMMIT_IDENTIFIER) -> Snapshot | None:
        """Copy-on-write of a row-level DELETE / UPDATE / MERGE on an append table: remove ``file_names``
        (read at the statement's snapshot) and add the messages' files (their rewritten rows) in one
        OVERWRITE snapshot, which streaming readers skip as they skip overwrites. Fails, changing
        nothing, if another commit removed one of those files meanwhile."""
        adds = self._add_entries(messages)
        if not file_names:
            return self.commit(messages, identifier)
        latest = self.table.snapshot_manager.latest()
        live = {e.file.file_name: e for e in (TableScan(self.table).read_entries(latest) if latest else ())}
        missing = [n for n in file_names if n not in live]
        if missing:
            self.abort(messages)
            raise CommitConflict(f"files {missing[:3]} were removed by another commit since the statement read "
                                 "the table; nothing was changed (run the statement again)")
        deletes = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                   for e in (live[n] for n in file_names)]
        dv_changes = drop_vectors_of(self.table.store, latest, deletes)  # the removed files' deletion vectors go too
        try:
            snapshot = self._commit(adds, "OVERWRITE", identifier, overwrite=None, fixed_deletes=deletes,
                                    dv_changes=dv_changes)
        except BaseException:
            for e in dv_changes if not self.outcome_unknown else ():
                if e.kind == FileKind.ADD:
                    self.io.delete_quietly(index_file_path(self.table.store, e.partition, e.bucket, e.index_file))
            raise
        return self._maintained(snapshot)

    def commit_deletion_vectors(self, messages: Sequence[CommitMessage], file_names: Sequence[str],
                                identifier: int = BATCH_COMMIT_IDENTIFIER) -> Snapshot:
        """Commit new deletion vectors of the data files ``file_names`` (messages with index files only)
        as Paimon 1.4 does: an OVERWRITE snapshot (rows were deleted; FileStoreCommitImpl since apache/paimon#6025,
        Paimon 0.9 committed COMPACT). Fails if another commit removed one of those files meanwhile (or replaced the
        vectors the messages extended)."""
        latest = self.table.snapshot_manager.latest()
        live = {e.file.file_name for e in (TableScan(self.table).read_entries(latest) if latest else ())}
        missing = [n for n in file_names if n not in live]
        if missing:
            raise CommitConflict(f"files {missing[:3]} were removed by another commit since the statement read "
                                 "the table; nothing was changed (run the statement again)")
        return self._maintained(self._commit([], "OVERWRITE", identifier, overwrite=None,
                                             dv_changes=deletion_vector_changes(messages)))

    def compact_manifests(self, identifier: int = BATCH_COMMIT_IDENTIFIER) -> Snapshot | None:
        """Paimon's FileStoreCommit.compactManifest (the compact_manifest procedure): the latest snapshot's live
        entries rewritten into as few manifests as the target size allows (added-then-deleted files dropped), in
        a COMPACT snapshot with an empty delta. None when there is nothing to merge (no snapshot, or a single
        manifest)."""
        latest = self.table.snapshot_manager.latest()
        if latest is None:
            return None
        metas = self.manifest_list.read(latest.base_manifest_list) + self.manifest_list.read(latest.delta_manifest_list)
        if len(metas) <= 1:
            return None
        saved, self.merge_min_count = self.merge_min_count, 1  # merge whatever there is
        try:
            return self._commit([], "COMPACT", identifier, overwrite=None)
        finally:
            self.merge_min_count = saved

    def commit_or_abort(self, messages: Sequence[CommitMessage],
                        identifier: int = BATCH_COMMIT_IDENTIFIER) -> Snapshot | None:
        """commit(), and if it fails delete the files the messages made (a compaction that lost)."""
        try:
            return self.commit(messages, identifier)
        except BaseException:
            self.abort(messages)
            raise

    def abort(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the files the messages made, unless a snapshot of this commit landed, or may have (its
        create's answer never came): that snapshot uses them, so they stay (if it did not land, they are orphans
        for remove_orphan_files)."""
        if self.landed is not None or self.outcome_unknown:
            log.warning("abort of a commit to %s deletes nothing: its snapshot %s", self.table.path,
                        f"{self.landed.id} landed" if self.landed is not None else "may have landed (the store "
                        "did not answer); its files stay")
            return
        index_in_data_dir = in_data_dir(self.table.store)
        for m in messages:
            for path in m.file_paths(self.table.root, index_in_data_dir):
                self.io.delete_quietly(path)

    # ---------------------------------------------------------------- internals
    @staticmethod
    def _compact_entries(messages: Sequence[CommitMessage]) -> tuple[list[ManifestEntry], list[ManifestEntry]]:
        adds = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                for m in messages for f in m.compact_after]
        deletes = [ManifestEntry(FileKind.DELETE, m.partition, m.bucket, m.total_buckets, f)
                   for m in messages for f in m.compact_before]
        return adds, deletes

    @staticmethod
    def _add_entries(messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
        entries = [ManifestEntry(FileKind.ADD, m.partition, m.bucket, m.total_buckets, f)
                   for m in messages for f in m.new_files]
        seen: set[tuple] = set()
        for e in entries:
            if e.identifier in seen:
                raise CommitConflict(f"file {e.file.file_name} is committed twice in one commit")
            seen.add(e.identifier)
        return entries

    def _ensure_schema(self) -> None:
        """Create the table's schema file with its first commit (a failed first write leaves nothing)."""
        sm = self.table.schema_manager
        if sm.list_ids():
            return
        winner = sm.create(self.table.table_schema)
        if winner.to_json() != self.table.table_schema.to_json() and (
                [f.to_json() for f in winner.fields] != [f.to_json() for f in self.table.table_schema.fields]
                or winner.partition_keys != self.table.table_schema.partition_keys
                or winner.options != self.table.table_schema.options):
            raise CommitConflict(f"another writer created table {self.table.path} with a different schema "
                                 "at the same time; retry the write")

    def _commit(self, adds: list[ManifestEntry], kind: str, identifier: int,
                overwrite: OverwriteScope,
                fixed_deletes: list[ManifestEntry] | None = None,
                sequence_guard: tuple[int, dict[tuple[bytes, int], int]] | None = None,
                changelog: list[ManifestEntry] | None = None,
                added_hashes: dict[tuple[bytes, int], np.ndarray] | None = None, hash_base: int | None = None,
                dv_changes: list[IndexManifestEntry] | None = None) -> Snapshot:
        snapshot = None
        try:
            snapshot = self._commit_attempts(adds, kind, identifier, overwrite, fixed_deletes, sequence_guard,
                                             changelog, added_hashes or {}, hash_base, dv_changes or [])
            self.landed = snapshot
            return snapshot
        finally:  # hash index files of attempts that did not land (all stay if the last one may have)
            if not self.outcome_unknown:
                self.index.discard_unlanded(snapshot)

    def _commit_attempts(self, adds: list[ManifestEntry], kind: str, identifier: int,
                         overwrite: OverwriteScope,
                         fixed_deletes: list[ManifestEntry] | None,
                         sequence_guard: tuple[int, dict[tuple[bytes, int], int]] | None,
                         changelog: list[ManifestEntry] | None,
                         added_hashes: dict[tuple[bytes, int], np.ndarray], hash_base: int | None,
                         dv_changes: list[IndexManifestEntry] | None = None) -> Snapshot:
        self._ensure_schema()
        fixed_deletes = fixed_deletes or []
        delta_metas: list[ManifestFileMeta] = []
        changelog_metas: list[ManifestFileMeta] = []
        attempt_files: list[str] = []  # files of the current attempt, deleted if it does not land
        try:
            tracking = row_tracking_enabled(self.table.options)
            # row ids depend on the attempt's base, an overwrite's deletes too: their delta is written per attempt,
            # one manifest of the deletes then the adds, as Paimon's commit writes it
            per_attempt = tracking or overwrite is not None
            if (adds or fixed_deletes) and not per_attempt:
                delta_metas = self.manifest_file.write(fixed_deletes + adds)
            if changelog:
                changelog_metas = self.manifest_file.write(changelog)
            for attempt in range(self.max_retries + 1):
                latest = self.table.snapshot_manager.latest()
                base_metas: list[ManifestFileMeta] = []
                if latest is not None:
                    base_metas = (self.manifest_list.read(latest.base_manifest_list)
                                  + self.manifest_list.read(latest.delta_manifest_list))
                attempt_files = []
                if fixed_deletes:
                    self._check_still_live(fixed_deletes, base_metas)
                if sequence_guard is not None and latest is not None:
                    self._check_sequences(sequence_guard, latest)
                if kind == "APPEND" and self.table.bucket == POSTPONE_BUCKET and latest is not None:
                    self._check_bucket_counts(adds, base_metas)
                deletes: list[ManifestEntry] = []
                if overwrite is not None and latest is not None:
                    live = live_entries(e for m in base_metas for e in self.manifest_file.read(m.file_name))
                    deletes = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                               for e in live.values() if overwritten(overwrite, e.partition)]
                this_delta = list(delta_metas)
                next_row_id = latest.next_row_id if latest else None
                if per_attempt:
                    added = adds
                    if tracking:
                        added, next_row_id = assign_row_tracking(
                            adds, (latest.id + 1) if latest else 1, next_row_id or 0,
                            self.table.options.get("row-tracking.partition-group-on-commit"))
                    if deletes or fixed_deletes or added:
                        this_delta = self.manifest_file.write(deletes + fixed_deletes + added)
                        attempt_files += [m.file_name for m in this_delta]
                index_changes = self.index.hash_changes(added_hashes, latest, hash_base, overwrite)
                index_manifest = self.index.manifest_for(latest, overwrite, index_changes, dv_changes or [])
                if latest is None or index_manifest != latest.index_manifest:
                    if index_manifest is not None:
                        attempt_files.append(index_manifest)
                base_metas, merged_files = self._maybe_merge(base_metas)
                attempt_files += merged_files
                base_list = self.manifest_list.write(base_metas)
                delta_list = self.manifest_list.write(this_delta)
                attempt_files += [base_list, delta_list]
                changelog_list = None
                if changelog_metas:
                    changelog_list = self.manifest_list.write(changelog_metas)
                    attempt_files.append(changelog_list)
                added_rows = sum(e.file.row_count for e in adds)
                deleted_rows = sum(e.file.row_count for e in deletes + fixed_deletes)
                snapshot = Snapshot(
                    id=(latest.id + 1) if latest else 1,
                    schema_id=self.table.table_schema.id,
                    base_manifest_list=base_list,
                    delta_manifest_list=delta_list,
                    commit_user=self.commit_user,
                    commit_identifier=identifier,
                    commit_kind=kind,
                    time_millis=int(time.time() * 1000),
                    total_record_count=(latest.total_record_count if latest else 0) + added_rows - deleted_rows,
                    delta_record_count=added_rows - deleted_rows,
                    watermark=latest.watermark if latest else None,
                    next_row_id=next_row_id,
                    changelog_manifest_list=changelog_list,
                    index_manifest=index_manifest,
                    changelog_record_count=sum(e.file.row_count for e in changelog or ()),
                )
                try:
                    if self.table.snapshot_manager.try_commit(snapshot):
                        return snapshot
                except OutcomeUnknown:
                    self.outcome_unknown = True  # it may have landed: nothing of it is deleted
                    raise
                self.lost_races += 1
                log.info("commit to %s: snapshot %d was taken by another writer (attempt %d of %d); retrying",
                         self.table.path, snapshot.id, attempt + 1, self.max_retries + 1)
                self._delete_manifests(attempt_files)  # lost the race: this attempt's files go
                attempt_files = []
                time.sleep(random.uniform(0.005, 0.05) * min(attempt + 1, 10))
            raise CommitConflict(f"gave up committing to {self.table.path} after {self.max_retries + 1} attempts: "
                                 "other writers kept committing first (raise commit.max-retries)")
        except BaseException:
            if not self.outcome_unknown:
                self._delete_manifests(attempt_files + [m.file_name for m in delta_metas + changelog_metas])
            raise

    def _check_still_live(self, deletes: list[ManifestEntry], base_metas: list[ManifestFileMeta]) -> None:
        """A compaction may only remove files that are still there (another compaction may have won)."""
        live = live_entries(e for m in base_metas for e in self.manifest_file.read(m.file_name))
        missing = [e.file.file_name for e in deletes if e.identifier not in live]
        if missing:
            raise CommitConflict(f"files {missing[:5]} this commit replaces were already removed by another commit; "
                                 "its result is discarded (run it again)")

    def _check_bucket_counts(self, adds: list[ManifestEntry], base_metas: list[ManifestFileMeta]) -> None:
        """A postpone-bucket table's write into real buckets: each partition must still have the number of
        buckets the writers used (another writer may have given a new partition another one meanwhile; Paimon's
        appendCommitCheckConflict refuses the commit the same way)."""
        ours = {e.partition: e.total_buckets for e in adds if e.bucket >= 0}
        if not ours:
            return
        live = live_entries(e for m in base_metas for e in self.manifest_file.read(m.file_name))
        for e in live.values():
            if e.bucket >= 0 and e.partition in ours and e.total_buckets != ours[e.partition]:
                raise CommitConflict(
                    f"this write put rows of a partition of {self.table.path} into {ours[e.partition]} bucket(s), but "
                    f"the partition has {e.total_buckets} (another writer committed it first); nothing was committed. "
                    "Retry the write")

    def _check_sequences(self, guard: tuple[int, dict[tuple[bytes, int], int]], latest: Snapshot) -> None:
        """Later commits must win: refuse if, since our base, another writer put rows at or above our
        sequence numbers into one of our buckets (two jobs upserting the same bucket at once)."""
        base_id, min_seq = guard
        sm = self.table.snapshot_manager
        for sid in range(base_id + 1, latest.id + 1):
            snap = sm.snapshot(sid)
            # a COMPACT snapshot too: its files keep their inputs' numbers (never above this write's), except a
            # postpone compaction's, which numbers the rows it moves into a bucket after the bucket's files
            if snap.commit_kind not in ("APPEND", "OVERWRITE", "COMPACT"):
                continue
            for meta in self.manifest_list.read(snap.delta_manifest_list):
                for e in self.manifest_file.read(meta.file_name):
                    key = (e.partition, e.bucket)
                    if e.kind == FileKind.ADD and key in min_seq and e.file.max_sequence_number >= min_seq[key]:
                        raise CommitConflict(
                            f"snapshot {sid} (another writer) added rows to bucket {e.bucket} of {self.table.path} "
                            "while this write was running; concurrent upserts into one bucket cannot both win. "
                            "Retry the write")

    def _delete_manifests(self, names: Iterable[str]) -> None:
        for name in names:
            self.io.delete_quietly(f"{self.manifest_file.dir}/{name}")

    def _maybe_merge(self, metas: list[ManifestFileMeta]) -> tuple[list[ManifestFileMeta], list[str]]:
        """Rewrite the live entries into fewer manifests once there are merge-min-count of them (Paimon's
        ManifestFileMerger: `candidates.size() >= suggestedMinMetaCount`)."""
        if len(metas) < self.merge_min_count:
            return metas, []
        entries = [e for m in metas for e in self.manifest_file.read(m.file_name)]
        live = list(live_entries(entries).values())
        merged = self.manifest_file.write(live) if live else []
        return merged, [m.file_name for m in merged]


def _min_sequences(messages: Sequence[CommitMessage]) -> dict[tuple[bytes, int], int]:
    out: dict[tuple[bytes, int], int] = {}
    for m in messages:
        if m.bucket == POSTPONE_BUCKET:  # postpone rows are numbered by the compaction: writers never conflict
            continue
        for f in m.new_files:
            key = (m.partition, m.bucket)
            out[key] = min(out.get(key, f.min_sequence_number), f.min_sequence_number)
    return out

