"""Paimon's data system tables `$audit_log`, `$binlog` and `$ro`, as Arrow tables (Table.inspect.audit_log() /
.binlog() / .ro()).

- `$audit_log` (Paimon 0.9's AuditLogTable, batch read): the table's rows with a leading `rowkind` column
  (+I, -U, +U, -D), read with forceKeepDelete: each primary key's merged record in its own kind, so a key whose
  last record is a deletion shows as a -D row instead of vanishing. Append tables: every row, +I.
- `$binlog` (Paimon 1.0's BinlogTable, batch read): audit_log's rows with each column as an array of its value
  (`rowkind`, then ARRAY<type> per column, the element nullable); a batch read packs no -U/+U pairs, so every
  array holds one value.
- `$ro` (ReadOptimizedTable): the rows of the top level only (a primary-key table's fully compacted files,
  which need no merging); for deletion-vector and first-row tables every level above 0 (Paimon 0.9's batch scan
  puts its own level filter in place of the top-level one). Append tables: every row.

Both read the table's latest snapshot, or the version its options name (time travel, incremental-between).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from ..mergetree.compact import CompactionOptions
from .incremental import new_scan
from .read import TableRead
from .scan import TableScan, batch_skips_level0

if TYPE_CHECKING:
    from ..store.file_store import FileStore

ROW_KIND = "rowkind"  # AuditLogTable.ROW_KIND


def audit_log_schema(table: FileStore) -> pa.Schema:
    return TableRead(table, row_kind_column=ROW_KIND).output_schema.set(0, pa.field(ROW_KIND, pa.string()))


def read_optimized_schema(table: FileStore) -> pa.Schema:
    return TableRead(table).output_schema


def audit_log(table: FileStore) -> pa.Table:
    """Every row of the table with its row kind first (`rowkind`, a nullable string as Paimon declares it)."""
    table.check_readable()
    read = TableRead(table, row_kind_column=ROW_KIND)
    # delta=True: merged, retractions kept (forceKeepDelete)
    batches = [b for split in new_scan(table).plan() for b in read.read(split, delta=True)]
    schema = audit_log_schema(table)
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches],
                                 schema=schema)


def read_optimized(table: FileStore) -> pa.Table:
    """The rows of the table's compacted files only (primary-key tables: the top level)."""
    table.check_readable()
    if table.table_schema.primary_keys and not batch_skips_level0(table):
        top = CompactionOptions.from_options(table.options).num_levels - 1
        scan = TableScan(table, level_filter=lambda level: level == top)
    else:
        scan = TableScan(table)
    read = TableRead(table)
    return pa.Table.from_batches([b for split in scan.plan() for b in read.read(split)], schema=read.output_schema)


def binlog_schema(table: FileStore) -> pa.Schema:
    audit = audit_log_schema(table)
    return pa.schema([audit.field(0)] + [pa.field(f.name, pa.list_(f.with_nullable(True))) for f in audit][1:])


def binlog(table: FileStore) -> pa.Table:
    """`$binlog`: audit_log with every column's value wrapped in a one-element array."""
    audit = audit_log(table)
    schema = binlog_schema(table)
    offsets = pa.array(range(audit.num_rows + 1), pa.int32())
    columns = [audit.column(0).combine_chunks()] + [
        pa.ListArray.from_arrays(offsets, audit.column(i).combine_chunks(), type=schema.field(i).type)
        for i in range(1, audit.num_columns)]
    return pa.Table.from_arrays(columns, schema=schema)


def data_system_table_schema(table: FileStore, name: str) -> pa.Schema:
    """The columns of `$audit_log`, `$binlog` or `$ro` (``name``) of ``table``: the table's own, with audit_log's
    and binlog's rowkind first (binlog's columns as arrays)."""
    return {"audit_log": audit_log_schema, "binlog": binlog_schema, "ro": read_optimized_schema}[name](table)


def data_system_table(table: FileStore, name: str) -> pa.Table:
    """`$audit_log`, `$binlog` or `$ro` (``name``) of ``table``."""
    return {"audit_log": audit_log, "binlog": binlog, "ro": read_optimized}[name](table)
