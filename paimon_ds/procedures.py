"""Paimon's procedures as Python functions (no Spark): each takes a table path (or a Table).

They are what `CALL sys.<name>(...)` runs through paimon_ds.sql, with Paimon's argument names, and
what the `paimon-ds` command runs; compaction in Spark tasks is paimon_ds.compact.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from .consumer import ConsumerManager
from .operation import maintenance
from .snapshot import Snapshot, to_millis
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
               storage_options: dict[str, Any] | None = None) -> Snapshot:
    """Tag a snapshot (the latest by default); returns the tagged snapshot."""
    return maintenance.create_tag(_table(table, storage_options), tag, snapshot)


def delete_tag(table: TableRef, tag: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """Delete a tag and the files only it kept; returns those files."""
    return maintenance.delete_tag(_table(table, storage_options), tag)


def rollback(table: TableRef, version: int | str, storage_options: dict[str, Any] | None = None) -> Snapshot:
    """Make a snapshot (an id) or a tag (a name) the latest again; newer snapshots are removed."""
    t = _table(table, storage_options)
    if isinstance(version, int) or (isinstance(version, str) and version.strip().isdigit()):
        return maintenance.rollback(t, snapshot_id=int(version))
    return maintenance.rollback(t, tag=version)


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
