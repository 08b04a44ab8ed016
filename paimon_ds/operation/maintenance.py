"""Table maintenance: expiry, tags, rollback and orphan removal, never touching what a retained snapshot, a tag,
a changelog or another branch uses.

Order matters for readers: everything is read first, then the snapshot (or tag) files go, then the hints move,
and only then the data and metadata files nothing retained references. A crash or a failed delete in between
leaves unreferenced files (orphans), never a snapshot whose files are gone.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from ..fs.file_io import is_uri
from ..options.registry import EXPIRE, TAG, check_supported
from ..snapshot.branch import BRANCH_DIR
from ..snapshot.manager import Snapshot, SnapshotNotFound, tag_json
from ..snapshot.retention import Retention
from ..store.external_paths import path_string
from . import snapshot_expiry
from .references import References, branch_tables, still_referenced
from .snapshot_expiry import ExpireResult
from .staged_files import STAGING_PREFIX

if TYPE_CHECKING:
    from ..store.file_store import FileStore

log = logging.getLogger(__name__)

__all__ = ["ExpireResult", "create_tag", "delete_tag", "expire_snapshots", "remove_orphan_files", "rollback"]


def _delete_unreferenced(table: FileStore, drop: References) -> list[str]:
    """Delete the files ``drop`` names that no snapshot, tag or changelog still uses; returns them (table-relative,
    external data files by their full location)."""
    keep = still_referenced(table)
    deleted = sorted(drop.data - keep.data) + [f"manifest/{m}" for m in sorted(drop.manifests - keep.manifests)]
    for rel in deleted:
        table.io.delete_quietly(rel if is_uri(rel) else f"{table.root}/{rel}")
    return deleted


def expire_snapshots(table: FileStore, retain_min: int | None = None, retain_max: int | None = None,
                     time_retained_ms: int | None = None, now_ms: int | None = None,
                     max_deletes: int | None = None) -> ExpireResult:
    """Paimon's expiry (operation.snapshot_expiry: the same as after each commit): the oldest snapshots beyond
    ``retain_max``, then those older than ``time_retained_ms`` beyond ``retain_min``, at most ``max_deletes`` in
    one run; when the table keeps its changelog longer (`changelog.*`), the changelogs too. Unset arguments come
    from `snapshot.num-retained.min/max`, `snapshot.time-retained` and `snapshot.expire.limit` (as Paimon 1.x's
    procedure). Files a retained snapshot, a tag, a changelog or another branch uses are kept. A table whose
    options ask Paimon's expiry for more than paimon_ds does is refused before anything is deleted."""
    check_supported(table.options, EXPIRE, table.path)  # before the options are read
    retention = Retention.from_options(table.options, retain_min, retain_max, time_retained_ms, max_deletes)
    return snapshot_expiry.expire(table, retention, now_ms)


def create_tag(table: FileStore, name: str, snapshot_id: int | None = None,
               time_retained_ns: int | None = None) -> Snapshot:
    """Tag a snapshot (the latest by default): `tag/tag-<name>` holds a copy of it, as in Paimon, with the table's
    `tag.default-time-retained` or ``time_retained_ns`` (its creation time and retention, after which a commit
    deletes it). A table whose options ask Paimon's tag creation for more (callbacks, success files) is refused
    before anything is written."""
    return write_tag(table, name, _snapshot_to_tag(table, snapshot_id), time_retained_ns)


def replace_tag(table: FileStore, name: str, snapshot_id: int | None = None,
                time_retained_ns: int | None = None) -> Snapshot:
    """Point an existing tag at a snapshot (the latest by default) with a new retention, as Paimon 1.x's
    TagManager.replaceTag: the tag file is rewritten (files only the old snapshot kept stay until
    remove_orphan_files, as in Paimon)."""
    if name not in table.snapshot_manager.tag_names():
        raise SnapshotNotFound(f"Tag '{name}' doesn't exist.")
    return write_tag(table, name, _snapshot_to_tag(table, snapshot_id), time_retained_ns, replace=True)


def _snapshot_to_tag(table: FileStore, snapshot_id: int | None) -> Snapshot:
    sm = table.snapshot_manager
    snapshot = sm.snapshot(snapshot_id) if snapshot_id is not None else sm.latest()
    if snapshot is None:
        raise SnapshotNotFound(f"{table.path} has no snapshot to tag")
    return snapshot


def write_tag(table: FileStore, name: str, snapshot: Snapshot, time_retained_ns: int | None = None,
              replace: bool = False) -> Snapshot:
    """Write tag ``name`` for ``snapshot`` (which may have expired: a tag keeps a copy), with ``time_retained_ns``
    or the table's `tag.default-time-retained`; a new tag must not exist, a replaced one is overwritten."""
    check_supported(table.options, TAG, table.path)
    if not name or "/" in name:
        raise ValueError(f"tag name {name!r} is not valid")
    sm = table.snapshot_manager
    retained = table.options.get("tag.default-time-retained") if time_retained_ns is None else time_retained_ns
    content = tag_json(snapshot, retained).encode()
    if replace:
        table.io.write_bytes(sm.tag_path(name), content)
        return snapshot
    table.io.mkdirs(sm.tag_dir)
    if not table.io.try_create(sm.tag_path(name), content):
        raise ValueError(f"tag {name!r} already exists in {table.path}")
    return snapshot


def delete_tag(table: FileStore, name: str) -> list[str]:
    """Remove a tag, and the files only it still referenced (its snapshot expired since); returns them. The tag file
    is the step that counts: the files are read before it goes, and a failure to delete them afterwards is logged
    (they are orphans then, for remove_orphan_files), not raised."""
    sm = table.snapshot_manager
    tagged = sm.tag(name)  # raises SnapshotNotFound naming the tag
    branch_tables(table)  # every branch readable, or nothing is deleted
    drop = References(table)
    drop.add_snapshot(tagged)
    table.io.delete(sm.tag_path(name))
    return _delete_unreferenced_quietly(table, drop, f"deleting tag {name!r}")


def _delete_unreferenced_quietly(table: FileStore, drop: References, what: str) -> list[str]:
    """_delete_unreferenced after the step that counts has happened: a failure leaves orphans and is logged."""
    try:
        return _delete_unreferenced(table, drop)
    except Exception as e:  # noqa: BLE001 - the operation happened; its leftovers are orphans
        log.warning("%s of %s: the files nothing references any more were not all deleted (%s); "
                    "remove_orphan_files deletes them", what, table.path, e)
        return []


def _write_hint(table: FileStore, directory: str, name: str, value: int) -> None:
    try:
        table.io.write_bytes(f"{directory}/{name}", str(value).encode())
    except OSError as e:  # a hint: readers check it and list when it is stale
        log.warning("%s: the %s hint of %s was not written (%s)", table.path, name, directory, e)


def rollback(table: FileStore, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
    """Make a snapshot (or a tag's snapshot) the latest again: newer snapshots and the files only they
    used are deleted. A tag whose snapshot has expired is restored from the tag's copy.

    Everything is read first. Then the newer snapshot files go oldest first, so that the table shows its latest
    snapshot until the very last one goes, and then the target: a rollback that stops half-way leaves the table
    as it was (run it again to finish), never a snapshot in between."""
    sm = table.snapshot_manager
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback needs exactly one of a snapshot id or a tag name")
    target = sm.tag(tag) if tag is not None else sm.snapshot(snapshot_id)  # raises naming what is missing
    branch_tables(table)  # every branch readable, or nothing is deleted
    ids = sm.list_ids()
    newer = [i for i in ids if i > target.id]
    drop = References(table)
    for sid in newer:
        snapshot = sm.snapshot(sid)
        drop.add_snapshot(snapshot)
        drop.add_delta_files(snapshot)
    # changelogs newer than the target go too (Paimon's RollbackHelper), with the files only they kept
    changelogs = [i for i in sm.changelog_ids() if i > target.id]
    for cid in changelogs:
        drop.add_snapshot(sm.changelog(cid))
    if target.id not in ids:  # the tag outlived its snapshot: restored first, below the others (not yet listed)
        table.io.write_bytes(sm.path(target.id), target.to_json().encode())
    for sid in newer:  # oldest first: the latest goes last, and with it the table turns to the target
        table.io.delete(sm.path(sid))
    for cid in reversed(changelogs):
        table.io.delete(sm.changelog_path(cid))
    if changelogs:
        remaining = [i for i in sm.changelog_ids() if i <= target.id]
        _write_hint(table, sm.changelog_dir, "LATEST", remaining[-1] if remaining else -1)
    if target.id not in ids:
        _write_hint(table, sm.dir, "EARLIEST", target.id)
    _write_hint(table, sm.dir, "LATEST", target.id)
    _delete_unreferenced_quietly(table, drop, "rollback")
    return target


# Directories orphan removal never touches: metadata with its own lifecycle. Index files (in `index/` or
# beside the data) are removed like data files when no index manifest of a snapshot or tag lists them.
_KEEP_DIRS = ("schema", "snapshot", "tag", "branch", "consumer", "changelog")
DEFAULT_ORPHAN_MARGIN_MS = 86_400_000  # Paimon's remove_orphan_files default: older than 1 day
# A temporary file a write killed mid-way leaves, in any directory (snapshot/, schema/, tag/, manifest/, ...):
# `<name>.<uuid>.tmp` (FileIO.try_create's, e.g. `snapshot-3.<uuid>.tmp`), or hidden `.<name>.<uuid>.tmp`
# (FileIO.write_bytes's, and Java Paimon's Path.createTempPath, whose uuid has dashes).
_TEMP_FILE = re.compile(r"\.(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.tmp$")


def remove_orphan_files(table: FileStore, older_than_ms: int = DEFAULT_ORPHAN_MARGIN_MS,
                        now_ms: int | None = None, dry_run: bool = False) -> list[str]:
    """Delete data and manifest files no snapshot or tag references and older than the margin (files
    of writes still in flight are unreferenced too, until they commit: keep the margin above the
    longest write), and the temporary files (`snapshot-3.<uuid>.tmp`, `.schema-1.<uuid>.tmp`...) writes killed
    mid-way left in any directory, and the files of native writes' staging directories (`_paimon_ds-staging-*`,
    left by a driver that died), older than the margin too. Returns the table-relative paths deleted (or that
    would be, with ``dry_run``)."""
    if older_than_ms < 0:
        raise ValueError(f"older_than_ms must be >= 0, got {older_than_ms}")
    used = still_referenced(table)
    referenced = used.data | {f"manifest/{m}" for m in used.manifests}
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    root = table.root.rstrip("/")
    found = []
    for path, info in table.io.find(root).items():
        rel = path[len(root):].lstrip("/")
        parts = rel.split("/")
        if any(_TEMP_FILE.search(p) for p in parts):  # never referenced (a temporary file, or a file in a
            # temporary directory: a branch being created or deleted); young: its write may still be running
            if _mtime_ms(table, path, info) <= now_ms - older_than_ms:
                found.append(rel)
            continue
        if parts[0].startswith(STAGING_PREFIX) and len(parts) > 1:
            # a native write's staging directory its job did not clean up (the driver died): every file in it,
            # once old (a write still running keeps its files young)
            if _mtime_ms(table, path, info) <= now_ms - older_than_ms:
                found.append(rel)
            continue
        if parts[0] in _KEEP_DIRS or any(p.startswith((".", "_")) for p in parts) or rel in referenced:
            continue
        if _mtime_ms(table, path, info) > now_ms - older_than_ms:
            continue  # young: may belong to a write that has not committed yet
        found.append(rel)
    found += _external_orphans(table, used, now_ms - older_than_ms)
    stale_dirs = _temporary_branch_dirs(table, now_ms - older_than_ms)
    if not dry_run:
        for rel in stale_dirs:
            table.io.delete_tree(f"{root}/{rel}")
        for rel in found:
            table.io.delete_quietly(rel if is_uri(rel) else f"{root}/{rel}")
        _remove_empty_staging_dirs(table, {rel.split("/")[0] for rel in found if rel.startswith(STAGING_PREFIX)})
        _remove_temporary_dirs(table, found)
        _remove_empty_data_dirs(table, [rel for rel in found if not is_uri(rel) and "/" in rel
                                        and not rel.startswith(STAGING_PREFIX) and rel.split("/")[0] != "manifest"])
    return sorted(found + [f"{rel}/" for rel in stale_dirs if not any(f.startswith(f"{rel}/") for f in found)])


def _temporary_branch_dirs(table: FileStore, before_ms: int) -> list[str]:
    """The hidden directories a branch's creation or deletion killed half-way left under `branch/`
    (`.branch-<name>.<uuid>.tmp`), older than ``before_ms``: table-relative."""
    out = []
    for info in table.io.list_details(f"{table.root.rstrip('/')}/{BRANCH_DIR}"):
        name = str(info["name"]).rstrip("/").rsplit("/", 1)[-1]
        if info.get("type") == "directory" and _TEMP_FILE.search(name) and _mtime_ms(
                table, info["name"], info) <= before_ms:
            out.append(f"{BRANCH_DIR}/{name}")
    return out


def _remove_temporary_dirs(table: FileStore, removed: list[str]) -> None:
    """The temporary directories whose files went (a branch whose creation or deletion was killed), deepest
    first, where now empty."""
    root = table.root.rstrip("/")
    dirs = set()
    for rel in removed:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if _TEMP_FILE.search(parts[depth - 1]):
                dirs.update("/".join(parts[:d]) for d in range(depth, len(parts)))
                break
    for d in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        table.io.delete_empty_dir(f"{root}/{d}")


def _remove_empty_data_dirs(table: FileStore, removed: list[str]) -> None:
    """The bucket and partition directories the removed files leave empty, deepest first, as Paimon's orphan
    clean deletes them (`pt=a/bucket-0`, then `pt=a`)."""
    root = table.root.rstrip("/")
    dirs = {"/".join(rel.split("/")[:depth]) for rel in removed for depth in range(1, rel.count("/") + 1)}
    for d in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
        table.io.delete_empty_dir(f"{root}/{d}")


def _remove_empty_staging_dirs(table: FileStore, names: set[str]) -> None:
    """The staging directories whose files went, and their subdirectories, where now empty (deepest first)."""
    root = table.root.rstrip("/")
    for name in names:
        top = f"{root}/{name}"
        try:
            dirs = [p for p, info in table.io.find(top, withdirs=True).items()
                    if info.get("type") == "directory"]
        except (FileNotFoundError, OSError):
            continue
        for d in sorted(dirs, key=len, reverse=True):
            table.io.delete_empty_dir(d)
        table.io.delete_empty_dir(top)


def _external_orphans(table: FileStore, used: References, before_ms: int) -> list[str]:
    """Unreferenced files older than ``before_ms`` in the bucket directories (`k=v/.../bucket-N/`) of every
    root of `data-file.external-paths`, as Paimon's orphan clean lists them; by full location. Only the
    table's layout is looked at: a root may hold other tables' files or anything else beside them."""
    roots = table.options.get("data-file.external-paths") or []
    if not roots:
        return []
    depth = len(table.table_schema.partition_keys)
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


def _mtime_ms(table: FileStore, path: str, info: dict, fs: Any = None) -> int:
    value = info.get("mtime", info.get("LastModified"))
    if value is None:
        value = (fs or table.io.fs).modified(path)
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)
