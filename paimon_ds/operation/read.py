"""Reading splits: parquet files -> Arrow batches in the table's current schema.

Columns are matched to a file's own schema by field id, so renamed columns read correctly and
columns added after the file was written read as nulls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ..casts.column import cast_column
from ..deletionvectors.index_file import read_vector
from ..deletionvectors.maintainer import drop_positions
from ..errors import PaimonDsError
from ..format.data_file import open_data_file
from ..format.partition import POSTPONE_BUCKET
from ..manifest.meta import DataFileMeta
from ..mergetree.changelog import NewestRecord, lookup_merge
from ..mergetree.compact import sorted_runs
from ..mergetree.engine import FirstRow, MergeEngine
from ..mergetree.files import read_kv_file
from ..mergetree.kv import KIND
from ..mergetree.merge import has_float_keys, in_key_order, merge_engine, merge_sorted_runs
from ..options.registry import OptionError
from ..predicate.predicates import Predicate, rename_fields
from ..schema.types import conform_array
from ..store.file_store import fallback_column_names
from ..store.row_tracking import SYSTEM_COLUMNS, columns_requested, row_tracking_enabled, system_fields
from .evolution import RowTrackingRead, needs_tracking_read
from .incremental import changed_rows, changed_rows_keep_delete
from .scan import Split, missing_file

if TYPE_CHECKING:
    from ..store.file_store import FileStore

BATCH_ROWS = 65536
# Row kind names by Paimon's byte value (+I 0, -U 1, +U 2, -D 3), as `$audit_log` shows them. A tuple, made an
# Arrow array where used: pa.array of a list looks for pandas, which importing the package must not load.
KIND_NAMES = ("+I", "-U", "+U", "-D")


class TableRead:
    def __init__(self, table: FileStore, read_schema: pa.Schema | None = None,
                 predicate: Predicate | None = None, row_kind_column: str | None = None,
                 file_column: str | None = None, position_column: str | None = None) -> None:
        """``row_kind_column``: also give each row's kind (+I, -U, +U, -D) in a leading string column of
        this name, as Paimon's `$audit_log` table does (streaming reads of changes use it).
        ``file_column``: append tables only: a trailing string column naming each row's data file, which
        row-level DELETE / UPDATE / MERGE use to rewrite only the files they touch.
        ``position_column`` (with ``file_column``): then each row's position in its file, for deletion vectors;
        the predicate then only prunes files (the caller filters the rows)."""
        self.table = table
        self.position_column = position_column if file_column is not None else None
        self.file_column = file_column
        if file_column is not None and table.table_schema.primary_keys:
            raise ValueError("a file column is given for append tables only (a primary-key row merges files)")
        full = table.arrow_schema()
        tracking = row_tracking_enabled(table.options)
        if read_schema is None:
            # row-tracking tables: `paimon_ds.row-tracking-columns` adds _ROW_ID, _SEQUENCE_NUMBER ($row_tracking)
            read_schema = pa.schema([*full, *system_fields()]) if tracking and columns_requested(table.options) \
                else full
        self.row_kind_column = row_kind_column
        for extra in (row_kind_column, file_column, self.position_column):
            if extra is not None and extra in read_schema.names:
                read_schema = read_schema.remove(read_schema.get_field_index(extra))
        with_system = read_schema
        system = [n for n in read_schema.names if n in SYSTEM_COLUMNS] if tracking else []
        if system:
            read_schema = pa.schema([f for f in read_schema if f.name not in SYSTEM_COLUMNS])
        self.data_schema = read_schema  # the table's columns that are read
        self.output_schema = with_system.insert(0, pa.field(row_kind_column, pa.string(), nullable=False)) \
            if row_kind_column is not None else with_system
        self.kinds_schema = self.output_schema  # without the file column
        if file_column is not None:
            self.output_schema = self.output_schema.append(pa.field(file_column, pa.string(), nullable=False))
        if self.position_column is not None:
            self.output_schema = self.output_schema.append(pa.field(self.position_column, pa.int64(), nullable=False))
        self.predicate = predicate
        self.fields = [table.table_schema.field(name) for name in read_schema.names]
        # row ids, sequence numbers, data-evolution merges (operation/evolution.py)
        self.tracking = None
        if needs_tracking_read(table, system, predicate):
            if file_column is not None:
                raise ValueError(f"row-level jobs do not read row-tracking table {table.path} this way")
            self.tracking = RowTrackingRead(table, self.fields, self.output_schema, predicate, row_kind_column)

    def read(self, split: Split, delta: bool = False, changelog: bool = False) -> Iterator[pa.RecordBatch]:
        """The rows of a split: the merged table contents, or (``delta``) the changes one commit made,
        or (``changelog``) the records of changelog files, each in its row kind. A file of the split that is gone
        raises SnapshotExpired when its snapshot expired while it was read (the files went with it), else
        MissingFileError (a damaged table)."""
        try:
            yield from self._read(split, delta, changelog)
        except FileNotFoundError as e:
            if isinstance(e, PaimonDsError):
                raise
            raise missing_file(self.table, split.snapshot_id, split.branch, e) from e

    def _read(self, split: Split, delta: bool, changelog: bool) -> Iterator[pa.RecordBatch]:
        if split.branch is not None and split.branch != self.table.branch:
            yield from self._read_fallback(split, delta, changelog)
            return
        if split.before_files is not None and self.table.table_schema.primary_keys:
            yield from self._read_diff(split)
            return
        if self.tracking is not None:
            yield from self.tracking.read(split, delta)
            return
        if self.table.table_schema.primary_keys:
            # a postpone bucket's records are read as written, never merged (MergeFileSplitRead.createNoMergeReader)
            yield from self._read_kv(split, keep_retracts=(delta or changelog) and self.row_kind_column is not None,
                                     merge=not changelog and split.bucket != POSTPONE_BUCKET)
            return
        for f in split.files:
            if self.position_column is not None:
                yield from self._read_positions(split, f)
                continue
            yield from self._read_append_file(split, f)

    def _read_fallback(self, split: Split, delta: bool, changelog: bool) -> Iterator[pa.RecordBatch]:
        """A fallback split's rows, read with the fallback branch's store, in this read's output schema."""
        other = self.table.fallback_store()
        if other is None or other.branch != split.branch:
            raise ValueError(f"a split of branch {split.branch!r} cannot be read through branch "
                             f"{self.table.branch!r} of {self.table.path}")
        names = fallback_column_names(self.table, other)
        schema = pa.schema([f.with_name(names.get(f.name, f.name)) for f in self.data_schema])
        other_read = TableRead(other, schema, rename_fields(self.predicate, names), self.row_kind_column,
                               self.file_column, self.position_column)
        target = self.output_schema
        for batch in other_read.read(split, delta, changelog):
            arrays = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, target)]
            yield pa.RecordBatch.from_arrays(arrays, schema=target)

    def _read_diff(self, split: Split) -> Iterator[pa.RecordBatch]:
        """An incremental diff split of a primary-key bucket: the keys whose merged value the files only the end
        snapshot holds give anew, against the files only the start holds (IncrementalDiffSplitRead; whole rows
        are compared, then projected). With a row-kind column (audit_log) deletions are kept, as its DiffMerger
        with keepDelete: a key the end deletes or no longer holds is a -D row."""
        if self.file_column is not None or self.tracking is not None:
            raise OptionError(f"an incremental read between tags (or scan mode diff) of {self.table.path} gives "
                              "merged rows only: no file or row-tracking columns")
        keep_delete = self.row_kind_column is not None
        whole = TableRead(self.table, row_kind_column=self.row_kind_column)

        def merged(files: list[DataFileMeta]) -> pa.Table:
            part = dataclasses.replace(split, files=files, before_files=None)
            return pa.Table.from_batches(list(whole.read(part, delta=keep_delete)), schema=whole.output_schema)

        keys = self.table.table_schema.primary_keys
        before, after = merged(split.before_files or []), merged(split.files)
        rows = changed_rows_keep_delete(before, after, keys, self.row_kind_column) if keep_delete else \
            changed_rows(before, after, keys)
        yield from rows.select(self.output_schema.names).to_batches()

    def read_units(self, splits: Sequence[Split]) -> list[tuple[int, Callable[[], Iterator[pa.RecordBatch]]]]:
        """The independent reads that ``read(split)`` of each split makes, in order, for a reader that runs
        them in parallel (io/prefetch.py): an append split's data files one by one, any other split whole (a
        primary-key bucket merges its files); each with its row count by metadata."""
        units: list[tuple[int, Callable[[], Iterator[pa.RecordBatch]]]] = []
        for split in splits:
            if (self.tracking is None and not self.table.table_schema.primary_keys and self.position_column is None
                    and (split.branch is None or split.branch == self.table.branch)):
                units += [(f.row_count, partial(self._read_append_file, split, f)) for f in split.files]
            else:
                units.append((split.row_count, partial(self.read, split)))
        return units

    def _read_append_file(self, split: Split, f: DataFileMeta) -> Iterator[pa.RecordBatch]:
        for batch in self._read_file(split.file_path(f), f.schema_id, f.file_size,
                                     deleted=_deleted_positions(self.table, split, f.file_name)):
            batch = self._with_kinds(batch, None)
            if self.file_column is not None:
                batch = pa.RecordBatch.from_arrays(
                    [*batch.columns, pa.array([f.file_name] * batch.num_rows, pa.string())],
                    schema=self.output_schema)
            yield batch

    def _read_positions(self, split: Split, f) -> Iterator[pa.RecordBatch]:
        """A file's live rows with its name and each row's position in it (before its deletion vector and
        any filter; the predicate is not applied here, as positions must count every row)."""
        plain = TableRead(self.table, self.data_schema)
        deleted = _deleted_positions(self.table, split, f.file_name)
        start = 0
        for batch in plain._read_file(split.file_path(f), f.schema_id, f.file_size):
            positions = np.arange(start, start + batch.num_rows, dtype=np.int64)
            start += batch.num_rows
            if deleted is not None and len(deleted):
                keep = ~np.isin(positions, deleted)
                batch, positions = batch.filter(pa.array(keep)), positions[keep]
            if batch.num_rows == 0:
                continue
            batch = self._with_kinds(batch, None)
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array([f.file_name] * batch.num_rows, pa.string()), pa.array(positions)],
                schema=self.output_schema)

    def _read_kv(self, split: Split, keep_retracts: bool, merge: bool) -> Iterator[pa.RecordBatch]:
        """Merge-on-read of a primary-key bucket: k-way merge of its sorted runs with the merge engine
        (``merge`` False: every record of the files in order, as changelog files are read)."""

        engine = merge_engine(self.table.table_schema, self.table.options)

        float_keys = has_float_keys(engine.layout)

        def run_reader(files) -> Iterator[pa.Table]:
            for f in files:
                chunks = _drop_deleted(
                    read_kv_file(self.table.store, split.file_path(f), f.schema_id, BATCH_ROWS, f.file_size),
                    _deleted_positions(self.table, split, f.file_name))
                yield from in_key_order(chunks, engine) if float_keys and merge else chunks

        def finish(t: pa.Table) -> pa.Table:
            return t if keep_retracts else engine.drop_retracts(t)

        if not merge:
            merged = (finish(t) for t in run_reader(split.files))
        else:
            if merge_free(split, engine):  # only retractions to drop
                readers = [run_reader(split.files)]
            else:
                runs = sorted_runs(split.files, [f.type for f in engine.layout.key_fields])
                readers = [run_reader(r.files) for r in runs if r.level == 0]
                high = [run_reader(r.files) for r in runs if r.level > 0]
                if len(high) > 1 and lookup_merge(self.table.options, isinstance(engine, FirstRow)):
                    # a key's newest record above level 0 holds its whole value (LookupMergeFunction)
                    high = [merge_sorted_runs(high, NewestRecord(engine.layout), drop_retract=False)]
                readers += high
            if len(readers) == 1:
                merged = (finish(t) for t in readers[0])
            else:
                merged = merge_sorted_runs(readers, engine, drop_retract=not keep_retracts)
        names = self.data_schema.names
        expression = self.predicate.expression() if self.predicate is not None else None
        for kv in merged:
            if expression is not None:
                kv = kv.filter(expression)
            if kv.num_rows == 0:
                continue
            if self.row_kind_column is None:  # the hot path: no kinds to line up with the batches
                for batch in kv.select(names).to_batches():
                    yield batch if batch.schema == self.data_schema else self._cast(batch)
                continue
            kv = kv.combine_chunks()
            kinds = kv.column(KIND)
            offset = 0
            for batch in kv.select(names).to_batches():
                batch = batch if batch.schema == self.data_schema else self._cast(batch)
                yield self._with_kinds(batch, kinds.slice(offset, batch.num_rows))
                offset += batch.num_rows

    def _with_kinds(self, batch: pa.RecordBatch, kinds: pa.ChunkedArray | None) -> pa.RecordBatch:
        """Prepend the row-kind column when asked for (``kinds`` None: every row is an insert)."""
        if self.row_kind_column is None:
            return batch
        if kinds is None:
            codes = pa.array(np.zeros(batch.num_rows, dtype=np.int8))
        else:
            codes = kinds.combine_chunks() if isinstance(kinds, pa.ChunkedArray) else kinds
        names = pa.array(KIND_NAMES, pa.string()).take(codes)
        return pa.RecordBatch.from_arrays([names, *batch.columns], schema=self.kinds_schema)

    def _cast(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = [conform_array(c, f.type) for c, f in zip(batch.columns, self.data_schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.data_schema)

    def _read_file(self, path: str, schema_id: int, size: int | None = None,
                   deleted: np.ndarray | None = None) -> Iterator[pa.RecordBatch]:
        """``deleted``: the file's deleted row positions (its deletion vector), dropped before filtering."""
        file_schema = self.table.schema_by_id(schema_id)
        file_names = {f.id: f.name for f in file_schema.fields}
        file_types = {f.id: f.type for f in file_schema.fields}  # a column's type when the file was written
        wanted = [(f, file_names.get(f.id)) for f in self.fields]
        target = self.data_schema
        with self.table.io.open_input(path, size) as fh:
            # parquet, orc or avro, by the file name's extension
            pf = open_data_file(fh, path, {f.name: f.type for f in file_schema.fields})
            present = set(pf.names)
            predicate_fields = self.predicate.fields() if self.predicate is not None else set()
            # the predicate runs on the file's own columns when they still have their names; else on the
            # conformed batch (renamed columns by id, added ones null), with its extra columns dropped after
            in_file = bool(predicate_fields) and all(
                n in present and file_names.get(self.table.table_schema.field(n).id) == n
                and _same_type(file_types.get(self.table.table_schema.field(n).id),
                               self.table.table_schema.field(n).type)
                for n in predicate_fields)
            after = bool(predicate_fields) and not in_file
            if after:
                extra_fields = [self.table.table_schema.field(n) for n in sorted(predicate_fields)
                                if n not in target.names]
                wanted = wanted + [(f, file_names.get(f.id)) for f in extra_fields]
                full = self.table.arrow_schema()
                target = pa.schema([*target, *(full.field(f.name) for f in extra_fields)])
            columns = [name for _, name in wanted if name is not None and name in present]
            extra = [n for n in (predicate_fields if in_file else ()) if n not in columns]
            for batch in _drop_deleted(pf.iter_batches(columns + extra, BATCH_ROWS), deleted):
                if in_file:
                    batch = self._filter(batch)
                    if batch is None:
                        continue
                batch = self._conform(batch, wanted, target, file_types)
                if after:
                    batch = self._filter(batch)
                    if batch is None:
                        continue
                    batch = batch.select(self.data_schema.names)
                yield batch

    def _filter(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        kept = pa.Table.from_batches([batch]).filter(self.predicate.expression())
        return kept.combine_chunks().to_batches()[0] if kept.num_rows else None

    def _conform(self, batch: pa.RecordBatch, wanted, target: pa.Schema,
                 file_types: dict | None = None) -> pa.RecordBatch:
        arrays = []
        names = batch.schema.names
        for (table_field, file_name), field in zip(wanted, target):
            if file_name is not None and file_name in names:
                col = batch.column(names.index(file_name))
                # a column whose type was altered since the file was written: Paimon's cast on read
                src = (file_types or {}).get(table_field.id)
                arrays.append(cast_column(col, src, table_field.type, field.type)
                              if src is not None and not _same_type(src, table_field.type)
                              else conform_array(col, field.type))
            else:
                arrays.append(pa.nulls(batch.num_rows, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=target)


def merge_free(split: Split, engine: MergeEngine) -> bool:
    """Whether a primary-key split's files hold each key once, so reading them needs no merge: a single sorted
    run, or Paimon's raw-convertible split (MergeTreeSplitGenerator): files above level 0 with their deletion
    vectors, or a first-row table's files above level 0 (lookup compaction keeps a key in one run)."""
    if ((split.deletion_files is not None or isinstance(engine, FirstRow))
            and all(f.level > 0 and f.delete_row_count == 0 for f in split.files)):
        return True
    return len(sorted_runs(split.files)) == 1


def _same_type(a, b) -> bool:
    """Whether a file's column type and the table's are the same type (nullability aside)."""
    return a is not None and b is not None and a.copy(True) == b.copy(True)


def _deleted_positions(table: FileStore, split: Split, file_name: str) -> np.ndarray | None:
    """The deleted row positions of a data file of ``split`` (None: it has no deletion vector)."""
    dv = split.deletion_files.get(file_name) if split.deletion_files else None
    if dv is None:
        return None
    return read_vector(table.io, dv)


def _drop_deleted(batches, deleted: np.ndarray | None):
    """Drop the rows at ``deleted`` positions (a file's deletion vector) of a file's consecutive batches."""
    return drop_positions(batches, deleted)

