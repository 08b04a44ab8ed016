"""Table maintenance: expiring snapshots without touching what a retained snapshot or a tag references.

Order matters for readers: the EARLIEST hint moves first, then the expired snapshot files go, and
only then the data and metadata files no retained snapshot or tag references. A crash in between
leaves unreferenced files (orphans), never a snapshot whose files are gone.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..branch import BranchError
from ..consumer import protected_from
from ..external_paths import path_string
from ..fs import is_uri
from ..index.manifest import IndexManifestFile
from ..index.paths import index_file_rel
from ..manifest.meta import FileKind, ManifestEntry, live_entries
from ..options import EXPIRE, TAG, check_supported
from ..snapshot import Snapshot, SnapshotNotFound, tag_json
from .scan import TableScan

if TYPE_CHECKING:
    from ..table import Table



@dataclass
class ExpireResult:
    expired: list[int] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)


def _tag_snapshots(table: Table) -> list[Snapshot]:
    sm = table.snapshot_manager
    return [sm.tag(name) for name in sm.tag_names()]


class _References:
    """Data files (relative to the table) and metadata files a set of snapshots uses."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.scan = TableScan(table)
        self.data: set[str] = set()
        self.manifests: set[str] = set()
        self._dirs: dict[tuple[bytes, int], str] = {}
        self._index_manifests_read: set[str] = set()  # consecutive snapshots often share one

    def _dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        if key not in self._dirs:
            self._dirs[key] = self.scan.bucket_dir(partition, bucket)
        return self._dirs[key]

    def _data_path(self, e: ManifestEntry) -> str:
        """Table-relative path of a data file, or its full external location (`_EXTERNAL_PATH`)."""
        return e.file.external_path or f"{self._dir(e.partition, e.bucket)}/{e.file.file_name}"

    def add_snapshot(self, snapshot: Snapshot) -> None:
        """Every file ``snapshot`` uses: its live data files, its changelog, its manifests and lists."""
        ml, mf = self.scan.manifest_list, self.scan.manifest_file
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if snapshot.changelog_manifest_list:
            lists.append(snapshot.changelog_manifest_list)
        metas = {name: ml.read(name) for name in lists}
        data_metas = metas[snapshot.base_manifest_list] + metas[snapshot.delta_manifest_list]
        for e in live_entries(e for m in data_metas for e in mf.read(m.file_name)).values():
            self.data.add(self._data_path(e))
        for name, ms in metas.items():
            self.manifests.add(name)
            self.manifests.update(m.file_name for m in ms)
            if name == snapshot.changelog_manifest_list:
                for m in ms:
                    for e in mf.read(m.file_name):
                        self.data.add(self._data_path(e))
        if snapshot.index_manifest:
            # the index manifest and every index file it lists (hash indexes, deletion vectors), in `index/` or
            # beside the data (`index-file-in-data-file-dir`), or at a recorded external location
            self.manifests.add(snapshot.index_manifest)
            if snapshot.index_manifest not in self._index_manifests_read:
                self._index_manifests_read.add(snapshot.index_manifest)
                for e in IndexManifestFile(self.table.io, self.table.root).read(snapshot.index_manifest):
                    self.data.add(index_file_rel(self.table, e.partition, e.bucket, e.index_file))

    def add_delta_files(self, snapshot: Snapshot) -> None:
        """Files a snapshot's delta added or removed (everything its predecessor did not have live)."""
        mf = self.scan.manifest_file
        for m in self.scan.manifest_list.read(snapshot.delta_manifest_list):
            for e in mf.read(m.file_name):
                if e.kind in (FileKind.ADD, FileKind.DELETE):
                    self.data.add(self._data_path(e))


def _branch_tables(table: Table) -> list[Table]:
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


def _still_referenced(table: Table) -> _References:
    """Everything the snapshots and tags of every branch of the table use now (branches share data files and
    manifests, so a file one branch dropped may still be another's; Paimon's orphan clean walks them all)."""
    keep = _References(table)
    for other in _branch_tables(table):
        refs = keep if other is table else _References(other)
        sm = other.snapshot_manager
        for sid in sm.list_ids():
            refs.add_snapshot(sm.snapshot(sid))
        for tag in _tag_snapshots(other):
            refs.add_snapshot(tag)
        if refs is not keep:
            keep.data |= refs.data
            keep.manifests |= refs.manifests
    return keep


def _delete_unreferenced(table: Table, drop: _References) -> list[str]:
    """Delete the files ``drop`` names that no snapshot or tag still uses; returns them (table-relative,
    external data files by their full location)."""
    keep = _still_referenced(table)
    deleted = sorted(drop.data - keep.data) + [f"manifest/{m}" for m in sorted(drop.manifests - keep.manifests)]
    for rel in deleted:
        table.io.delete_quietly(rel if is_uri(rel) else f"{table.root}/{rel}")
    return deleted


def expire_snapshots(table: Table, retain_min: int | None = None, retain_max: int | None = None,
                     time_retained_ms: int | None = None, now_ms: int | None = None) -> ExpireResult:
    """Paimon's expiration: drop the oldest snapshots while more than ``retain_max`` remain, or more than
    ``retain_min`` remain and the oldest is older than ``time_retained_ms``; the latest always stays.
    Defaults come from `snapshot.num-retained.min/max` and `snapshot.time-retained`. Snapshots a consumer still
    needs stay. A table whose options ask Paimon's expiry for more (changelog retention) is refused before
    anything is deleted."""
    opts = table.options
    check_supported(opts, EXPIRE, table.path)
    retain_min = retain_min if retain_min is not None else opts.get("snapshot.num-retained.min")
    retain_max = retain_max if retain_max is not None else opts.get("snapshot.num-retained.max")
    if time_retained_ms is None:
        time_retained_ms = opts.get("snapshot.time-retained")
    if retain_min < 1 or retain_max < retain_min:
        raise ValueError(f"snapshot retention needs 1 <= min ({retain_min}) <= max ({retain_max})")
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    sm = table.snapshot_manager
    ids = sm.list_ids()
    result = ExpireResult()
    if len(ids) <= retain_min:
        return result
    cut = 0  # ids[:cut] expire
    while len(ids) - cut > retain_min:
        if len(ids) - cut > retain_max or sm.snapshot(ids[cut]).time_millis < now_ms - time_retained_ms:
            cut += 1
        else:
            break
    # consumers (paimon_ds.consumer): the snapshot a consumer reads next and every later one stay, whatever the
    # retention options say (Paimon's ExpireSnapshotsImpl bounds its range with ConsumerManager.minNextSnapshot)
    cut = min(cut, _first_protected(ids, protected_from(table)))
    if cut == 0:
        return result
    _branch_tables(table)  # every branch readable, or nothing is deleted
    expired, retained = ids[:cut], ids[cut:]

    drop = _References(table)
    for sid in expired:
        try:
            drop.add_snapshot(sm.snapshot(sid))
        except SnapshotNotFound:
            continue
        drop.add_delta_files(sm.snapshot(sid))

    # readers first: move EARLIEST, then remove the expired snapshot files, then their files
    table.io.write_bytes(f"{sm.dir}/EARLIEST", str(retained[0]).encode())
    for sid in expired:
        table.io.delete_quietly(sm.path(sid))
        result.expired.append(sid)
    result.deleted_files = _delete_unreferenced(table, drop)
    return result


def _first_protected(ids: list[int], protected: int | None) -> int:
    """The index in ``ids`` (ascending) of the first snapshot at or after ``protected`` (len(ids) if None)."""
    return len(ids) if protected is None else bisect.bisect_left(ids, protected)


def create_tag(table: Table, name: str, snapshot_id: int | None = None) -> Snapshot:
    """Tag a snapshot (the latest by default): `tag/tag-<name>` holds a copy of it, as in Paimon, with the table's
    `tag.default-time-retained` (its creation time and retention, after which a commit deletes it). A table whose
    options ask Paimon's tag creation for more (callbacks, success files) is refused before anything is written."""
    check_supported(table.options, TAG, table.path)
    sm = table.snapshot_manager
    snapshot = sm.snapshot(snapshot_id) if snapshot_id is not None else sm.latest()
    if snapshot is None:
        raise SnapshotNotFound(f"{table.path} has no snapshot to tag")
    if not name or "/" in name:
        raise ValueError(f"tag name {name!r} is not valid")
    table.io.mkdirs(sm.tag_dir)
    content = tag_json(snapshot, table.options.get("tag.default-time-retained"))
    if not table.io.try_create(sm.tag_path(name), content.encode()):
        raise ValueError(f"tag {name!r} already exists in {table.path}")
    return snapshot


def delete_tag(table: Table, name: str) -> list[str]:
    """Remove a tag, and the files only it still referenced (its snapshot expired since); returns them."""
    sm = table.snapshot_manager
    tagged = sm.tag(name)  # raises SnapshotNotFound naming the tag
    _branch_tables(table)  # every branch readable, or nothing is deleted
    table.io.delete_quietly(f"{sm.tag_dir}/tag-{name}")
    drop = _References(table)
    drop.add_snapshot(tagged)
    return _delete_unreferenced(table, drop)


def rollback(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again: newer snapshots and the files only they
    used are deleted. A tag whose snapshot has expired is restored from the tag's copy."""
    sm = table.snapshot_manager
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback needs exactly one of a snapshot id or a tag name")
    target = sm.tag(tag) if tag is not None else sm.snapshot(snapshot_id)  # raises naming what is missing
    _branch_tables(table)  # every branch readable, or nothing is deleted
    ids = sm.list_ids()
    newer = [i for i in ids if i > target.id]
    drop = _References(table)
    for sid in newer:
        drop.add_snapshot(sm.snapshot(sid))
        drop.add_delta_files(sm.snapshot(sid))
    # newest first, so that a reader probing past LATEST never finds a gap
    for sid in reversed(newer):
        table.io.delete_quietly(sm.path(sid))
    if target.id not in ids:  # the tag outlived its snapshot: restore it
        table.io.write_bytes(sm.path(target.id), target.to_json().encode())
        table.io.write_bytes(f"{sm.dir}/EARLIEST", str(target.id).encode())
    table.io.write_bytes(f"{sm.dir}/LATEST", str(target.id).encode())
    _delete_unreferenced(table, drop)
    return target


# Directories orphan removal never touches: metadata with its own lifecycle. Index files (in `index/` or
# beside the data) are removed like data files when no index manifest of a snapshot or tag lists them.
_KEEP_DIRS = ("schema", "snapshot", "tag", "branch", "consumer", "changelog")
DEFAULT_ORPHAN_MARGIN_MS = 86_400_000  # Paimon's remove_orphan_files default: older than 1 day


def remove_orphan_files(table: Table, older_than_ms: int = DEFAULT_ORPHAN_MARGIN_MS,
                        now_ms: int | None = None, dry_run: bool = False) -> list[str]:
    """Delete data and manifest files no snapshot or tag references and older than the margin (files
    of writes still in flight are unreferenced too, until they commit: keep the margin above the
    longest write). Returns the table-relative paths deleted (or that would be, with ``dry_run``)."""
    if older_than_ms < 0:
        raise ValueError(f"older_than_ms must be >= 0, got {older_than_ms}")
    used = _still_referenced(table)
    referenced = used.data | {f"manifest/{m}" for m in used.manifests}
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    root = table.root.rstrip("/")
    found = []
    for path, info in table.io.fs.find(root, detail=True).items():
        rel = path[len(root):].lstrip("/")
        parts = rel.split("/")
        if parts[0] in _KEEP_DIRS or any(p.startswith((".", "_")) for p in parts) or rel in referenced:
            continue
        if _mtime_ms(table, path, info) > now_ms - older_than_ms:
            continue  # young: may belong to a write that has not committed yet
        found.append(rel)
    found += _external_orphans(table, used, now_ms - older_than_ms)
    if not dry_run:
        for rel in found:
            table.io.delete_quietly(rel if is_uri(rel) else f"{root}/{rel}")
    return sorted(found)


def _external_orphans(table: Table, used: _References, before_ms: int) -> list[str]:
    """Unreferenced files older than ``before_ms`` in the bucket directories (`k=v/.../bucket-N/`) of every
    root of `data-file.external-paths`, as Paimon's orphan clean lists them; by full location. Only the
    table's layout is looked at: a root may hold other tables' files or anything else beside them."""
    roots = table.options.get("data-file.external-paths") or []
    if not roots:
        return []
    depth = len(table.schema.partition_keys)
    referenced = set()
    for p in used.data:
        if is_uri(p):
            fs, stripped, _ = table.io.locate(p)
            referenced.add((id(fs), stripped))
    found = []
    for root in roots:
        fs, base, _ = table.io.locate(root)
        base = base.rstrip("/")
        try:
            listing = fs.find(base, detail=True)
        except (FileNotFoundError, OSError):
            continue
        for path, info in listing.items():
            parts = path[len(base):].lstrip("/").split("/")
            in_bucket = (len(parts) >= depth + 2 and all("=" in p for p in parts[:depth])
                         and parts[depth].startswith("bucket-"))
            if not in_bucket or any(p.startswith((".", "_")) for p in parts) or (id(fs), path) in referenced:
                continue
            if _mtime_ms(table, path, info, fs) > before_ms:
                continue
            found.append(f"{path_string(root)}/{'/'.join(parts)}")
    return found


def _mtime_ms(table: Table, path: str, info: dict, fs: Any = None) -> int:
    value = info.get("mtime", info.get("LastModified"))
    if value is None:
        value = (fs or table.io.fs).modified(path)
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)
