"""Paimon's procedures as Python functions (no Spark): each takes a table path (or a Table).

They are what `CALL sys.<name>(...)` runs through paimon_ds.sql, with Paimon's argument names, and
what the `paimon-ds` command runs; compaction in Spark tasks is paimon_ds.compact.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from types import SimpleNamespace
from typing import Any

from .format.partition import parse_partition_specs, partition_filter, partition_path
from .operation import maintenance
from .operation.auto_tag import expire_tags_by_time, remove_tag
from .operation.partition_expire import expire_partitions as expire_partitions_now
from .operation.partition_expire import partition_entries
from .options.registry import parse_duration
from .snapshot.manager import BATCH_COMMIT_IDENTIFIER, Snapshot, SnapshotNotFound, tag_retention, to_millis
from .store.consumer import ConsumerManager
from .table import Table

TableRef = str | Table


def _table(table: TableRef, storage_options: dict[str, Any] | None = None, branch: str | None = None) -> Table:
    """``table`` as a Table: a path is opened on ``branch`` (main by default)."""
    if isinstance(table, Table):
        return table
    return Table.load(table, {"branch": branch} if branch else None, storage_options)


def expire_snapshots(table: TableRef, retain_max: int | None = None, retain_min: int | None = None,
                     older_than: dt.datetime | str | int | None = None, max_deletes: int | None = None,
                     storage_options: dict[str, Any] | None = None) -> maintenance.ExpireResult:
    """Expire snapshots beyond `retain_max`, or older than `older_than` beyond `retain_min`, at most `max_deletes`;
    defaults from the table's `snapshot.num-retained.min/max`, `snapshot.time-retained` and
    `snapshot.expire.limit` (Paimon 1.x's procedure). The same expiry runs after every commit. Files a retained
    snapshot, a tag, a changelog or another branch uses are kept."""
    t = _table(table, storage_options)
    now = int(time.time() * 1000)
    retained = None if older_than is None else max(0, now - to_millis(older_than))
    return maintenance.expire_snapshots(t, retain_min, retain_max, retained, now, max_deletes)


def create_tag(table: TableRef, tag: str, snapshot: int | None = None,
               storage_options: dict[str, Any] | None = None, time_retained: str | None = None) -> Snapshot:
    """Tag a snapshot (the latest by default); ``time_retained`` (a duration such as `5 d`) makes the tag expire
    (default: the table's `tag.default-time-retained`). Returns the tagged snapshot."""
    retained = None if time_retained in (None, "") else parse_duration(str(time_retained))
    return maintenance.create_tag(_table(table, storage_options), tag, snapshot, retained)


def replace_tag(table: TableRef, tag: str, snapshot: int | None = None,
                storage_options: dict[str, Any] | None = None, time_retained: str | None = None) -> Snapshot:
    """Point an existing tag at a snapshot (the latest by default), with ``time_retained`` (a duration such as
    `1 h`; default: the table's `tag.default-time-retained`), as Paimon 1.x's replace_tag. Returns the snapshot."""
    retained = None if time_retained in (None, "") else parse_duration(str(time_retained))
    return maintenance.replace_tag(_table(table, storage_options), tag, snapshot, retained)


def delete_tag(table: TableRef, tag: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """Delete a tag and the files only it kept; returns those files. A tag that does not exist is no error (Paimon's
    TagManager.deleteTag only logs it)."""
    t = _table(table, storage_options)
    if tag not in t.snapshot_manager.tag_names():
        return []
    return maintenance.delete_tag(t, tag)


def rollback(table: TableRef, version: int | str | None = None, storage_options: dict[str, Any] | None = None,
             *, tag: str | None = None) -> Snapshot:
    """Make a snapshot (an id) or a tag (a name) the latest again; newer snapshots are removed. ``version`` is a
    snapshot id when it is all digits, else a tag name (Paimon's `version`); ``tag`` is always a tag name (a tag
    may be named `20250122`)."""
    t = _table(table, storage_options)
    if tag is not None:
        return maintenance.rollback(t, tag=tag)
    if version is None:
        raise ValueError("rollback needs a version (a snapshot id or a tag name) or a tag")
    if isinstance(version, int) or (isinstance(version, str) and version.strip().isdigit()):
        return maintenance.rollback(t, snapshot_id=int(version))
    return maintenance.rollback(t, tag=version)


def rollback_to_timestamp(table: TableRef, timestamp: dt.datetime | str | int,
                          storage_options: dict[str, Any] | None = None) -> Snapshot:
    """Roll back to the latest snapshot committed at or before ``timestamp`` (epoch millis, a datetime or
    `yyyy-MM-dd HH:mm:ss`), as Paimon 1.x's rollback_to_timestamp; returns that snapshot."""
    t = _table(table, storage_options)
    return maintenance.rollback(t, snapshot_id=t.snapshot_manager.at_or_before(to_millis(timestamp)).id)


def create_tag_from_timestamp(table: TableRef, tag: str, timestamp: dt.datetime | str | int,
                              time_retained: str | None = None,
                              storage_options: dict[str, Any] | None = None) -> Snapshot:
    """Tag the first snapshot committed at or after ``timestamp``, or an earlier-committed tag's snapshot that is
    (a tag whose snapshot expired), as Paimon's create_tag_from_timestamp; ``time_retained`` (a duration such as
    `1 d`) makes the tag expire. Returns the tagged snapshot."""
    t = _table(table, storage_options)
    sm = t.snapshot_manager
    millis = to_millis(timestamp)
    found = None
    for sid in sm.list_ids():  # laterOrEqualTimeMills
        s = sm.snapshot(sid)
        if s.time_millis >= millis:
            found = s
            break
    tagged = sorted((sm.tag(n) for n in sm.tag_names()), key=lambda s: s.id)
    for s in tagged:  # Paimon looks at the first tag (by snapshot id) at or after the time only
        if millis <= s.time_millis:
            if found is None or s.time_millis < found.time_millis:
                found = s
            break
    if found is None:
        raise SnapshotNotFound(f"no snapshot of {t.path} was committed at or after {millis}")
    return _create_tag(t, tag, found, time_retained)


def _create_tag(t: Table, tag: str, snapshot: Snapshot, time_retained: str | None) -> Snapshot:
    retained = None if time_retained is None else parse_duration(time_retained)
    return maintenance.write_tag(t, tag, snapshot, retained)


def rename_tag(table: TableRef, tag: str, target_tag: str, storage_options: dict[str, Any] | None = None) -> None:
    """Rename a tag (its file, content unchanged), as Paimon 1.x's rename_tag."""
    t = _table(table, storage_options)
    sm = t.snapshot_manager
    content = t.io.read_bytes(sm.tag_path(tag)) if tag in sm.tag_names() else None
    if content is None:
        raise SnapshotNotFound(f"tag {tag!r} does not exist in {t.path}")
    if not target_tag or "/" in target_tag:
        raise ValueError(f"tag name {target_tag!r} is not valid")
    if t.io.is_local:  # at once: one name or the other, never both nor neither
        try:
            t.io.rename(sm.tag_path(tag), sm.tag_path(target_tag))
        except FileExistsError:
            raise ValueError(f"tag {target_tag!r} already exists in {t.path}") from None
        return
    # an object store copies: stopped half-way, both names hold the tag (delete the old one)
    if not t.io.try_create(sm.tag_path(target_tag), content):
        raise ValueError(f"tag {target_tag!r} already exists in {t.path}")
    t.io.delete(sm.tag_path(tag))


def expire_tags(table: TableRef, older_than: dt.datetime | str | int | None = None,
                storage_options: dict[str, Any] | None = None) -> list[str]:
    """Delete the tags whose retention time has passed and, with ``older_than``, those created before it (a tag
    without a creation time: its file's modification time), as Paimon 1.x's expire_tags (TagTimeExpire);
    returns their names."""
    t = _table(table, storage_options)
    expired = expire_tags_by_time(t)
    if older_than is None:
        return expired
    before = dt.datetime.fromtimestamp(to_millis(older_than) / 1000)
    sm = t.snapshot_manager
    for name in sm.tag_names():
        try:
            created, _ = tag_retention(sm.tag(name))
        except SnapshotNotFound:
            continue
        if created is None:
            created = t.io.modified(sm.tag_path(name)).astimezone().replace(tzinfo=None)
        if created < before:
            remove_tag(t, name)
            expired.append(name)
    return expired


# ------------------------------------------------------------------ partitions
def truncate(table: TableRef, storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """TRUNCATE TABLE: one OVERWRITE snapshot that removes every file, as Paimon's truncateTable (None if the
    table has no snapshot: nothing to remove)."""
    t = _table(table, storage_options)
    if t.snapshot_manager.latest() is None:
        return None
    return t.new_commit().overwrite([])


def drop_partitions(table: TableRef, partitions: str | list[dict[str, Any]],
                    storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """ALTER TABLE ... DROP PARTITION: one OVERWRITE snapshot that removes the files of the partitions
    (`dt=x,hr=1;dt=y` or dicts; a prefix of the keys names every partition under it), as Paimon's
    dropPartitions. None if the table has no snapshot."""
    t = _table(table, storage_options)
    selected = partition_filter(t, partitions)
    if selected is None:
        raise ValueError("drop_partitions needs at least one partition")
    if t.snapshot_manager.latest() is None:
        return None
    return t.new_commit().overwrite([], partitions=selected)


def partitions(table: TableRef, storage_options: dict[str, Any] | None = None) -> list[bytes]:
    """The partitions (serialized rows) that hold files in the latest snapshot."""
    return list(partition_entries(_table(table, storage_options)))


def expire_partitions(table: TableRef, expiration_time: str | None, timestamp_formatter: str | None = None,
                      timestamp_pattern: str | None = None, expire_strategy: str | None = None,
                      max_expires: int | None = None,
                      storage_options: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """Drop the partitions older than ``expiration_time`` (a duration, `1 d`; None: the table's
    `partition.expiration-time`) now, as Paimon's expire_partitions:
    the table's partition expiration (operation.partition_expire) with these settings, in one OVERWRITE snapshot
    by commit user ''. Returns the expired partitions ({key: value as Paimon prints it})."""
    t = _table(table, storage_options)
    # the procedure expires now, also on a write-only table (whose commits never expire partitions), as Paimon's
    overrides = {"partition.expiration-time": expiration_time, "partition.expiration-check-interval": "0",
                 "write-only": "false",
                 "partition.timestamp-formatter": timestamp_formatter, "partition.timestamp-pattern": timestamp_pattern,
                 "partition.expiration-strategy": expire_strategy,
                 "partition.expiration-max-num": None if max_expires is None else str(max_expires)}
    opts = {**t.dynamic_options, **{k: v for k, v in overrides.items() if v is not None}}
    job = t.reload(opts)
    if not job.partition_keys:
        raise ValueError(f"table {t.path} is not partitioned: it has no partitions to expire")
    commit = SimpleNamespace(commit_user="", commit_identifier=BATCH_COMMIT_IDENTIFIER)
    return expire_partitions_now(job, commit) or []  # type: ignore[arg-type]


def compact_manifest(table: TableRef, storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """Merge the latest snapshot's manifests into as few as `manifest.target-file-size` allows, dropping files
    added then deleted, in one COMPACT snapshot, as Paimon 1.x's compact_manifest; None when there was nothing to
    merge."""
    return _table(table, storage_options).new_commit().compact_manifests()


SUCCESS_FILE = "_SUCCESS"


def mark_partition_done(table: TableRef, partitions: str | list[dict[str, Any]],
                        storage_options: dict[str, Any] | None = None) -> list[str]:
    """Mark partitions done (`dt=x;dt=y`, full specs) with Paimon's success-file action: `<partition>/_SUCCESS`
    holding {"creationTime", "modificationTime"} (epoch millis; an existing file keeps its creation time).
    Other `partition.mark-done-action`s are refused. Returns the success files written."""
    t = _table(table, storage_options)
    actions = [a.strip() for a in (t.options.raw.get("partition.mark-done-action") or "success-file").split(",")]
    if any(a != "success-file" for a in actions):
        raise ValueError(f"partition.mark-done-action {actions}: paimon_ds runs only the success-file action")
    specs = parse_partition_specs(partitions) if isinstance(partitions, str) else list(partitions)
    keys = t.partition_keys
    for spec in specs:
        if sorted(spec) != sorted(keys):
            raise ValueError(f"partition {spec} must give every partition key {keys}")
    default_name = t.options.get("partition.default-name")
    written = []
    for spec in specs:
        path = f"{t.root}/{partition_path(keys, [spec[k] for k in keys], default_name)}/{SUCCESS_FILE}"
        now = int(time.time() * 1000)
        created = now
        if t.io.exists(path):
            created = json.loads(t.io.read_text(path)).get("creationTime", now)
        t.io.write_bytes(path, json.dumps({"creationTime": created, "modificationTime": now}).encode())
        written.append(path)
    return written


def purge_files(table: TableRef, storage_options: dict[str, Any] | None = None) -> None:
    """Empty the table, as Paimon 1.4's purgeFiles: drop its branches, tags and consumers, truncate it (one
    OVERWRITE snapshot without files), delete its changelogs, expire every snapshot but that latest one and delete
    the files nothing references any more. The table stays, with its schema and one empty snapshot."""
    t = _table(table, storage_options)
    branches = t.branch_manager()
    for branch in branches.branches():
        branches.drop(branch)
    for tag in t.snapshot_manager.tag_names():
        maintenance.delete_tag(t, tag)
    ConsumerManager.of(t.store).clear(None, None)
    truncate(t)
    if t.io.exists(t.snapshot_manager.changelog_dir):
        t.io.fs.rm(t.snapshot_manager.changelog_dir, recursive=True)
    now = int(time.time() * 1000)
    maintenance.expire_snapshots(t, 1, 1, 0, now, 2**31 - 1)
    maintenance.remove_orphan_files(t, 0, now, False)


def remove_orphan_files(table: TableRef, older_than: dt.datetime | str | int | None = None, dry_run: bool = False,
                        storage_options: dict[str, Any] | None = None) -> list[str]:
    """Delete files no snapshot, tag or metadata references, last modified before `older_than` (default:
    one day ago, so files of writes in progress are safe); returns them (only lists them if dry_run)."""
    t = _table(table, storage_options)
    now = int(time.time() * 1000)
    margin = maintenance.DEFAULT_ORPHAN_MARGIN_MS if older_than is None else max(0, now - to_millis(older_than))
    return maintenance.remove_orphan_files(t, margin, now, dry_run)


# ------------------------------------------------------------------ branches (Paimon 1.x)
def create_branch(table: TableRef, branch: str, tag: str | None = None, ignore_if_exists: bool = False,
                  storage_options: dict[str, Any] | None = None) -> bool:
    """Create a branch, as Paimon's create_branch: from ``tag`` (the branch starts at the tagged snapshot), or
    without one an empty branch with the table's current schema and no snapshot. A Table opened on a branch
    creates from that branch's tag. Returns False if it existed and ``ignore_if_exists``."""
    return _table(table, storage_options).branch_manager().create(branch, tag, ignore_if_exists)


def delete_branch(table: TableRef, branch: str, storage_options: dict[str, Any] | None = None) -> None:
    """Delete a branch (or several, comma-separated, as Paimon's procedure takes them): its schemas, snapshots
    and tags. Data files only it wrote become orphans (remove_orphan_files deletes them)."""
    names = [b.strip() for b in str(branch).split(",")] if branch else [branch]
    manager = _table(table, storage_options).branch_manager()
    for name in names:  # all checked first: a bad name deletes none of them
        manager.check_drop(name)
    for name in names:
        manager.drop(name)


def rename_branch(table: TableRef, from_branch: str, to_branch: str,
                  storage_options: dict[str, Any] | None = None) -> None:
    """Rename a branch."""
    _table(table, storage_options).branch_manager().rename(from_branch, to_branch)


def fast_forward(table: TableRef, branch: str, storage_options: dict[str, Any] | None = None) -> None:
    """Fast-forward the table's branch (main, or the branch a Table was opened on) to ``branch``: its snapshots,
    schemas and tags from the branch's earliest snapshot on are replaced by the branch's."""
    _table(table, storage_options).branch_manager().fast_forward(branch)


def list_branches(table: TableRef, storage_options: dict[str, Any] | None = None) -> list[str]:
    """The table's branches other than main, sorted."""
    return _table(table, storage_options).branch_manager().branches()


# ------------------------------------------------------------------ consumers
def list_consumers(table: TableRef, storage_options: dict[str, Any] | None = None) -> dict[str, int]:
    """Each consumer's next snapshot (what `$consumers` shows), by consumer id."""
    return ConsumerManager.of(_table(table, storage_options).store).consumers()


def reset_consumer(table: TableRef, consumer_id: str, next_snapshot: int | None = None,
                   storage_options: dict[str, Any] | None = None) -> None:
    """Set a consumer's next snapshot (a streaming read with this `consumer-id` starts there, and expiry keeps it
    and later snapshots), or delete the consumer when ``next_snapshot`` is None, as Paimon's reset_consumer. Like
    Paimon 1.x, a snapshot that does not exist is refused. Stop the streaming query that uses the consumer first:
    it would record its own progress again."""
    t = _table(table, storage_options)
    consumers = ConsumerManager.of(t.store)
    if next_snapshot is None:
        consumers.delete(consumer_id)
        return
    t.snapshot_manager.snapshot(int(next_snapshot))  # raises SnapshotNotFound naming it
    consumers.reset(consumer_id, int(next_snapshot))


def clear_consumers(table: TableRef, including: str | None = None, excluding: str | None = None,
                    storage_options: dict[str, Any] | None = None) -> list[str]:
    """Delete the consumers whose id matches the regular expression ``including`` (the whole id; unset: all) and
    not ``excluding``, as Paimon 1.x's clear_consumers; returns their ids."""
    return ConsumerManager.of(_table(table, storage_options).store).clear(including, excluding)
