"""Which of a scan's data files hold the table's rows as they are, for a plain columnar reader (Spark's own
parquet and ORC readers, in spark/native_read.py) to read without this package.

A file qualifies when reading it needs nothing but its columns by name, a filter on the row kind and, at most,
its deletion vector applied by row position:
  - the table's columns all have types such a reader gives exactly as the Python reader does (NATIVE_TYPES),
    and the table has no row tracking (row ids, data evolution) to compute;
  - the file is parquet or ORC (deletion vectors: parquet only, whose reader gives each row's position),
    written with the current fields (same ids, names and types: no rename, cast or added column to apply);
  - primary-key tables: its bucket's split needs no merge (operation/read.merge_free), so the file's rows
    minus retractions (-U/-D) are the table's; the split is read raw as a whole or not at all;
  - the split is of the table's own branch (a `scan.fallback-branch` split reads another branch's files).
Everything else stays with the Python reader (operation/read.py), which reads the rest of the same snapshot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..deletionvectors.index_file import DeletionFile
from ..format.data_file import format_of
from ..mergetree.merge import merge_engine
from ..schema.types import DataType, RowType
from ..store.row_tracking import row_tracking_enabled
from .read import merge_free
from .scan import Split

if TYPE_CHECKING:
    from ..manifest.meta import DataFileMeta
    from ..store.file_store import FileStore

# Paimon types whose parquet / ORC columns a columnar reader (Spark's) returns with the values the Python
# reader gives. Excluded: CHAR (padding), BINARY(n), TIME, TIMESTAMP(7..9) (INT96 / nanoseconds), nested types, VARIANT.
NATIVE_TYPES = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL",
                "VARCHAR", "VARBINARY", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ"}
RAW_FORMATS = {"parquet", "orc"}
VALUE_KIND = "_VALUE_KIND"  # a primary-key file's row kind column (+I 0, -U 1, +U 2, -D 3)


@dataclass(frozen=True)
class RawFile:
    """A data file a columnar reader may read: its location, format, deletion vector and whether its rows carry
    a row kind to filter on (primary-key files that may hold -U / -D rows)."""

    path: str
    file_name: str
    format: str
    deletion: DeletionFile | None
    keyed: bool


def native_type(t: DataType) -> bool:
    if isinstance(t, RowType) or t.root not in NATIVE_TYPES:
        return False
    return t.root not in ("TIMESTAMP", "TIMESTAMP_LTZ") or t.precision <= 6


def raw_readable_table(table: FileStore) -> str | None:
    """Why no file of ``table`` can be read raw (None: its files may be)."""
    if row_tracking_enabled(table.options):
        return "row tracking (row ids, data evolution) is computed by the Python reader"
    odd = [f"{f.name} {f.type.sql()}" for f in table.table_schema.fields if not native_type(f.type)]
    if odd:
        return f"column types the Python reader converts: {', '.join(odd)}"
    return None


def split_raw_files(table: FileStore, splits: list[Split], added_columns: bool = False
                    ) -> tuple[list[RawFile], list[Split]]:
    """The files of ``splits`` a columnar reader may read, and the splits (whole or in part) left for the
    Python reader. ``added_columns``: also files written before columns were added (or dropped), for a reader
    that gives a column the file lacks as nulls (a pyarrow Dataset): each current column the file has must
    have its name and type, and no column it lacks may share a name with one of its own (a dropped column)."""
    if raw_readable_table(table) is not None:
        return [], splits
    current = _field_signature(table.table_schema.fields)
    same_fields = {table.table_schema.id: True}
    keyed = bool(table.table_schema.primary_keys)
    engine = merge_engine(table.table_schema, table.options) if keyed else None

    def file_ok(split: Split, f: DataFileMeta) -> bool:
        if f.schema_id not in same_fields:
            old = table.schema_by_id(f.schema_id).fields
            same_fields[f.schema_id] = _readable_by_name(old, table.table_schema.fields) if added_columns \
                else _field_signature(old) == current
        fmt = format_of(f.file_name)
        deletion = split.deletion_files.get(f.file_name) if split.deletion_files else None
        return same_fields[f.schema_id] and fmt in RAW_FORMATS and (deletion is None or fmt == "parquet")

    raw: list[RawFile] = []
    rest: list[Split] = []
    for split in splits:
        if split.branch is not None and split.branch != table.branch:
            rest.append(split)
            continue
        if keyed:
            if merge_free(split, engine) and all(file_ok(split, f) for f in split.files):
                raw.extend(_raw(split, f, keyed) for f in split.files)
            else:
                rest.append(split)
            continue
        ok = [file_ok(split, f) for f in split.files]
        raw.extend(_raw(split, f, keyed) for f, good in zip(split.files, ok) if good)
        left = [f for f, good in zip(split.files, ok) if not good]
        if left:
            rest.append(Split(split.partition, split.bucket, split.directory, left, split.snapshot_id,
                              split.deletion_files, split.branch))
    return raw, rest


def _raw(split: Split, f: DataFileMeta, keyed: bool) -> RawFile:
    deletion = split.deletion_files.get(f.file_name) if split.deletion_files else None
    # a primary-key file's delete count (Paimon's _DELETE_ROW_COUNT: its -U and -D rows) of 0 says every row is an
    # insert or update: no row kind to read and filter on; an unknown count (None, older writers) may hold some
    retractions = keyed and (f.delete_row_count is None or f.delete_row_count > 0)
    return RawFile(split.file_path(f), f.file_name, format_of(f.file_name), deletion, retractions)


def _readable_by_name(file_fields, fields) -> bool:
    """Whether reading ``fields`` by name from a file written with ``file_fields`` gives each its values (or
    nulls where the file predates it): same id, name and type, or neither the id nor the name in the file."""
    by_id = {f.id: f for f in file_fields}
    names = {f.name for f in file_fields}
    for f in fields:
        old = by_id.get(f.id)
        if old is None:
            if f.name in names:
                return False
        elif old.name != f.name or _field_signature([old])[0][2] != _field_signature([f])[0][2]:
            return False
    return True


def _field_signature(fields) -> list[tuple[int, str, str]]:
    return [(f.id, f.name, json.dumps(f.type.copy(True).to_json())) for f in fields]
