"""Snapshots (`snapshot/snapshot-N`), the LATEST/EARLIEST hints, tags and time travel."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

from ..errors import EXIT_NOT_FOUND, CorruptFileError, PaimonDsError, reading_file
from ..fs.file_io import FileIO
from ..options.javatime import duration_from_json, duration_json, local_datetime_from_json, local_datetime_json

log = logging.getLogger(__name__)

SNAPSHOT_VERSION = 3
# Paimon's commitIdentifier for batch (non-streaming) commits: Long.MAX_VALUE.
BATCH_COMMIT_IDENTIFIER = 2**63 - 1
_TMP = re.compile(r"\.[0-9a-f]{32}\.tmp$")  # FileIO's temporary name of a file being created


def to_millis(value: dt.datetime | str | int | float) -> int:
    """An instant as epoch milliseconds: a datetime (naive = local time, as Paimon reads its timestamps),
    epoch millis, or a string `yyyy-MM-dd HH:mm:ss[.fff]` as Paimon's procedures take it."""
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a timestamp: {text!r} (use yyyy-MM-dd HH:mm:ss)") from None
    return int(value.timestamp() * 1000)


class SnapshotNotFound(PaimonDsError, LookupError):
    exit_code = EXIT_NOT_FOUND


class SnapshotExpired(SnapshotNotFound):
    """A snapshot expired while it was being read: the files it used were deleted with it."""


class SkippedFileWarning(UserWarning):
    """A damaged old snapshot (or changelog, tag) was left out of a listing, history or expiry: the rest is shown."""


def warn_skipped(error: CorruptFileError) -> None:
    """Warn that a damaged file was skipped. A Python warning, not only a log line: a library user sees it once per
    file and place without configuring logging, can turn it into an error (`-W error`, `warnings.simplefilter`)
    or silence it, and tests can assert it (pytest.warns); it is logged too, for services that only read logs."""
    log.warning("skipped: %s", error)
    warnings.warn(f"skipped: {error}", SkippedFileWarning, stacklevel=3)


@dataclass(frozen=True)
class Snapshot:
    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    changelog_record_count: int = 0
    watermark: int | None = None
    log_offsets: dict[str, int] = field(default_factory=dict)
    version: int = SNAPSHOT_VERSION
    next_row_id: int | None = None  # row-tracking tables: the first row id the next commit hands out
    extra: dict[str, Any] = field(default_factory=dict)  # fields we do not interpret, kept on rewrite

    def __repr__(self) -> str:
        # what a reader of a write's result wants; the manifest lists and the rest are its fields
        when = dt.datetime.fromtimestamp(self.time_millis / 1000, dt.timezone.utc)
        return (f"Snapshot(id={self.id}, kind={self.commit_kind}, time={when.isoformat(timespec='milliseconds')}, "
                f"records={self.total_record_count} ({self.delta_record_count:+}), schema_id={self.schema_id})")

    def to_json(self) -> str:
        obj: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "schemaId": self.schema_id,
            "baseManifestList": self.base_manifest_list,
            "deltaManifestList": self.delta_manifest_list,
            "changelogManifestList": self.changelog_manifest_list,
        }
        if self.index_manifest is not None:
            obj["indexManifest"] = self.index_manifest
        obj.update({
            "commitUser": self.commit_user,
            "commitIdentifier": self.commit_identifier,
            "commitKind": self.commit_kind,
            "timeMillis": self.time_millis,
            "logOffsets": self.log_offsets,
            "totalRecordCount": self.total_record_count,
            "deltaRecordCount": self.delta_record_count,
            "changelogRecordCount": self.changelog_record_count,
        })
        if self.watermark is not None:
            obj["watermark"] = self.watermark
        if self.next_row_id is not None:
            obj["nextRowId"] = self.next_row_id
        return json.dumps(obj, indent=2)

    @staticmethod
    def from_json(text: str) -> Snapshot:
        o = json.loads(text)
        known = {"version", "id", "schemaId", "baseManifestList", "deltaManifestList", "changelogManifestList",
                 "indexManifest", "commitUser", "commitIdentifier", "commitKind", "timeMillis", "logOffsets",
                 "totalRecordCount", "deltaRecordCount", "changelogRecordCount", "watermark", "nextRowId"}
        return Snapshot(
            id=o["id"], schema_id=o["schemaId"], base_manifest_list=o["baseManifestList"],
            delta_manifest_list=o["deltaManifestList"], commit_user=o["commitUser"],
            commit_identifier=int(o["commitIdentifier"]),  # a string in Paimon <= 0.2's version-1 snapshots
            commit_kind=o["commitKind"], time_millis=o["timeMillis"],
            total_record_count=o.get("totalRecordCount") or 0, delta_record_count=o.get("deltaRecordCount") or 0,
            changelog_manifest_list=o.get("changelogManifestList"), index_manifest=o.get("indexManifest"),
            changelog_record_count=o.get("changelogRecordCount") or 0, watermark=o.get("watermark"),
            log_offsets=o.get("logOffsets") or {}, version=o.get("version", 1), next_row_id=o.get("nextRowId"),
            extra={k: v for k, v in o.items() if k not in known},
        )


class SnapshotManager:
    def __init__(self, io: FileIO, table_path: str) -> None:
        self.io = io
        self.table_path = table_path
        self.dir = f"{table_path}/snapshot"
        self.tag_dir = f"{table_path}/tag"
        # snapshots expired while the changelog outlives them (Paimon's long-lived changelog): changelog-<id>,
        # the snapshot's JSON, with their own EARLIEST / LATEST hints
        self.changelog_dir = f"{table_path}/changelog"

    def path(self, snapshot_id: int) -> str:
        return f"{self.dir}/snapshot-{snapshot_id}"

    def hint(self, name: str, directory: str | None = None) -> int | None:
        """The id a hint file (EARLIEST, LATEST) of ``directory`` (default: snapshot/) holds, or None."""
        try:
            return int(self.io.read_text(f"{directory or self.dir}/{name}").strip())
        except (FileNotFoundError, ValueError, OSError):
            return None

    def list_ids(self) -> list[int]:
        """The ids of the table's snapshots, oldest first. A snapshot file below the EARLIEST hint (when the hint's
        snapshot exists) is not one: an expiry that wrote the hint first stopped before it deleted that file (the
        files it used may be gone); the next expiry deletes it."""
        names = self.io.list_names(self.dir)
        ids = sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())
        if len(ids) > 1 and "EARLIEST" in names:
            earliest = self.hint("EARLIEST")
            if earliest is not None and earliest > ids[0] and earliest in ids:
                return [i for i in ids if i >= earliest]
        return ids

    def remnants(self) -> list[int]:
        """Snapshot files below the EARLIEST hint that an interrupted expiry left (see list_ids)."""
        names = self.io.list_names(self.dir)
        ids = sorted(int(n[9:]) for n in names if n.startswith("snapshot-") and n[9:].isdigit())
        earliest = self.hint("EARLIEST") if ids and "EARLIEST" in names else None
        if earliest is None or earliest not in ids:
            return []
        return [i for i in ids if i < earliest]

    def exists(self, snapshot_id: int) -> bool:
        return self.io.exists(self.path(snapshot_id))

    def latest_id(self) -> int | None:
        """The newest snapshot id: from the LATEST hint, probing forward past a stale hint."""
        hint = self.hint("LATEST")
        if hint is not None and self.io.exists(self.path(hint)):
            nxt = hint + 1
            while self.io.exists(self.path(nxt)):
                nxt += 1
            return nxt - 1
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self.hint("EARLIEST")
        if hint is not None and self.io.exists(self.path(hint)):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None

    def read_file(self, path: str, what: str) -> Snapshot:
        """The snapshot JSON at ``path`` (a snapshot, changelog or tag file); one that cannot be decoded is a
        CorruptFileError naming it. A missing file raises FileNotFoundError."""
        data = self.io.read_bytes(path)
        with reading_file(path, what, len(data)):
            return Snapshot.from_json(data.decode("utf-8"))

    def snapshot(self, snapshot_id: int) -> Snapshot:
        try:
            return self.read_file(self.path(snapshot_id), "snapshot")
        except FileNotFoundError:
            raise SnapshotNotFound(f"snapshot {snapshot_id} does not exist in {self.table_path}") from None

    def readable_snapshots(self, ids: list[int] | None = None, limit: int | None = None) -> list[Snapshot]:
        """The snapshots ``ids`` (default: all listed) in that order (at most ``limit``), skipping any that cannot be
        read, damaged (with a SkippedFileWarning) or expired meanwhile: listings and history show the rest. The
        latest snapshot's damage is not skipped (CorruptFileError): an older one is never shown as the table's
        state, as a reader of the table gets the error too (SnapshotManager.latest)."""
        ids = self.list_ids() if ids is None else list(ids)
        latest = self.latest_id() if ids else None
        out: list[Snapshot] = []
        for sid in ids:
            if limit is not None and len(out) >= limit:
                break
            try:
                out.append(self.snapshot(sid))
            except SnapshotNotFound:
                continue  # expired between listing and reading
            except CorruptFileError as e:
                if sid == latest:
                    raise  # never show an older snapshot as the table's state
                warn_skipped(e)
        return out

    def latest(self) -> Snapshot | None:
        sid = self.latest_id()
        return None if sid is None else self.snapshot(sid)

    def try_commit(self, snapshot: Snapshot) -> bool:
        """Atomically create snapshot-N; False if another writer created it first."""
        if not self.io.try_create(self.path(snapshot.id), snapshot.to_json().encode()):
            return False
        # Hints are only hints: readers probe past a stale LATEST.
        try:
            self.io.write_bytes(f"{self.dir}/LATEST", str(snapshot.id).encode())
            if snapshot.id == 1 or self.hint("EARLIEST") is None:
                self.io.write_bytes(f"{self.dir}/EARLIEST", str(self.earliest_id() or snapshot.id).encode())
        except OSError as e:
            log.warning("snapshot %d of %s committed; its LATEST / EARLIEST hints were not updated (%s): "
                        "readers find it by probing past the stale hint", snapshot.id, self.dir, e)
        return True

    # ---------------------------------------------------------------- the long-lived changelog
    def changelog_path(self, changelog_id: int) -> str:
        return f"{self.changelog_dir}/changelog-{changelog_id}"

    def changelog_ids(self) -> list[int]:
        return sorted(int(n[10:]) for n in self.io.list_names(self.changelog_dir)
                      if n.startswith("changelog-") and n[10:].isdigit())

    def changelog_exists(self, changelog_id: int) -> bool:
        return self.io.exists(self.changelog_path(changelog_id))

    def changelog(self, changelog_id: int) -> Snapshot:
        """The snapshot `changelog/changelog-<id>` keeps (its JSON is the expired snapshot's)."""
        try:
            return self.read_file(self.changelog_path(changelog_id), "changelog")
        except FileNotFoundError:
            raise SnapshotNotFound(f"changelog {changelog_id} does not exist in {self.table_path}") from None

    def earliest_changelog_id(self) -> int | None:
        """As Paimon's SnapshotManager.earliestLongLivedChangelogId: the EARLIEST hint if that changelog exists,
        else the smallest id listed."""
        hint = self.hint("EARLIEST", self.changelog_dir)
        if hint is not None and self.changelog_exists(hint):
            return hint
        ids = self.changelog_ids()
        return ids[0] if ids else None

    def latest_changelog_id(self) -> int | None:
        """As Paimon's latestLongLivedChangelogId: the LATEST hint if no changelog follows it, else the largest
        id listed."""
        hint = self.hint("LATEST", self.changelog_dir)
        if hint is not None and hint > 0 and not self.changelog_exists(hint + 1):
            return hint
        ids = self.changelog_ids()
        return ids[-1] if ids else None

    def snapshot_or_changelog(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id``, or the changelog its expiry left (streaming reads go on through both)."""
        try:
            return self.snapshot(snapshot_id)
        except SnapshotNotFound:
            try:
                return self.changelog(snapshot_id)
            except SnapshotNotFound:
                raise SnapshotNotFound(f"snapshot {snapshot_id} does not exist in {self.table_path}, nor does "
                                       "a changelog of it") from None

    def at_or_before(self, time_millis: int) -> Snapshot:
        """The latest snapshot committed at or before ``time_millis`` (Paimon's scan.timestamp-millis). None
        such: an error, as Paimon 1.2+ raises in StaticFromTimestampStartingScanner (Paimon 0.9 and 1.0 read
        nothing then: their scanner gives NoSnapshot, an empty read; neither reads the earliest snapshot)."""
        best = earliest = None
        for sid in self.list_ids():
            s = self.snapshot(sid)
            earliest = earliest or s
            if s.time_millis <= time_millis:
                best = s
            else:
                break
        if best is None:
            raise SnapshotNotFound(
                f"no snapshot of {self.table_path} was committed at or before {time_millis} (Paimon: \"There is "
                f"currently no snapshot earlier than or equal to timestamp [{time_millis}], the earliest snapshot's "
                f"timestamp is [{earliest.time_millis if earliest is not None else 'null'}]\")")
        return best

    def tag_names(self) -> list[str]:
        # (a tag being created is a hidden `tag-<name>.<uuid>.tmp` first: not a tag yet)
        return sorted(n[4:] for n in self.io.list_names(self.tag_dir)
                      if n.startswith("tag-") and not _TMP.search(n))

    def tag_path(self, name: str) -> str:
        return f"{self.tag_dir}/tag-{name}"

    def tag(self, name: str) -> Snapshot:
        try:
            return self.read_file(self.tag_path(name), "tag")
        except FileNotFoundError:
            raise SnapshotNotFound(f"tag {name!r} does not exist in {self.table_path}") from None


# a tag file is its snapshot's JSON with, for a tag that has a retention time, these two fields (Paimon's Tag)
TAG_CREATE_TIME, TAG_TIME_RETAINED = "tagCreateTime", "tagTimeRetained"
_RETAINED_MARK = "\u0000retained\u0000"


def tag_json(snapshot: Snapshot, time_retained_ns: int | None, create_time: dt.datetime | None = None) -> str:
    """A tag file's content as Paimon's TagManager.createTag writes it: the snapshot's JSON, and for a tag with a
    retention time also its creation time (LocalDateTime.now(): local wall time, Jackson's array) and the
    retention (a Duration in decimal seconds). Without one the two fields are left out, as Paimon leaves them
    out (readers of Paimon 0.7 and older cannot read them)."""
    text = snapshot.to_json()
    if time_retained_ns is None:
        return text
    obj = json.loads(text)
    obj[TAG_CREATE_TIME] = local_datetime_json(create_time or dt.datetime.now())
    obj[TAG_TIME_RETAINED] = _RETAINED_MARK
    return json.dumps(obj, indent=2).replace(json.dumps(_RETAINED_MARK), duration_json(time_retained_ns))


def tag_retention(tag: Snapshot) -> tuple[dt.datetime | None, int | None]:
    """A tag's creation time (local wall time) and retention (nanoseconds), None where it has none."""
    return (local_datetime_from_json(tag.extra.get(TAG_CREATE_TIME)),
            duration_from_json(tag.extra.get(TAG_TIME_RETAINED)))
