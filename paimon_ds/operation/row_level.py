"""Row-level DELETE, UPDATE, upsert, MERGE and overwrite-by-filter without Spark (Table.delete / update / upsert /
merge / overwrite(filter=...)), with the semantics and commits of the Spark path (paimon_ds.spark.rowlevel):

- primary-key tables take the changes as rows of their kind (-D a delete, +U an update, +I an insert) written by
  the normal writer and merged by key, committed with the writer's guard on the buckets it read;
- append tables are rewritten copy-on-write: only the data files holding a changed row are rewritten, and the
  new files replace them in one OVERWRITE snapshot that fails (CommitConflict, nothing changed) if another commit
  removed one of them meanwhile; commits that only added files are kept;
- append tables with deletion vectors delete by position (operation/delete_rows.py), as Paimon's Spark DELETE.

Conditions are filters (a string in paimon_ds's filter language, a `paimon_ds.col` expression); values are a
literal, a column (`col("v")`, or a string naming one: `"s.v"`), or a pyarrow.compute.Expression. Everything
is evaluated by Arrow per table or per file: no Python loop over rows. Bad input raises RowLevelError (or the
FilterError / SchemaError naming it) before anything is written. The MERGE clauses Update / Delete / Insert are
defined here and shared with the Spark path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..deletionvectors.maintainer import dv_enabled
from ..errors import RowLevelError
from ..index.cross_partition import needs_global_index
from ..options.registry import OptionError
from ..predicate.expressions import (
    AndExpr,
    Column,
    Compare,
    Expr,
    FilterError,
    Literal,
    bind_filter,
    parse_filter,
    parse_operand,
)
from ..predicate.predicates import Leaf, Predicate, and_all
from ..schema.checks import check_writable
from ..snapshot.manager import Snapshot
from ..store.row_tracking import refuse_row_level_change
from .batch_write import check_input_schema, conform_batch, input_batches
from .compact import new_commit
from .delete_rows import append_deletions
from .read import TableRead
from .scan import TableScan
from .write import BucketRestore, TableWrite

if TYPE_CHECKING:
    from ..store.file_store import FileStore

KIND_COLUMN = "__paimon_ds_row_kind"
FILE_COLUMN = "__paimon_ds_file"
POSITION_COLUMN = "__paimon_ds_position"
TARGET_ID = "__paimon_ds_target_id"
SOURCE_ID = "__paimon_ds_source_id"
# key values up to which an upsert prunes the target's files by its keys (an IN list per key column)
PRUNE_KEYS_MAX = 100_000


# ------------------------------------------------------------------ MERGE clauses (shared with the Spark path)
@dataclass(frozen=True)
class Update:
    """WHEN MATCHED (or NOT MATCHED BY SOURCE) THEN UPDATE SET: ``set`` column -> value;
    None means `UPDATE SET *` (every column from the source row, matched rows only)."""

    set: Mapping[str, Any] | None = None
    condition: Any = None


@dataclass(frozen=True)
class Delete:
    """WHEN MATCHED (or NOT MATCHED BY SOURCE) THEN DELETE."""

    condition: Any = None


@dataclass(frozen=True)
class Insert:
    """WHEN NOT MATCHED THEN INSERT: ``values`` column -> value (missing columns are null);
    None means `INSERT *` (the source row's columns by name)."""

    values: Mapping[str, Any] | None = None
    condition: Any = None


@dataclass(frozen=True)
class RowLevelResult:
    """What a MERGE or upsert did: the new snapshot (None: nothing changed) and its row counts (as pyiceberg's
    UpsertResult and deltalake's merge metrics)."""

    snapshot: Snapshot | None
    rows_updated: int = 0
    rows_inserted: int = 0
    rows_deleted: int = 0

    def __repr__(self) -> str:
        sid = self.snapshot.id if self.snapshot is not None else None
        return (f"RowLevelResult(snapshot={sid}, rows_updated={self.rows_updated}, "
                f"rows_inserted={self.rows_inserted}, rows_deleted={self.rows_deleted})")


# ------------------------------------------------------------------ checks shared with the Spark path
def check_engine(table: FileStore, operation: str) -> None:
    """Which merge engines can take row-level changes, as in Paimon."""
    refuse_row_level_change(table.store, operation)  # copy-on-write would renumber the rows a file keeps
    if not table.table_schema.primary_keys:
        return
    opts = table.options
    engine = opts.get("merge-engine")
    deletes = operation in ("DELETE", "MERGE", "OVERWRITE")
    if opts.get("ignore-delete") and operation in ("DELETE", "OVERWRITE"):
        raise RowLevelError(f"{operation} on {table.path}: the table has ignore-delete=true, so it would drop "
                            "the deletes")
    if engine == "deduplicate":
        return
    if engine == "partial-update" and (
            not deletes or opts.get("partial-update.remove-record-on-delete")
            or opts.get("partial-update.remove-record-on-sequence-group")):
        return
    if engine == "partial-update" and operation == "MERGE":
        return  # a MERGE without DELETE actions is checked per action in check_clauses
    if engine == "aggregation" and operation == "DELETE" and opts.get("aggregation.remove-record-on-delete"):
        return  # Paimon 1.x's PrimaryKeyTableUtils.validatePKUpsertDeletable: -D rows empty the key's row
    raise RowLevelError(f"{operation} is not supported on {table.path}: its merge engine is {engine!r} "
                        "(deduplicate takes it; partial-update takes UPDATE, and DELETE with "
                        "partial-update.remove-record-on-delete=true; aggregation takes DELETE with "
                        "aggregation.remove-record-on-delete=true)")


def check_clauses(table: FileStore, matched: Sequence, not_matched: Sequence, by_source: Sequence) -> None:
    if not (matched or not_matched or by_source):
        raise RowLevelError("MERGE needs at least one WHEN clause")
    for clause in [*matched, *by_source]:
        if not isinstance(clause, (Update, Delete)):
            raise RowLevelError(f"MERGE: WHEN MATCHED / NOT MATCHED BY SOURCE take Update or Delete, not {clause!r}")
    for clause in not_matched:
        if not isinstance(clause, Insert):
            raise RowLevelError(f"MERGE: WHEN NOT MATCHED takes Insert, not {clause!r}")
    for clause in by_source:
        if isinstance(clause, Update) and clause.set is None:
            raise RowLevelError("MERGE: WHEN NOT MATCHED BY SOURCE THEN UPDATE SET * has no source row to take")
    pk = table.table_schema.primary_keys
    if pk:
        for clause in [*matched, *by_source]:
            if isinstance(clause, Update) and clause.set is not None:
                keys = [c for c in clause.set if c in pk]
                if keys:
                    raise RowLevelError(f"MERGE cannot change primary-key column(s) {keys} of {table.path}")
        opts = table.options
        if opts.get("merge-engine") == "partial-update" and any(
                isinstance(c, Delete) for c in [*matched, *by_source]) and \
                not opts.get("partial-update.remove-record-on-delete"):
            raise RowLevelError(f"MERGE ... THEN DELETE is not supported on {table.path}: a partial-update table "
                                "takes deletes only with partial-update.remove-record-on-delete=true")


# ------------------------------------------------------------------ Arrow helpers
def _evaluate(rows: pa.Table, exprs: Mapping[str, pc.Expression]) -> pa.Table:
    """Arrow expressions over a table's rows, as columns (in row order)."""
    import pyarrow.dataset as pads  # loads pandas: imported where used, not with the package (see readers.lazy)

    return pads.dataset(rows).to_table(columns=dict(exprs), use_threads=False)


def _holds(rows: pa.Table, condition: pc.Expression | None) -> np.ndarray:
    """Where a condition holds (SQL truth: null does not)."""
    if condition is None:
        return np.ones(rows.num_rows, dtype=bool)
    if rows.num_rows == 0:
        return np.zeros(0, dtype=bool)
    mask = _evaluate(rows, {"m": condition}).column("m")
    return np.asarray(pc.fill_null(mask, False).combine_chunks(), dtype=bool)


def _resolve(name: str, schema: pa.Schema, what: str) -> str:
    """A column's name in ``schema``: exact, else the one equal ignoring case."""
    if name in schema.names:
        return name
    folded = [n for n in schema.names if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise RowLevelError(f"{what}: {name!r} is not a column here (columns: {', '.join(schema.names)})")


def _value(value: Any, schema: pa.Schema, target: pa.DataType, what: str) -> pc.Expression:
    """A value to assign, as an Arrow expression over ``schema``: a column (paimon_ds.col, or a string in the
    filter language: `v`, `s.v`, `'text'`, `5`, `NULL`), a pyarrow.compute.Expression, or a Python / Arrow
    literal. Literals are cast to the column's type here, so a value that does not fit fails before writing."""
    if isinstance(value, str):
        try:
            value = parse_operand(value)
        except FilterError as e:
            raise RowLevelError(f"{what}: a string value is a column or a literal of the filter language (quote "
                                f"text as \"'text'\"): {e}") from None
    if isinstance(value, Column):
        return pc.field(_resolve(value.name, schema, what))
    if isinstance(value, pc.Expression):
        return value
    if isinstance(value, Literal):
        value = value.value
    try:
        scalar = value if isinstance(value, pa.Scalar) else pa.scalar(value)
        return pc.scalar(scalar.cast(target, safe=True) if scalar.is_valid else pa.scalar(None, target))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise RowLevelError(f"{what}: the value {value!r} is not a {target} ({e})") from None


def _check_values(exprs: Mapping[str, pc.Expression], schema: pa.Schema, types: Mapping[str, pa.DataType],
                  what: str) -> None:
    """Evaluate the assignments on no rows: a column or a cast that cannot work fails before anything is written."""
    try:
        out = _evaluate(schema.empty_table(), exprs)
        for name, column in zip(out.column_names, out.columns):
            column.cast(types[name])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise RowLevelError(f"{what}: the values cannot be computed as the columns' types ({e})") from None


def _table_of(data: Any, target: pa.Schema, path: str) -> pa.Table:
    """Input data (anything Table.append takes) in the table's schema, as one Arrow table."""
    schema, batches = input_batches(data)
    check_input_schema(schema if schema is not None else target, target, path)
    return pa.Table.from_batches([conform_batch(b, target) for b in batches], schema=target)


def _matched_mask(left: pa.Table, left_keys: Sequence[str], right: pa.Table, right_keys: Sequence[str],
                  ) -> np.ndarray:
    """For each row of ``left``, whether ``right`` has a row with equal keys (SQL: a null key matches nothing)."""
    if left.num_rows == 0 or right.num_rows == 0:
        return np.zeros(left.num_rows, dtype=bool)
    names = [f"__k{i}" for i in range(len(left_keys))]
    lhs = pa.table([*(left.column(k) for k in left_keys), pa.array(np.arange(left.num_rows))],
                   names=[*names, TARGET_ID])
    rhs = pa.table([right.column(k).cast(left.schema.field(lk).type) for k, lk in zip(right_keys, left_keys)],
                   names=names)
    hits = lhs.join(rhs, names, join_type="left semi", use_threads=False).column(TARGET_ID)
    mask = np.zeros(left.num_rows, dtype=bool)
    mask[np.asarray(hits.combine_chunks())] = True
    return mask


# ------------------------------------------------------------------ reading and writing
def current(table: FileStore) -> tuple[FileStore, Snapshot | None]:
    """The table as stored now (its latest schema, no time travel) and its latest snapshot: the statement's."""
    options = {k: v for k, v in table.dynamic_options.items()
               if k not in ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis")}
    fresh = table.reload(options)
    return fresh, fresh.snapshot_manager.latest()


def _splits(table: FileStore, snapshot: Snapshot, predicate: Predicate | None):
    # the table's own branch only: a scan.fallback-branch's rows are not the table's to change (as in Paimon)
    return TableScan(table, predicate).plan_snapshot(snapshot)


def _read(table: FileStore, snapshot: Snapshot | None, predicate: Predicate | None = None,
          file_column: bool = False, position_column: bool = False,
          columns: Sequence[str] | None = None) -> pa.Table:
    """The table's rows at ``snapshot`` (those ``predicate`` may keep; the caller filters exactly)."""
    schema = table.arrow_schema() if columns is None else pa.schema([table.arrow_schema().field(c) for c in columns])
    # positions count every row of a file, and a copy-on-write keeps every row of the files it rewrites: there
    # the predicate only prunes files
    read = TableRead(table, schema, None if position_column or file_column else predicate,
                     file_column=FILE_COLUMN if file_column else None,
                     position_column=POSITION_COLUMN if position_column else None)
    if snapshot is None:
        return read.output_schema.empty_table()
    batches = [b for s in _splits(table, snapshot, predicate) for b in read.read(s)]
    return pa.Table.from_batches(batches, schema=read.output_schema)


def write_changes(table: FileStore, batches: Iterable[pa.RecordBatch], row_kinds: bool,
                  replace: Sequence[str] | None = None) -> Snapshot | None:
    """Write rows (with a leading kind column when ``row_kinds``) and commit them in one snapshot; ``replace``:
    the data files the rows replace (copy-on-write; read lazily, after the rows: the rewrite fills it), committed
    as OVERWRITE, failing on a file another commit removed. None when nothing was written or replaced."""
    if needs_global_index(table.table_schema, table.bucket):
        raise OptionError(f"Paimon table {table.path} is a cross-partition upsert table (its primary key "
                          f"{list(table.table_schema.primary_keys)} lacks a partition key, bucket=-1): its rows get "
                          "their partition from a global key index that only the Spark path (paimon_ds.delete / "
                          "update / merge) builds. Nothing was written")
    check_writable(table.path, table.table_schema, table.options)
    restore = BucketRestore.from_table(table) if table.table_schema.primary_keys else None
    table_write = TableWrite(table, restore=restore, row_kind_column=KIND_COLUMN if row_kinds else None)
    written = 0
    try:
        for batch in batches:
            if batch.num_rows:
                table_write.write_arrow(batch)
                written += batch.num_rows
        messages = table_write.prepare_commit()
    except BaseException:
        table_write.abort()
        raise
    commit = new_commit(table)
    if written == 0 and not replace:
        commit.abort(messages)
        return None
    try:
        if replace is not None:
            return commit.replace_files(messages, list(replace))
        return commit.commit(messages, base_snapshot_id=restore.snapshot_id if restore else None)
    except BaseException:
        commit.abort(messages)
        raise


def _with_kind(rows: pa.Table, kind: str | pa.Array) -> pa.Table:
    kinds = pa.array(np.full(rows.num_rows, kind, dtype=object), pa.string()) if isinstance(kind, str) else kind
    return rows.add_column(0, KIND_COLUMN, kinds)


def _rewrite(table: FileStore, snapshot: Snapshot, predicate: Predicate | None,
             change: Callable[[pa.Table], pa.Table | None], touched: list[str]) -> Iterator[pa.RecordBatch]:
    """Copy-on-write, one data file at a time: ``change`` gives a file's rows as they are to be (None: the file
    keeps them all unchanged); the files changed are added to ``touched``."""
    read = TableRead(table, table.arrow_schema())
    for split in _splits(table, snapshot, predicate):
        for f in split.files:
            rows = pa.Table.from_batches(list(read.read(dataclasses.replace(split, files=[f]))),
                                         schema=read.output_schema)
            new = change(rows)
            if new is None:
                continue
            touched.append(f.file_name)
            yield from new.to_batches()


def _bind(table: FileStore, filter: Any, what: str) -> tuple[pc.Expression | None, Predicate | None]:
    if filter is None:
        return None, None
    try:
        bound = bind_filter(filter, table.arrow_schema())
    except FilterError as e:
        raise RowLevelError(f"{what}: {e}; nothing was changed") from None
    return bound.expression, bound.predicate


# ------------------------------------------------------------------ DELETE
def delete(table: FileStore, filter: Any = None) -> Snapshot | None:
    """DELETE the rows ``filter`` keeps (None: every row). The new snapshot, or None if no row matched."""
    table, snapshot = current(table)
    check_engine(table, "DELETE")
    condition, predicate = _bind(table, filter, "DELETE")
    if snapshot is None:
        return None
    if table.table_schema.primary_keys:
        rows = _read(table, snapshot, predicate)
        rows = rows.filter(pa.array(_holds(rows, condition)))
        return write_changes(table, _with_kind(rows, "-D").to_batches(), row_kinds=True)
    if dv_enabled(table.store):
        # deletion vectors: the rows go by position (no file is rewritten), as Paimon's Spark DELETE
        rows = _read(table, snapshot, predicate, file_column=True, position_column=True)
        rows = rows.filter(pa.array(_holds(rows, condition))).select([FILE_COLUMN, POSITION_COLUMN])
        if rows.num_rows == 0:
            return None
        grouped = rows.group_by(FILE_COLUMN, use_threads=False).aggregate([(POSITION_COLUMN, "list")])
        deleted = {name: np.asarray(positions, dtype=np.int64) for name, positions in zip(
            grouped.column(FILE_COLUMN).to_pylist(), grouped.column(f"{POSITION_COLUMN}_list").to_pylist())}
        return append_deletions(table, snapshot, deleted)

    def keep(rows: pa.Table) -> pa.Table | None:
        hit = _holds(rows, condition)
        return rows.filter(pa.array(~hit)) if hit.any() else None

    touched: list[str] = []
    return write_changes(table, _rewrite(table, snapshot, predicate, keep, touched), row_kinds=False,
                         replace=touched)


# ------------------------------------------------------------------ UPDATE
def _assignments(table: FileStore, values: Mapping[str, Any], schema: pa.Schema, what: str) -> dict[str, pc.Expression]:
    """Assignments (table column -> value) as Arrow expressions over ``schema``, checked."""
    names = table.table_schema.field_names
    if not isinstance(values, Mapping):
        raise RowLevelError(f"{what}: the values are a mapping {{column: value}}, got {type(values).__name__}")
    unknown = [c for c in values if c not in names]
    if unknown:
        raise RowLevelError(f"{what}: {unknown} are not columns of {table.path} (columns: {', '.join(names)})")
    types = {f.name: f.type for f in table.arrow_schema()}
    exprs = {c: _value(v, schema, types[c], f"{what} {c}") for c, v in values.items()}
    _check_values(exprs, schema, types, what)
    return exprs


def _assigned(rows: pa.Table, exprs: Mapping[str, pc.Expression], target: pa.Schema,
              default: Callable[[str], pa.ChunkedArray | pa.Array]) -> pa.Table:
    """The rows of ``target``'s columns: the assigned ones computed over ``rows``, the others ``default(name)``."""
    computed = _evaluate(rows, exprs) if exprs else None
    columns = [computed.column(f.name) if f.name in exprs else default(f.name) for f in target]
    out = pa.table(columns, names=target.names)
    return pa.Table.from_batches([conform_batch(b, target) for b in out.to_batches()], schema=target)


def check_update(table: FileStore, columns: Iterable[str]) -> None:
    """What an UPDATE may set, on every path (Spark's and the core's): some column, never a primary key."""
    check_engine(table, "UPDATE")
    columns = list(columns)
    if not columns:
        raise RowLevelError("UPDATE needs at least one column to set")
    keys = [c for c in columns if c in table.table_schema.primary_keys]
    if keys:
        raise RowLevelError(f"UPDATE cannot change primary-key column(s) {keys} of {table.path}; delete the row "
                            "and insert the new one")


def update(table: FileStore, values: Mapping[str, Any], filter: Any = None) -> Snapshot | None:
    """UPDATE the table SET ``values`` (column -> value over the old row) WHERE ``filter`` (None: every row)."""
    table, snapshot = current(table)
    check_update(table, values)
    schema = table.arrow_schema()
    exprs = _assignments(table, values, schema, "UPDATE")
    condition, predicate = _bind(table, filter, "UPDATE")
    if snapshot is None:
        return None
    if table.table_schema.primary_keys:
        rows = _read(table, snapshot, predicate)
        rows = rows.filter(pa.array(_holds(rows, condition)))
        new = _assigned(rows, exprs, schema, rows.column)
        return write_changes(table, _with_kind(new, "+U").to_batches(), row_kinds=True)

    def change(rows: pa.Table) -> pa.Table | None:
        hit = _holds(rows, condition)
        if not hit.any():
            return None
        new = _assigned(rows, exprs, schema, rows.column)
        mask = pa.array(hit)
        return pa.table([pc.if_else(mask, new.column(n), rows.column(n)) if n in exprs else rows.column(n)
                         for n in schema.names], schema=schema)

    touched: list[str] = []
    return write_changes(table, _rewrite(table, snapshot, predicate, change, touched), row_kinds=False,
                         replace=touched)


# ------------------------------------------------------------------ OVERWRITE WHERE
def overwrite_where(table: FileStore, data: Any, filter: Any) -> Snapshot | None:
    """Replace the rows ``filter`` keeps with ``data`` in one commit (deltalake's predicate overwrite); every
    data row must satisfy the filter (else RowLevelError, nothing written)."""
    table, snapshot = current(table)
    check_engine(table, "OVERWRITE")
    schema = table.arrow_schema()
    condition, predicate = _bind(table, filter, "overwrite(filter=...)")
    rows_in = _table_of(data, schema, table.path)
    outside = ~_holds(rows_in, condition)
    if outside.any():
        first = rows_in.filter(pa.array(outside)).slice(0, 1).to_pylist()[0]
        raise RowLevelError(f"overwrite(filter={filter!r}): {int(outside.sum())} row(s) of the data do not satisfy "
                            f"the filter (the first: {first}); nothing was written")
    if table.table_schema.primary_keys:
        old = _read(table, snapshot, predicate)
        old = old.filter(pa.array(_holds(old, condition)))
        keys = list(table.table_schema.primary_keys)
        # the keys the data writes again are replaced by it; the others go
        gone = old.filter(pa.array(~_matched_mask(old, keys, rows_in, keys)))
        changes = pa.concat_tables([_with_kind(gone, "-D"), _with_kind(rows_in, "+I")])
        return write_changes(table, changes.to_batches(), row_kinds=True)

    def keep(rows: pa.Table) -> pa.Table | None:
        hit = _holds(rows, condition)
        return rows.filter(pa.array(~hit)) if hit.any() else None

    touched: list[str] = []
    rewritten = _rewrite(table, snapshot, predicate, keep, touched) if snapshot is not None else iter(())

    def batches() -> Iterator[pa.RecordBatch]:
        yield from rewritten
        yield from rows_in.to_batches()
    return write_changes(table, batches(), row_kinds=False, replace=touched)


# ------------------------------------------------------------------ UPSERT
def _unique_keys(rows: pa.Table, keys: Sequence[str], what: str) -> None:
    """RowLevelError naming the keys the source holds more than once (as pyiceberg's upsert refuses them)."""
    if rows.num_rows == 0:
        return
    counts = rows.group_by(list(keys), use_threads=False).aggregate([([], "count_all")])
    twice = counts.filter(pc.greater(counts.column("count_all"), 1))
    if twice.num_rows:
        shown = twice.select(list(keys)).slice(0, 5).to_pylist()
        raise RowLevelError(f"{what}: the source holds {twice.num_rows} key(s) more than once, e.g. {shown}; "
                            "nothing was written")


def _key_prune(rows: pa.Table, keys: Sequence[str]) -> Predicate | None:
    """An IN list per key column of the source's values: prunes the target's partitions and files."""
    leaves = []
    for k in keys:
        values = pc.unique(rows.column(k).drop_null())
        if len(values) > PRUNE_KEYS_MAX:
            continue
        leaves.append(Leaf("in", k, tuple(values.to_pylist())))
    return and_all(leaves)


def upsert(table: FileStore, data: Any, on: str | Sequence[str] | None = None) -> RowLevelResult:
    """Rows of ``data`` whose ``on`` columns match a row of the table replace it; the others are inserted.
    Primary-key tables match by the key (``on`` defaults to it and must name it); append tables by ``on``."""
    table, snapshot = current(table)
    pk = list(table.table_schema.primary_keys)
    on = [on] if isinstance(on, str) else (list(on) if on is not None else None)
    if pk:
        check_engine(table, "UPDATE")
        if on is not None and sorted(on) != sorted(pk):
            raise RowLevelError(f"upsert on {on}: primary-key table {table.path} is upserted by its key {pk}")
        on = pk
    elif not on:
        raise RowLevelError(f"upsert into append table {table.path} needs the columns to match rows by: on=[...]")
    else:
        check_engine(table, "MERGE")
    names = table.table_schema.field_names
    unknown = [c for c in on if c not in names]
    if unknown:
        raise RowLevelError(f"upsert on {unknown}: not columns of {table.path} (columns: {', '.join(names)})")
    schema = table.arrow_schema()
    rows_in = _table_of(data, schema, table.path)
    _unique_keys(rows_in, on, "upsert")
    if not pk:
        return _merge(table, snapshot, rows_in, on, [Update()], [Insert()], [], "t", "s")
    # a primary-key table: the source rows are written as they are; only which keys exist is read
    old = _read(table, snapshot, _key_prune(rows_in, pk), columns=pk)
    matched = _matched_mask(rows_in, pk, old, pk)
    kinds = pc.if_else(pa.array(matched), pa.scalar("+U"), pa.scalar("+I"))
    snapshot = write_changes(table, _with_kind(rows_in, kinds).to_batches(), row_kinds=True)
    return RowLevelResult(snapshot, rows_updated=int(matched.sum()), rows_inserted=int((~matched).sum()))


# ------------------------------------------------------------------ MERGE
def _join_on(on: Any, target: pa.Schema, source: pa.Schema, target_alias: str, source_alias: str,
             ) -> tuple[list[tuple[str, str]], Expr | None]:
    """The ON clause: its equality pairs (target column, source column), and what else it requires (a filter
    over the joined columns). ``on``: column names both sides have, or a condition (`t.id = s.id AND ...`)."""
    if isinstance(on, str) and on.strip().isidentifier():
        on = [on.strip()]
    if isinstance(on, (list, tuple)):
        missing = [c for c in on if c not in target.names or c not in source.names]
        if not on or missing:
            raise RowLevelError(f"MERGE ON {list(on)}: each column must be in both the table and the source "
                                f"(missing: {missing})")
        return [(c, c) for c in on], None
    expr = parse_filter(on) if isinstance(on, str) else on
    if not isinstance(expr, Expr):
        raise RowLevelError(f"MERGE: on is a list of column names or a condition, got {on!r}")

    def side(column: Column) -> tuple[str, str] | None:
        alias, _, rest = column.name.partition(".")
        if rest and alias == target_alias and rest in target.names:
            return "t", rest
        if rest and alias == source_alias and rest in source.names:
            return "s", rest
        if not rest and (column.name in target.names) != (column.name in source.names):
            return ("t", column.name) if column.name in target.names else ("s", column.name)
        return None

    parts = list(expr.children) if isinstance(expr, AndExpr) else [expr]
    pairs, rest = [], []
    for p in parts:
        if isinstance(p, Compare) and p.op == "=" and isinstance(p.right, Column):
            a, b = side(p.left), side(p.right)
            if a and b and {a[0], b[0]} == {"t", "s"}:
                pairs.append((a[1], b[1]) if a[0] == "t" else (b[1], a[1]))
                continue
        rest.append(p)
    if not pairs:
        raise RowLevelError(f"MERGE ON {expr.sql()}: the condition needs an equality of a target and a source "
                            f"column ({target_alias}.id = {source_alias}.id)")
    residual = None
    for p in rest:
        residual = p if residual is None else residual & p
    return pairs, residual


def _combined(target: pa.Table | None, source: pa.Table | None, target_schema: pa.Schema,
              source_schema: pa.Schema, target_alias: str, source_alias: str, rows: int) -> pa.Table:
    """Joined rows with each side's columns as `alias.name` (nulls for a side that is absent), and the names
    only one side has also unqualified."""
    columns, names = [], []
    for alias, schema, part in ((target_alias, target_schema, target), (source_alias, source_schema, source)):
        for f in schema:
            columns.append(part.column(f.name) if part is not None else pa.nulls(rows, f.type))
            names.append(f"{alias}.{f.name}")
    for alias, schema, other in ((target_alias, target_schema, source_schema),
                                 (source_alias, source_schema, target_schema)):
        for f in schema:
            if f.name not in other.names and f.name not in names:
                columns.append(columns[names.index(f"{alias}.{f.name}")])
                names.append(f.name)
    return pa.table(columns, names=names)


def merge(table: FileStore, source: Any, on: Any, when_matched: Sequence = (), when_not_matched: Sequence = (),
          when_not_matched_by_source: Sequence = (), target_alias: str = "t", source_alias: str = "s",
          ) -> RowLevelResult:
    """MERGE INTO the table (as ``target_alias``) USING ``source`` (as ``source_alias``) ON ``on``, with SQL's
    semantics: for each row the first clause whose condition holds acts; a target row matched by more than one
    source row is an error. Conditions and values name columns as `t.col` / `s.col` (or unqualified where one
    side alone has the column)."""
    table, snapshot = current(table)
    check_engine(table, "MERGE")
    check_clauses(table, when_matched, when_not_matched, when_not_matched_by_source)
    if target_alias == source_alias:
        raise RowLevelError(f"MERGE: the target and source aliases must differ (both {target_alias!r})")
    schema, batches = input_batches(source)
    source_rows = pa.Table.from_batches(list(batches), schema=schema) if schema is not None else None
    if source_rows is None:
        raise RowLevelError("MERGE: the source has no schema (an empty iterable)")
    return _merge(table, snapshot, source_rows, on, when_matched, when_not_matched, when_not_matched_by_source,
                  target_alias, source_alias)


def _merge(table: FileStore, snapshot: Snapshot | None, source: pa.Table, on: Any, when_matched: Sequence,
           when_not_matched: Sequence, by_source: Sequence, target_alias: str, source_alias: str,
           ) -> RowLevelResult:
    pk = bool(table.table_schema.primary_keys)
    schema = table.arrow_schema()
    pairs, residual = _join_on(on, schema, source.schema, target_alias, source_alias)
    clauses: list[tuple[str, Update | Delete | Insert]] = (
        [("matched", c) for c in when_matched] + [("source", c) for c in when_not_matched]
        + [("target", c) for c in by_source])

    # bind every condition and value to the joined columns before anything is read or written
    shape = _combined(None, None, schema, source.schema, target_alias, source_alias, 0)
    try:
        residual_expr = bind_filter(residual, shape.schema).expression if residual is not None else None
        conditions = [bind_filter(c.condition, shape.schema).expression if c.condition is not None else None
                      for _, c in clauses]
    except FilterError as e:
        raise RowLevelError(f"MERGE: {e}") from None
    values: list[dict[str, pc.Expression]] = []
    for _, clause in clauses:
        if isinstance(clause, Delete):
            values.append({})
            continue
        given = clause.set if isinstance(clause, Update) else clause.values
        what = "MERGE UPDATE SET" if isinstance(clause, Update) else "MERGE INSERT"
        if given is None:  # SET * / INSERT *: the source column of the same name
            missing = [c for c in schema.names if c not in source.schema.names]
            if missing:
                raise RowLevelError(f"{what} * needs column(s) {missing} in the source (source columns: "
                                    f"{', '.join(source.schema.names)})")
            given = {c: Column(f"{source_alias}.{c}") for c in schema.names}
        if isinstance(clause, Insert):  # columns an INSERT leaves out are null
            given = {**{c: None for c in schema.names}, **given}
        values.append(_assignments(table, given, shape.schema, what))

    # without NOT MATCHED BY SOURCE clauses only target rows equal to a source key matter: prune by the keys
    prune = None
    if not by_source:
        try:
            keys_as_target = pa.table([source.column(s).cast(schema.field(t).type) for t, s in pairs],
                                      names=[t for t, _ in pairs])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise RowLevelError(f"MERGE ON: a source key cannot be compared with the target's ({e})") from None
        prune = _key_prune(keys_as_target, keys_as_target.column_names)
    target = _read(table, snapshot, prune, file_column=not pk)
    target_rows = target.select(schema.names)

    # the matched pairs: a hash join on the equalities, then the rest of ON
    keys = [f"__k{i}" for i in range(len(pairs))]
    lhs = pa.table([*(target_rows.column(t) for t, _ in pairs), pa.array(np.arange(target.num_rows))],
                   names=[*keys, TARGET_ID])
    try:
        rhs = pa.table([*(source.column(s).cast(schema.field(t).type) for t, s in pairs),
                        pa.array(np.arange(source.num_rows))], names=[*keys, SOURCE_ID])
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise RowLevelError(f"MERGE ON: a source key cannot be compared with the target's ({e})") from None
    joined = lhs.join(rhs, keys, join_type="inner", use_threads=False) if target.num_rows and source.num_rows \
        else pa.table({TARGET_ID: pa.array([], pa.int64()), SOURCE_ID: pa.array([], pa.int64())})
    tid = np.asarray(joined.column(TARGET_ID).combine_chunks(), dtype=np.int64)
    sid = np.asarray(joined.column(SOURCE_ID).combine_chunks(), dtype=np.int64)
    matched = _combined(target_rows.take(tid), source.take(sid), schema, source.schema, target_alias,
                        source_alias, len(tid))
    if residual_expr is not None:
        ok = _holds(matched, residual_expr)
        tid, sid, matched = tid[ok], sid[ok], matched.filter(pa.array(ok))
    if when_matched and len(tid) and np.bincount(tid, minlength=target.num_rows).max() > 1:
        raise RowLevelError(f"MERGE: a target row matched more than one source row (ON {on!r}); make the source "
                            "unique per key")
    target_only_ids = _unmatched(target.num_rows, tid) if by_source or not pk else np.zeros(0, np.int64)
    source_only_ids = _unmatched(source.num_rows, sid) if when_not_matched else np.zeros(0, np.int64)
    groups = {
        "matched": (matched, tid),
        "target": (_combined(target_rows.take(target_only_ids), None, schema, source.schema, target_alias,
                             source_alias, len(target_only_ids)), target_only_ids),
        "source": (_combined(None, source.take(source_only_ids), schema, source.schema, target_alias,
                             source_alias, len(source_only_ids)), None),
    }

    kinds = {Update: "+U", Delete: "-D", Insert: "+I"}
    outputs: list[pa.Table] = []  # rows to write (PK: with their kind)
    acted: list[np.ndarray] = []  # append tables: target rows an UPDATE or DELETE replaced
    counts = {Update: 0, Delete: 0, Insert: 0}
    for group, (rows, ids) in groups.items():
        action = np.full(rows.num_rows, -1, dtype=np.int64)
        for i, (where, _) in enumerate(clauses):
            if where != group:
                continue
            free = action < 0
            if not free.any():
                break
            action[free & _holds(rows, conditions[i])] = i
        for i, (where, clause) in enumerate(clauses):
            if where != group:
                continue
            mine = action == i
            if not mine.any():
                continue
            counts[type(clause)] += int(mine.sum())
            picked = rows.filter(pa.array(mine))
            if ids is not None:
                acted.append(ids[mine])
            if isinstance(clause, Delete):
                if pk:
                    old = picked.select([f"{target_alias}.{c}" for c in schema.names]).rename_columns(schema.names)
                    outputs.append(_with_kind(old, "-D"))
                continue
            new = _assigned(picked, values[i], schema,
                            lambda n, p=picked: p.column(f"{target_alias}.{n}"))
            outputs.append(_with_kind(new, kinds[type(clause)]) if pk else new)
    result = dict(rows_updated=counts[Update], rows_inserted=counts[Insert], rows_deleted=counts[Delete])
    if pk:
        return RowLevelResult(write_changes(table, (b for t in outputs for b in t.to_batches()), row_kinds=True),
                              **result)

    # append table: the files holding a row an UPDATE or DELETE acted on are rewritten with their other rows
    acted_ids = np.concatenate(acted) if acted else np.zeros(0, np.int64)
    files = pc.unique(target.column(FILE_COLUMN).take(pa.array(acted_ids))).to_pylist() if len(acted_ids) else []
    in_files = np.asarray(pc.is_in(target.column(FILE_COLUMN), pa.array(files, pa.string())), dtype=bool)
    in_files[acted_ids] = False
    kept = target_rows.filter(pa.array(in_files))
    rows_out = [kept, *outputs]
    snapshot = write_changes(table, (b for t in rows_out for b in t.to_batches()), row_kinds=False,
                             replace=sorted(files))
    return RowLevelResult(snapshot, **result)


def _unmatched(rows: int, matched_ids: np.ndarray) -> np.ndarray:
    """The row numbers below ``rows`` not among ``matched_ids``."""
    present = np.zeros(rows, dtype=bool)
    present[matched_ids] = True
    return np.flatnonzero(~present)


class MergeBuilder:
    """`table.merge(source, on, ...)`: add clauses in order, then `execute()` (deltalake's TableMerger).

    Conditions (``predicate``) are filters over `t.col` / `s.col` (the aliases given); values are a column
    (`"s.v"`, `col("s.v")`), a literal, or a pyarrow.compute.Expression over the qualified names."""

    def __init__(self, table: FileStore, source: Any, on: Any, source_alias: str = "s", target_alias: str = "t",
                 clauses: Iterable[Update | Delete | Insert] = ()) -> None:
        self.table, self.source, self.on = table, source, on
        self.source_alias, self.target_alias = source_alias, target_alias
        self.matched: list[Update | Delete] = []
        self.not_matched: list[Insert] = []
        self.by_source: list[Update | Delete] = []
        for c in clauses:  # the Spark path's clause objects: Update / Delete when matched, Insert when not
            (self.not_matched if isinstance(c, Insert) else self.matched).append(c)

    def when_matched_update(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        self.matched.append(Update(dict(updates), predicate))
        return self

    def when_matched_update_all(self, predicate: Any = None) -> MergeBuilder:
        self.matched.append(Update(None, predicate))
        return self

    def when_matched_delete(self, predicate: Any = None) -> MergeBuilder:
        self.matched.append(Delete(predicate))
        return self

    def when_not_matched_insert(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        self.not_matched.append(Insert(dict(updates), predicate))
        return self

    def when_not_matched_insert_all(self, predicate: Any = None) -> MergeBuilder:
        self.not_matched.append(Insert(None, predicate))
        return self

    def when_not_matched_by_source_update(self, updates: Mapping[str, Any], predicate: Any = None) -> MergeBuilder:
        self.by_source.append(Update(dict(updates), predicate))
        return self

    def when_not_matched_by_source_delete(self, predicate: Any = None) -> MergeBuilder:
        self.by_source.append(Delete(predicate))
        return self

    def execute(self) -> RowLevelResult:
        return merge(self.table, self.source, self.on, self.matched, self.not_matched, self.by_source,
                     self.target_alias, self.source_alias)

    def __repr__(self) -> str:
        return (f"MergeBuilder(on={self.on!r}, when_matched={self.matched}, when_not_matched={self.not_matched}, "
                f"when_not_matched_by_source={self.by_source})")
