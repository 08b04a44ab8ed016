"""Reading row-tracking and data-evolution tables (Paimon 1.x): row ids, sequence numbers, merged columns.

- Row-id groups: with data evolution, the files of a bucket whose row-id ranges
  (`_FIRST_ROW_ID` .. + row count - 1) overlap are one group; they must all span the same range (Paimon's
  DataEvolutionSplitRead.mergeRangesAndSort) and hold different columns of the same rows. Each column comes
  from the newest file (highest max sequence number) holding it, `_ROW_ID` and `_SEQUENCE_NUMBER` from the
  newest file of all. A group's deletion vector is its anchor's, the oldest file's (Paimon's
  retrieveAnchorFile): the files of a group have the same rows at the same positions.
- System columns: `_ROW_ID` is a file's physical `_ROW_ID` where not null (compacted files keep ids there),
  else `_FIRST_ROW_ID` + the row's position in its file (before deletion vectors); `_SEQUENCE_NUMBER` the
  physical column where not null, else the file's max sequence number (Paimon's ColumnarRowIterator).
- Filters run on merged rows: a file's own stats or columns cannot decide for a row whose newer version
  of a column sits in another file. The scan prunes whole groups (group_stats).

Columns are matched to files by field id (a file's schema, restricted to its `_WRITE_COLS`), so renamed
and added columns read as in plain tables; every file is read per batch, in lock step with the other
files of its group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..casts.column import cast_column
from ..deletionvectors.index_file import read_vector
from ..deletionvectors.maintainer import drop_positions
from ..errors import EXIT_BAD_INPUT, PaimonDsError
from ..format.data_file import FORMATS, open_data_file
from ..manifest.meta import DataFileMeta
from ..predicate.predicates import Predicate
from ..schema.manager import TableSchema
from ..schema.types import DataField, conform_array, to_arrow_type
from ..store.row_tracking import (
    ROW_ID,
    SEQUENCE_NUMBER,
    SYSTEM_COLUMNS,
    data_evolution_enabled,
    row_tracking_enabled,
)

if TYPE_CHECKING:
    from ..store.file_store import FileStore
    from .split import Split

BATCH_ROWS = 65536
_KINDS_INSERT = "+I"


class DataEvolutionError(PaimonDsError, ValueError):
    """Files of a data-evolution table that do not line up as Paimon requires."""

    exit_code = EXIT_BAD_INPUT


# ------------------------------------------------------------------------------------------- planning
def row_range(f: DataFileMeta) -> tuple[int, int]:
    """The first and last row id of a file (it must have `_FIRST_ROW_ID`)."""
    assert f.first_row_id is not None
    return f.first_row_id, f.first_row_id + f.row_count - 1


def row_id_groups(files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
    """Files of one bucket grouped by overlapping row-id ranges, in row-id order; each group newest first.
    A file without `_FIRST_ROW_ID` (none of Paimon's writers leave one in such a table) is a group alone."""
    ranged = sorted((f for f in files if f.first_row_id is not None),
                    key=lambda f: (f.first_row_id, -f.max_sequence_number))
    groups: list[list[DataFileMeta]] = []
    end = -1
    for f in ranged:
        lo, hi = row_range(f)
        if groups and lo <= end:
            groups[-1].append(f)
            end = max(end, hi)
        else:
            groups.append([f])
            end = hi
    for g in groups:
        g.sort(key=lambda f: -f.max_sequence_number)  # stable: ties keep the row-id order above
        if len({row_range(f) for f in g}) > 1:
            raise DataEvolutionError(
                "data-evolution files of one row-id range must all span the same ids (Paimon requires it): "
                + ", ".join(f"{f.file_name} {list(row_range(f))}" for f in g))
    return groups + [[f] for f in files if f.first_row_id is None]


def pack_groups(groups: Sequence[list[DataFileMeta]], target: int, open_cost: int) -> list[list[DataFileMeta]]:
    """Consecutive groups packed into splits of about ``target`` bytes; a group is never cut."""
    packs: list[list[DataFileMeta]] = []
    current: list[DataFileMeta] = []
    weight = 0
    for g in groups:
        w = max(sum(f.file_size for f in g), open_cost)
        if current and weight + w > target:
            packs.append(current)
            current, weight = [], 0
        current += g
        weight += w
    if current:
        packs.append(current)
    return packs


def file_fields(schema: TableSchema, f: DataFileMeta) -> list[DataField]:
    """The table columns a file holds: its schema's, or those of its `_WRITE_COLS` (a partial file)."""
    if f.write_cols is None:
        return list(schema.fields)
    by_name = {x.name: x for x in schema.fields}
    return [by_name[c] for c in f.write_cols if c in by_name]


StatsLookup = Callable[[str], tuple[Any, Any, "int | None", int]]


def group_stats(group: Sequence[DataFileMeta], current: TableSchema, file_schema: Callable[[int], TableSchema],
                file_stats: Callable[[DataFileMeta], StatsLookup]) -> StatsLookup:
    """Stats of a row-id group for a predicate: each column's from the newest file holding it (the values
    the merged rows show); `_ROW_ID` from the group's range."""
    rows = group[0].row_count

    def lookup(name: str) -> tuple[Any, Any, int | None, int]:
        if name == ROW_ID and group[0].first_row_id is not None:
            lo, hi = row_range(group[0])
            return lo, hi, 0, rows
        if name in SYSTEM_COLUMNS or name not in current.field_names:
            return None, None, None, rows
        field_id = current.field(name).id
        for f in group:
            if any(x.id == field_id for x in file_fields(file_schema(f.schema_id), f)):
                return file_stats(f)(name)
        return None, None, None, rows
    return lookup


# ------------------------------------------------------------------------------------------- reading
def needs_tracking_read(table: FileStore, system_columns: Sequence[str], predicate: Predicate | None) -> bool:
    """Whether a read of ``table`` goes through RowTrackingRead (else plain files are read as they are)."""
    if not row_tracking_enabled(table.options):
        return False
    return (data_evolution_enabled(table.options) or bool(system_columns)
            or (predicate is not None and bool(predicate.fields() & set(SYSTEM_COLUMNS))))


class RowTrackingRead:
    """Reads the splits of a row-tracking table: merges data-evolution groups, adds system columns, filters.

    ``data_fields``: the table columns to return; ``output``: the batches' schema (the data columns, the
    system columns asked for and, if ``row_kind_column``, a leading kind column, all by name)."""

    def __init__(self, table: FileStore, data_fields: Sequence[DataField], output: pa.Schema,
                 predicate: Predicate | None = None, row_kind_column: str | None = None) -> None:
        self.table = table
        self.output = output
        self.predicate = predicate
        self.row_kind_column = row_kind_column
        self.data_evolution = data_evolution_enabled(table.options)
        pred_fields = predicate.fields() if predicate is not None else set()
        names = {f.name for f in data_fields}
        # the predicate's columns are read too, and dropped after filtering
        self.fields = list(data_fields) + [table.table_schema.field(n) for n in table.table_schema.field_names
                                           if n in pred_fields and n not in names]
        self.system = [c for c in SYSTEM_COLUMNS if c in output.names or c in pred_fields]
        self.arrow_types = {f.name: to_arrow_type(f.type) for f in self.fields}

    def read(self, split: Split, delta: bool = False) -> Iterator[pa.RecordBatch]:
        odd = [f.file_name for f in split.files if f.file_name.rsplit(".", 1)[-1].lower() not in FORMATS]
        if odd:  # Paimon 1.x's BLOB and vector-store files of data-evolution tables
            raise DataEvolutionError(f"data files {odd[:3]} of {self.table.path} are in a format this version of "
                                     "paimon_ds cannot read (BLOB or vector-store files?)")
        if self.data_evolution:
            if delta and any(_partial(self.table.table_schema, f) for f in split.files):
                raise DataEvolutionError(
                    f"a commit to data-evolution table {self.table.path} wrote some columns of existing rows "
                    "(partial-column files); streaming reads of such commits are not supported by this version of "
                    "paimon_ds (read the table in batch instead)")
            groups = row_id_groups(split.files)
        else:
            groups = [[f] for f in split.files]
        expression = self.predicate.expression() if self.predicate is not None else None
        for group in groups:
            for chunk in drop_positions(self._group_chunks(split, group), self._deleted(split, group)):
                if expression is not None:
                    chunk = chunk.filter(expression)
                if chunk.num_rows:
                    yield self._finish(chunk)

    # -------------------------------------------------------------------------------------- internals
    def _deleted(self, split: Split, group: list[DataFileMeta]) -> np.ndarray | None:
        """The group's deleted positions: its anchor's deletion vector (the oldest file's)."""
        if not split.deletion_files:
            return None
        anchor = min(group, key=lambda f: (f.max_sequence_number, f.file_name))
        dv = split.deletion_files.get(anchor.file_name)
        return None if dv is None else read_vector(self.table.io, dv)

    def _group_chunks(self, split: Split, group: list[DataFileMeta]) -> Iterator[pa.Table]:
        """The group's rows, every column merged and the system columns computed, before deletes and filters."""
        if len({f.row_count for f in group}) > 1:
            raise DataEvolutionError("data-evolution files of one row-id range must hold the same number of rows: "
                                     + ", ".join(f"{f.file_name} ({f.row_count} rows)" for f in group))
        newest = group[0]
        # each column from the newest file holding it; the newest file also gives the system columns
        assigned: dict[str, list[DataField]] = {f.file_name: [] for f in group}
        missing: list[DataField] = []
        held = {f.file_name: {x.id for x in file_fields(self.table.schema_by_id(f.schema_id), f)} for f in group}
        for field in self.fields:
            owner = next((f for f in group if field.id in held[f.file_name]), None)
            if owner is None:
                missing.append(field)
            else:
                assigned[owner.file_name].append(field)
        sources = [f for f in group if f is newest or assigned[f.file_name]]
        readers = [self._read_file(split, f, assigned[f.file_name], with_system=f is newest) for f in sources]
        position = 0
        for parts in _aligned(readers):
            n = parts[0].num_rows
            columns: dict[str, pa.Array] = {}
            for part in parts:
                for name in part.column_names:
                    columns[name] = part.column(name)
            for field in missing:
                columns[field.name] = pa.nulls(n, self.arrow_types[field.name])
            if ROW_ID in self.system:
                columns[ROW_ID] = _row_ids(columns.get("\0" + ROW_ID), newest.first_row_id, position, n)
            if SEQUENCE_NUMBER in self.system:
                physical = columns.get("\0" + SEQUENCE_NUMBER)
                fill = pa.scalar(newest.max_sequence_number, pa.int64())
                columns[SEQUENCE_NUMBER] = (pa.array(np.full(n, newest.max_sequence_number, dtype=np.int64))
                                            if physical is None else pc.fill_null(physical, fill))
            position += n
            names = [f.name for f in self.fields] + self.system
            yield pa.Table.from_arrays([columns[c] for c in names], names=names)

    def _read_file(self, split: Split, f: DataFileMeta, fields: list[DataField],
                   with_system: bool) -> Iterator[pa.RecordBatch]:
        """A file's ``fields`` in the table's types (by field id), and with ``with_system`` its physical system
        columns (named with a leading NUL, so that they never meet a table column)."""
        schema = self.table.schema_by_id(f.schema_id)
        by_id = {x.id: x for x in file_fields(schema, f)}
        path = split.file_path(f)
        with self.table.io.open_input(path, f.file_size) as fh:
            pf = open_data_file(fh, path)
            present = set(pf.names)
            wanted = [(field, by_id[field.id]) for field in fields
                      if field.id in by_id and by_id[field.id].name in present]
            system = [c for c in self.system if with_system and c in present]
            columns = [src.name for _, src in wanted] + system
            for batch in pf.iter_batches(columns, BATCH_ROWS):
                arrays, names = [], []
                for i, (field, src) in enumerate(wanted):
                    arrays.append(cast_column(batch.column(i), src.type, field.type, self.arrow_types[field.name]))
                    names.append(field.name)
                for j, c in enumerate(system):
                    arrays.append(batch.column(len(wanted) + j).cast(pa.int64()))
                    names.append("\0" + c)
                for field in fields:  # a column the file's schema knows but the file lacks reads null
                    if field.name not in names:
                        arrays.append(pa.nulls(batch.num_rows, self.arrow_types[field.name]))
                        names.append(field.name)
                yield pa.RecordBatch.from_arrays(arrays, names=names) if arrays else batch

    def _finish(self, chunk: pa.Table) -> pa.RecordBatch:
        arrays = []
        for field in self.output:
            if field.name == self.row_kind_column:
                arrays.append(pa.repeat(pa.scalar(_KINDS_INSERT, pa.string()), chunk.num_rows))
                continue
            # the read's Arrow form of the column (Spark's microseconds for TIMESTAMP(7..9)): floored as Paimon's
            # Timestamp.toMicros, never Arrow's cast, which refuses the lost nanoseconds
            arrays.append(conform_array(chunk.column(field.name).combine_chunks(), field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.output)


def _partial(schema: TableSchema, f: DataFileMeta) -> bool:
    """A file holding only some of the table's columns of its rows (a data-evolution update)."""
    return f.write_cols is not None and not set(schema.field_names) <= set(f.write_cols)


def _row_ids(physical: pa.Array | None, first_row_id: int | None, start: int, n: int) -> pa.Array:
    """Row ids of ``n`` rows at positions ``start``.. of a file: the physical ones where not null, else
    first row id + position (null without a first row id)."""
    if first_row_id is None:
        return physical if physical is not None else pa.nulls(n, pa.int64())
    computed = pa.array(np.arange(first_row_id + start, first_row_id + start + n, dtype=np.int64))
    return computed if physical is None else pc.coalesce(physical, computed)


def _aligned(readers: list[Iterator[pa.RecordBatch]]) -> Iterator[list[pa.RecordBatch]]:
    """Batches of readers of the same rows (files of one row-id group), cut to equal lengths."""
    current: list[pa.RecordBatch | None] = [None] * len(readers)
    offset = [0] * len(readers)
    while True:
        for i, r in enumerate(readers):
            while current[i] is None or offset[i] >= current[i].num_rows:
                current[i] = next(r, None)
                offset[i] = 0
                if current[i] is None:
                    break
        done = [c is None for c in current]
        if all(done):
            return
        if any(done):
            raise DataEvolutionError("files of one data-evolution row-id range ended at different rows")
        n = min(c.num_rows - o for c, o in zip(current, offset))  # type: ignore[union-attr]
        yield [c.slice(o, n) for c, o in zip(current, offset)]  # type: ignore[union-attr]
        offset = [o + n for o in offset]
