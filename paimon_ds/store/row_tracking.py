"""Row tracking and data evolution (Paimon 1.x `row-tracking.enabled`, `data-evolution.enabled`).

A row-tracking append table gives every row a table-wide id, `_ROW_ID`, and a version, `_SEQUENCE_NUMBER`:
- the commit assigns each new file (an APPEND file with no `_FIRST_ROW_ID` and no physical `_ROW_ID`
  column) the next free ids, `_FIRST_ROW_ID` = the snapshot's `nextRowId`, and the new snapshot records
  the ids taken; a new file's sequence numbers become the snapshot id (Paimon's RowTrackingCommitUtils);
- a row's `_ROW_ID` is the file's physical `_ROW_ID` column where it has one (compacted files keep their
  rows' ids there), else `_FIRST_ROW_ID` + the row's position in its file; its `_SEQUENCE_NUMBER` is the
  physical column where not null, else the file's max sequence number (Paimon's DataFileRecordReader);
- with data evolution, files covering the same row-id range hold different columns of the same rows
  (`_WRITE_COLS` names the columns of a partial file): each column comes from the newest file (by max
  sequence number) that holds it (see operation/evolution.py).

This module holds what the commit and the table checks need; reading is in operation/evolution.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from ..manifest.meta import FileKind, FileSource, ManifestEntry
from ..options.registry import OptionError, Options
from ..schema.manager import TableSchema

if TYPE_CHECKING:
    from .file_store import FileStore

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
SYSTEM_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)
# Paimon's SpecialFields ids: a file's physical row-tracking columns carry them
ROW_ID_FIELD_ID = 2147483642
SEQUENCE_NUMBER_FIELD_ID = 2147483646
# The read option that adds both columns, as Paimon's `$row_tracking` system table shows them.
COLUMNS_OPTION = "paimon_ds.row-tracking-columns"


def row_tracking_enabled(options: Options) -> bool:
    return bool(options.get("row-tracking.enabled"))


def data_evolution_enabled(options: Options) -> bool:
    return bool(options.get("data-evolution.enabled"))


def system_fields() -> list[pa.Field]:
    """`_ROW_ID` and `_SEQUENCE_NUMBER` as read columns (nullable: a file Paimon wrote without row ids reads null)."""
    return [pa.field(ROW_ID, pa.int64()), pa.field(SEQUENCE_NUMBER, pa.int64())]


def columns_requested(options: Options) -> bool:
    return bool(options.get(COLUMNS_OPTION))


def with_row_tracking_columns(table: FileStore, schema: pa.Schema) -> pa.Schema:
    """A read schema with `_ROW_ID` and `_SEQUENCE_NUMBER` appended when the read asks for them
    (`paimon_ds.row-tracking-columns`); refused on a table without row tracking."""
    if not columns_requested(table.options):
        return schema
    if not row_tracking_enabled(table.options):
        raise OptionError(f"{COLUMNS_OPTION}=true reads {list(SYSTEM_COLUMNS)}, but table {table.path} does not "
                          "track rows (row-tracking.enabled is not true)")
    return pa.schema([*schema, *system_fields()])


def check_table(schema: TableSchema, options: Options) -> None:
    """Refuse, as Paimon's SchemaValidation does, a row-tracking or data-evolution table it would refuse
    (``options``: the table's, with the job's overlaid)."""
    tracking = row_tracking_enabled(options)
    if data_evolution_enabled(options) and not tracking:
        raise OptionError("data-evolution.enabled needs row-tracking.enabled = true (as Paimon requires)")
    if not tracking:
        return
    if schema.primary_keys:
        raise OptionError("row-tracking.enabled is for append tables: a table with a primary key cannot track rows "
                          "(Paimon refuses it)")
    bucket = options.get("bucket")
    if bucket != -1:
        raise OptionError(f"row-tracking.enabled needs bucket = -1 (an unaware-bucket append table), not "
                          f"bucket = {bucket} (Paimon refuses it)")
    clash = [n for n in schema.field_names if n in SYSTEM_COLUMNS]
    if clash:
        raise OptionError(f"column(s) {clash} clash with the row-tracking system columns {list(SYSTEM_COLUMNS)}")


def refuse_row_level_change(table: FileStore, what: str) -> None:
    """Row-level changes rewrite files copy-on-write, which would give the rewritten rows new row ids."""
    if row_tracking_enabled(table.options):
        raise OptionError(f"{what} on a row-tracking table (row-tracking.enabled) is not supported by this version "
                          f"of paimon_ds: rewriting files would change the ids of the rows kept; nothing was changed")


def _holds_row_ids(entry: ManifestEntry) -> bool:
    cols = entry.file.write_cols
    return cols is not None and ROW_ID in cols


def assign_row_tracking(entries: Sequence[ManifestEntry], snapshot_id: int, next_row_id: int,
                        group_by_partition: bool = True) -> tuple[list[ManifestEntry], int]:
    """The commit's part (Paimon's RowTrackingCommitUtils.assignRowTracking): new files' sequence numbers
    become the snapshot id, then every new APPEND file without row ids takes the next ``row_count`` ids
    from ``next_row_id``. Returns the entries and the snapshot's new `nextRowId`.

    ``group_by_partition`` (`row-tracking.partition-group-on-commit`): files of one partition take
    consecutive ids. Called per commit attempt: a retry re-reads the latest snapshot's `nextRowId`, so
    two commits never hand out the same ids."""
    out = []
    for e in entries:
        f = e.file
        if e.kind == FileKind.ADD and f.min_sequence_number == 0:
            f = dataclasses.replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
        elif e.kind == FileKind.ADD and f.max_sequence_number == 0:
            f = dataclasses.replace(f, max_sequence_number=snapshot_id)
        out.append(dataclasses.replace(e, file=f) if f is not e.file else e)
    if group_by_partition:
        order: dict[bytes, list[ManifestEntry]] = {}
        for e in out:
            order.setdefault(e.partition, []).append(e)
        out = [e for group in order.values() for e in group]
    assigned = []
    for e in out:
        f = e.file
        if (e.kind == FileKind.ADD and f.file_source == FileSource.APPEND and f.first_row_id is None
                and not _holds_row_ids(e)):
            e = dataclasses.replace(e, file=dataclasses.replace(f, first_row_id=next_row_id))
            next_row_id += f.row_count
        assigned.append(e)
    return assigned, next_row_id
