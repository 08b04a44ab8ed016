"""Batch reads through `scan.fallback-branch` (Paimon's FallbackReadFileStoreTable).

A partition the table's own branch has (any live file, judged by the partition filter alone) is read from it,
whole; a partition only the fallback branch has is read from the fallback branch, with that branch's own schema,
primary key, buckets and merge engine. Streaming reads, writes and the package's own jobs (compaction, DELETE /
UPDATE / MERGE) see the table's own branch only, as in Paimon.

The fallback branch must have the same column types in the same order (nullability aside, as Paimon checks).
Its columns are matched by field id, as Paimon 1.x reads them (a column renamed on one branch keeps its id), else
by position; Java Paimon 0.9 matched by name. Time travel reaches the fallback branch as Paimon sends it: a
snapshot id of the table becomes the fallback's latest snapshot at or before that snapshot's commit time (nothing
from the fallback if it has none then; Paimon would read the fallback's snapshot 1), a timestamp is used as it
is, and a tag name must name a tag of the fallback branch too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from ..branch import BranchNotFound
from ..options import OptionError, Options
from ..predicate import rename_fields
from ..snapshot import SnapshotNotFound
from ..types import SchemaError

if TYPE_CHECKING:
    from ..table import Table
    from .read import TableRead
    from .scan import Split, TableScan

FALLBACK_OPTION = "scan.fallback-branch"
# Paimon master's reverse fallback (scan.primary-branch), in no release yet: refused rather than read wrongly.
PRIMARY_OPTION = "scan.primary-branch"


def load_fallback(table: Table) -> Table | None:
    """The fallback branch of ``table`` as its batch reads see it, or None without `scan.fallback-branch`."""
    opts = table.options
    if (opts.get(PRIMARY_OPTION) or "").strip():
        raise OptionError(f"{PRIMARY_OPTION} is not supported by this version of paimon_ds (it would read "
                          f"{table.path} wrongly); use {FALLBACK_OPTION}")
    name = opts.get(FALLBACK_OPTION)
    if name is None or not name.strip() or name == table.branch:
        return None
    manager = table.branch_manager()
    if not manager.exists(name):
        raise BranchNotFound(f"{FALLBACK_OPTION}={name!r} of {table.path}: branch {name!r} does not exist "
                             f"(branches: {', '.join(['main', *manager.branches()])})")
    options = {k: v for k, v in table.dynamic_options.items() if k not in ("bucket", "scan.snapshot-id")}
    options["branch"] = name
    options[FALLBACK_OPTION] = ""  # the fallback branch's own fallback is not followed
    snapshot_id = Options(table.dynamic_options).get("scan.snapshot-id")
    if snapshot_id is not None:
        # snapshot ids differ between branches: go through the snapshot's commit time
        snapshot = table.snapshot_manager.snapshot(snapshot_id)
        options["scan.timestamp-millis"] = str(snapshot.time_millis)
    tag = options.get("scan.tag-name")
    if tag is not None and tag not in manager.snapshots(name).tag_names():
        raise SnapshotNotFound(f"scan.tag-name={tag!r}: tag {tag!r} does not exist in branch {name!r}, the "
                               f"{FALLBACK_OPTION} of {table.path} (Paimon reads the fallback branch at the same tag)")
    other = table.reload(options)
    _check_same_row_type(table, other)
    return other


def _check_same_row_type(table: Table, other: Table) -> None:
    ours, theirs = table.table_schema.fields, other.table_schema.fields
    if len(ours) != len(theirs) or any(a.type.copy(True) != b.type.copy(True) for a, b in zip(ours, theirs)):
        def row(fields) -> str:
            return ", ".join(f"{f.name} {f.type.sql()}" for f in fields)
        raise SchemaError(
            f"branches {table.branch!r} and {other.branch!r} of {table.path} do not have the same row type, which "
            f"{FALLBACK_OPTION}={other.branch!r} needs (the same column types in the same order). "
            f"{table.branch}: {row(ours)}; {other.branch}: {row(theirs)}")


def column_names(table: Table, other: Table) -> dict[str, str]:
    """Each column of ``table`` -> the fallback branch's column read for it: the same field id, else position."""
    by_id = {f.id: f.name for f in other.table_schema.fields}
    return {f.name: by_id.get(f.id, o.name) for f, o in zip(table.table_schema.fields, other.table_schema.fields)}


def fallback_splits(scan: TableScan) -> list[Split]:
    """The fallback branch's splits of the partitions the scanned branch lacks (after ``scan`` planned)."""
    table = scan.table
    other = table.fallback_table()
    if other is None:
        return []
    try:
        if other.snapshot_to_read() is None:
            return []
    except SnapshotNotFound:
        if "scan.timestamp-millis" not in other.dynamic_options:
            raise
        return []  # the fallback branch had no snapshot yet at that time
    # the partitions this branch has, by the partition filter only (Paimon's partition listing scan)
    own = {e.partition for e in table.new_scan(scan.partition_predicate).read_entries(scan.snapshot)}
    names = column_names(table, other)
    splits = [s for s in other.new_scan(rename_fields(scan.predicate, names)).plan_snapshot(None)
              if s.partition not in own]
    for s in splits:
        s.branch = other.branch
    return splits


def read_fallback(read: TableRead, split: Split, delta: bool, changelog: bool) -> Iterator[pa.RecordBatch]:
    """A fallback split's rows, read with the fallback branch's table, in ``read``'s output schema."""
    other = read.table.fallback_table()
    if other is None or other.branch != split.branch:
        raise ValueError(f"a split of branch {split.branch!r} cannot be read through branch {read.table.branch!r} "
                         f"of {read.table.path}")
    names = column_names(read.table, other)
    schema = pa.schema([f.with_name(names.get(f.name, f.name)) for f in read.data_schema])
    other_read = other.new_read(schema, rename_fields(read.predicate, names), read.row_kind_column,
                                read.file_column, read.position_column)
    target = read.output_schema
    for batch in other_read.read(split, delta, changelog):
        arrays = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, target)]
        yield pa.RecordBatch.from_arrays(arrays, schema=target)
