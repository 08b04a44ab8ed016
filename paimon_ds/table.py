"""Table: one Paimon table's path, schema, options and snapshots; the entry to scans, writes, commits."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from .errors import TableAlreadyExists
from .fs.file_io import FileIO
from .operation.batch_write import (
    by_name_problems,
    check_input_schema,
    conform_batch,
    input_batches,
    partition_constants,
    write_batches,
)
from .operation.change_tables import data_system_table
from .operation.commit import BucketCompactor, TableCommit
from .operation.compact import new_commit
from .operation.incremental import new_scan
from .operation.read import TableRead
from .operation.row_level import Delete, Insert, MergeBuilder, RowLevelResult, Update, overwrite_where
from .operation.row_level import delete as delete_rows
from .operation.row_level import update as update_rows
from .operation.row_level import upsert as upsert_rows
from .operation.scan import TableScan
from .operation.write import TableWrite
from .options.registry import OptionError, Options, table_options, validate
from .predicate.expressions import Expr
from .predicate.predicates import Predicate
from .readers.lazy import pyarrow_dataset
from .readers.scan import TIME_TRAVEL_KEYS, Scan, time_travel_options
from .readers.system_tables import InspectTable
from .schema.checks import check_writable
from .schema.manager import SchemaManager, TableNotFound, TableSchema
from .schema.merge import commit_merged_schema
from .schema.types import SchemaError, fields_from_arrow, same_type_ignoring_nullability
from .snapshot.branch import (
    MAIN_BRANCH,
    BranchError,
    BranchManager,
    latest_branch_schema,
    normalize_branch,
)
from .snapshot.manager import Snapshot, SnapshotManager
from .store.file_store import FileStore, StoreField, job_and_storage_options


class Table:
    """The facade of one Paimon table: opens it, and builds the scans, reads, writes and commits of its store
    (`table.store`, a FileStore: the path, FileIO, schema, options, branch and managers below `operation/`)."""

    def __init__(self, path: str, schema: TableSchema, dynamic_options: Mapping[str, str] | None = None,
                 storage_options: dict[str, Any] | None = None, io: FileIO | None = None) -> None:
        self.store = FileStore(path, schema, dynamic_options, storage_options, io)

    # the store's metadata, as the facade's callers read it
    path = StoreField[str]()
    io = StoreField[FileIO]()
    root = StoreField[str]()
    storage_options = StoreField["dict[str, Any] | None"]()
    table_schema = StoreField[TableSchema]()
    dynamic_options = StoreField["dict[str, str]"]()
    options = StoreField[Options]()
    branch = StoreField[str]()
    branch_root = StoreField[str]()
    schema_manager = StoreField[SchemaManager]()
    snapshot_manager = StoreField[SnapshotManager]()

    # ------------------------------------------------------------------ opening
    @staticmethod
    def exists(path: str, storage_options: dict[str, Any] | None = None) -> bool:
        io = FileIO(path, storage_options)
        return bool(SchemaManager(io, io.root).list_ids())

    @staticmethod
    def load(path: str, options: Mapping[str, str] | None = None,
             storage_options: dict[str, Any] | None = None) -> Table:
        """Open the table at ``path``; per-job options (scan.*, ...) overlay the stored ones."""
        return Table.of_store(FileStore.load(path, options, storage_options))

    @staticmethod
    def of_store(store: FileStore) -> Table:
        """The facade of ``store``."""
        table = Table.__new__(Table)
        table.store = store
        return table

    @staticmethod
    def for_write(path: str, arrow_schema: pa.Schema, options: Mapping[str, str] | None = None,
                  storage_options: dict[str, Any] | None = None) -> Table:
        """The existing table checked against ``arrow_schema``, or a new (not yet created) one.

        A new table's schema file is written by the first commit, so a failed first write leaves
        nothing behind.
        """
        options, storage_options = job_and_storage_options(options, storage_options)
        options = {k: str(v) for k, v in options.items() if v is not None}
        validate(options)
        io = FileIO(path, storage_options)
        branch = normalize_branch(options.get("branch"))
        existing = latest_branch_schema(io, path, branch)
        if existing is None and branch != MAIN_BRANCH:
            raise BranchError(f"no Paimon table at {path}: a branch ({branch!r}) is written in an existing table "
                              "only (create the table, then the branch)")
        if existing is None:
            if io.exists(io.root) and (io.is_dir(io.root) is False or _has_foreign_content(io)):
                raise TableNotFound(f"{path} holds files that are not a Paimon table; refusing to write there")
            given = Options(options)
            schema = TableSchema.from_arrow(arrow_schema, given.get("partition") or [],
                                            given.get("primary-key") or [], table_options(options))
            table = Table(path, schema, options, storage_options, io)
        else:
            given = Options(options)
            if given.get("write.merge-schema"):
                # Paimon's Spark write.merge-schema: new columns and wider types go into a new schema file
                # before any data is written (a mismatch it cannot merge raises here, writing nothing)
                existing = commit_merged_schema(io, arrow_schema, given.get("write.merge-schema.explicit-cast"),
                                                branch, given.get("write.merge-schema.type-widening"))
            table = Table(path, existing, options, storage_options, io)
            table.arrow_schema()  # a type paimon_ds cannot write (BLOB) is named before the data is compared
            table.check_write_schema(arrow_schema, options)
        table.check_writable()
        return table

    def check_writable(self) -> None:
        """Refuse, before any data is written, a table layout this version cannot write correctly."""
        check_writable(self.path, self.table_schema, self.options)

    def check_readable(self) -> None:
        """Refuse, before any row is read, a table whose options (stored or given) ask for reads paimon_ds does not
        do (`paimon_option_keys.txt`: refused keys that block reads)."""
        self.store.check_readable()

    def check_write_schema(self, arrow_schema: pa.Schema, options: Mapping[str, str]) -> None:
        for key, stored in (("partition", list(self.table_schema.partition_keys)),
                            ("primary-key", list(self.table_schema.primary_keys))):
            if key in options and Options(options).get(key) != stored:
                raise OptionError(f"option {key}={options[key]!r} differs from the table's {key} {stored}")
        if "bucket" in options and Options(options).get("bucket") != Options(self.table_schema.options).get("bucket"):
            raise OptionError(f"option bucket={options['bucket']} differs from the table's bucket "
                              f"{self.table_schema.options.get('bucket', '-1')} (rescaling is not supported)")
        if Options(options).get("write.merge-schema"):
            # the schema was merged: the data is aligned to it by name, case-insensitively (missing columns and
            # nested fields null, values cast), as Paimon's SchemaHelper.alignColumns does (operation.write)
            problems = by_name_problems(arrow_schema, self.arrow_schema())
        else:
            problems = self._exact_problems(arrow_schema)
        if problems:
            columns = ", ".join(f"{x.name} {x.type.sql()}" for x in self.table_schema.fields)
            raise SchemaError(f"the data does not match the schema of Paimon table {self.path}: "
                              + "; ".join(problems) + f". Table columns: {columns}")

    def _exact_problems(self, arrow_schema: pa.Schema) -> list[str]:
        incoming, _ = fields_from_arrow(arrow_schema)
        by_name = {f.name: f for f in incoming}
        table_names = self.table_schema.field_names
        missing = [n for n in table_names if n not in by_name]
        extra = [n for n in by_name if n not in table_names]
        problems = []
        names = [f.name for f in incoming]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # (a Spark DataFrame may carry two columns of one name)
            problems.append(f"column(s) {twice} appear more than once")
        if missing:
            problems.append(f"missing column(s) {missing}")
        if extra:
            problems.append(f"column(s) {extra} not in the table")
        for f in self.table_schema.fields:
            if f.name in by_name and not same_type_ignoring_nullability(f.type, by_name[f.name].type):
                problems.append(f"column {f.name!r} is {by_name[f.name].type.sql()} in the data "
                                f"but {f.type.sql()} in the table")
        return problems

    # ------------------------------------------------------------------ properties
    @property
    def is_created(self) -> bool:
        return self.store.is_created

    @property
    def bucket(self) -> int:
        return self.store.bucket

    @property
    def partition_keys(self) -> list[str]:
        return self.store.partition_keys

    def schema(self) -> TableSchema:
        """The table's current schema: fields (name, type, id), primary_keys, partition_keys, options, id;
        `.as_arrow()` gives it as an Arrow schema (as pyiceberg's `tbl.schema().as_arrow()`)."""
        return self.table_schema

    @property
    def inspect(self) -> InspectTable:
        """The table's metadata as Arrow tables, one method per system table (as pyiceberg's `tbl.inspect`):
        snapshots(), schemas(), options(), files(), manifests(), partitions(), buckets(), tags(), branches(),
        consumers()."""
        return InspectTable(self.store, lambda name: data_system_table(self.store, name))

    def version(self) -> int | None:
        """The id of the table's current snapshot (the one a scan reads), None before the first commit
        (as deltalake's `dt.version()`)."""
        snapshot = self.snapshot_to_read()
        return snapshot.id if snapshot is not None else None

    def arrow_schema(self) -> pa.Schema:
        return self.store.arrow_schema()

    def branch_manager(self) -> BranchManager:
        """The table's branches, seen from this table's branch (fast_forward moves it; create takes its tags)."""
        return self.store.branch_manager()

    def fallback_table(self) -> Table | None:
        """The branch `scan.fallback-branch` names, as a batch read of this table sees it (its partitions that
        this branch lacks are read from there); None without the option."""
        other = self.store.fallback_store()
        return Table.of_store(other) if other is not None else None

    def fallback_store(self) -> FileStore | None:
        """The store of fallback_table() (what operations given this facade instead of its store call)."""
        return self.store.fallback_store()

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """The schema a file or snapshot was written under (older ones read once per process)."""
        return self.store.schema_by_id(schema_id)

    def latest_snapshot(self) -> Snapshot | None:
        return self.store.latest_snapshot()

    def snapshot_to_read(self) -> Snapshot | None:
        """The snapshot a scan reads: latest, or the one time-travel options name."""
        return self.store.snapshot_to_read()

    # ------------------------------------------------------------------ operations
    def reload(self, options: Mapping[str, str] | None = None) -> Table:
        """The same table as stored now (its latest schema), with ``options`` (default: this one's) as its
        per-job options."""
        return Table.of_store(self.store.reload(options))

    def new_write(self, commit_user: str | None = None, job_prefix: str | None = None, **kwargs: Any) -> TableWrite:
        """A TableWrite (kwargs: restore, task, clustered; see operation.write.TableWrite)."""
        return TableWrite(self.store, commit_user, job_prefix, **kwargs)

    def new_commit(self, commit_user: str | None = None, compact_buckets: BucketCompactor | None = None,
                   streaming: bool = False) -> TableCommit:
        """A commit that compacts the buckets its writers did not (in this process, or with ``compact_buckets``,
        a stream's own compaction) and runs the table's maintenance after each commit (expiry, partition
        expiration, automatic tags). ``streaming``: a stream's commit, which also compacts unaware-bucket
        append tables, as Paimon's Flink sink does."""
        return new_commit(self.store, commit_user, compact_buckets, streaming)

    def new_scan(self, predicate=None, parallelism: int | None = None) -> TableScan:
        """The table's batch scan: of a snapshot, or (`incremental-between...` options) of the changes between two."""
        return new_scan(self.store, predicate, parallelism)

    def new_read(self, read_schema: pa.Schema | None = None, predicate=None,
                 row_kind_column: str | None = None, file_column: str | None = None,
                 position_column: str | None = None) -> TableRead:
        return TableRead(self.store, read_schema, predicate, row_kind_column, file_column, position_column)

    def to_arrow(self, predicate=None) -> pa.Table:
        """The whole table (or what ``predicate`` keeps) as one Arrow table; the internal form of
        `scan(filter=predicate).to_arrow()` (which also takes columns, limit, time travel and string filters)."""
        self.check_readable()
        splits = self.new_scan(predicate).plan()
        read = self.new_read(predicate=predicate)
        batches = [b for s in splits for b in read.read(s)]
        return pa.Table.from_batches(batches, schema=read.output_schema)

    # ------------------------------------------------------------------ the Spark-free API
    def scan(self, columns: Sequence[str] | None = None, filter: str | Expr | Predicate | None = None,
             limit: int | None = None, snapshot_id: int | None = None, tag: str | None = None,
             timestamp: dt.datetime | int | None = None, version: int | str | None = None,
             incremental_between: str | Sequence[int | str] | None = None) -> Scan:
        """A read of this table: ``columns`` (in that order), ``filter`` (a SQL-like string such as
        `"id > 5 AND day = DATE '2024-01-02'"` or `paimon_ds.col("id") > 5`; it prunes partitions and files
        and applies to every row exactly), ``limit`` rows, and time travel to one of ``snapshot_id``, ``tag``
        or ``timestamp`` (a datetime, naive as local time, or epoch millis) or ``version`` (as Spark's `VERSION
        AS OF`: a tag of that name, else a snapshot id); or, instead of a version, ``incremental_between``: the
        changes between two snapshot ids or tags (`(3, 5)`, `"tag1,tag2"`; the option incremental-between, with
        incremental-between-scan-mode from the table's options). Read it with to_batches(),
        to_arrow(), to_pandas(), count(), or as an Arrow C stream (DuckDB, Polars)."""
        return Scan(self.store, columns, filter, limit, snapshot_id, tag, timestamp, version, incremental_between)

    def to_polars(self, snapshot_id: int | None = None, tag: str | None = None,
                  timestamp: dt.datetime | int | None = None) -> Any:
        """A Polars LazyFrame over the table (as `pl.scan_delta` / `pl.scan_iceberg`): the columns, filters and
        row count of a Polars query reach the scan, which prunes partitions and files by the filters it can
        translate; each collect reads the latest snapshot (or the one time travel names). Needs polars."""
        return self.scan(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp).to_polars()

    def to_duckdb(self, con: Any = None, name: str | None = None, snapshot_id: int | None = None,
                  tag: str | None = None, timestamp: dt.datetime | int | None = None) -> Any:
        """A DuckDB relation over the table on ``con`` (default: DuckDB's default connection; ``name`` also
        registers it there for SQL): DuckDB's projection and filters reach the scan's pruning. Needs duckdb."""
        return self.scan(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp).to_duckdb(con, name)

    def to_pyarrow_dataset(self, snapshot_id: int | None = None, tag: str | None = None,
                           timestamp: dt.datetime | int | None = None) -> Any:
        """A pyarrow Dataset over the data files of the latest snapshot (or the one time travel names), as
        deltalake's `DeltaTable.to_pyarrow_dataset()`: where reading the files' columns gives the table's rows
        (append tables; primary-key tables whose buckets need no merge, e.g. fully compacted, without deletion
        vectors); else a NotExpressibleError naming why and what to use instead."""
        travel = time_travel_options(snapshot_id, tag, timestamp)
        table = self.reload({**{k: v for k, v in self.dynamic_options.items() if k not in TIME_TRAVEL_KEYS},
                             **travel}) if travel else self
        return pyarrow_dataset(table.store)

    def append(self, data: Any) -> Snapshot | None:
        """Add ``data`` (a pyarrow Table / RecordBatchReader / iterable of batches, a pandas DataFrame, or
        anything with an Arrow C stream) in one commit, as `mode("append")` of a Spark write does; columns are
        matched by name and cast to the table's types. Returns the new snapshot (None if there were no rows)."""
        return self._write(data, overwrite=False, partition=None)

    def overwrite(self, data: Any, partition: Mapping[str, Any] | None = None,
                  filter: str | Expr | None = None) -> Snapshot | None:
        """Replace the table's rows with ``data`` in one commit: the whole table; or, with the job option
        `dynamic-partition-overwrite` (Table.load(path, {"dynamic-partition-overwrite": "true"})), only the
        partitions the data has rows in; or the static ``partition`` ({key: value}, a prefix of the partition
        keys), whose key columns the data may leave out; or (``filter``, deltalake's `predicate=`, pyiceberg's
        `overwrite_filter`) the rows the filter keeps, on any column, where every data row must satisfy the
        filter (RowLevelError otherwise, nothing written). Returns the new snapshot."""
        if filter is not None:
            if partition is not None:
                raise OptionError("overwrite takes partition= or filter=, not both")
            return overwrite_where(self.store, data, filter)
        return self._write(data, overwrite=True, partition=partition)

    # ------------------------------------------------------------------ row-level changes (no Spark)
    def delete(self, filter: str | Expr | Predicate | None = None) -> Snapshot | None:
        """DELETE the rows ``filter`` keeps (a filter string, a `paimon_ds.col` expression; None: every row), in one
        commit: primary-key tables get delete rows, append tables have the files holding a matching row
        rewritten (or, with deletion vectors, their positions deleted). Returns the new snapshot, or None when no
        row matched (pyiceberg's `tbl.delete(filter)`, deltalake's `dt.delete(predicate)`)."""
        return delete_rows(self.store, filter)

    def update(self, set: Mapping[str, Any], filter: str | Expr | Predicate | None = None) -> Snapshot | None:
        """UPDATE SET ``set`` ({column: value}) WHERE ``filter`` (None: every row), in one commit (deltalake's
        `dt.update`). A value is a literal (5, None, a date, a pyarrow scalar), a column (`col("v")`, or a string
        in the filter language: `"v"`, `"'text'"`), or a pyarrow.compute.Expression (`pc.field("v") * 2`).
        Returns the new snapshot, or None when no row matched."""
        return update_rows(self.store, set, filter)

    def upsert(self, data: Any, on: str | Sequence[str] | None = None) -> RowLevelResult:
        """Rows of ``data`` (as append takes it, every column) replace the rows with the same ``on`` values, the
        others are inserted, in one commit (pyiceberg's `tbl.upsert(df, join_cols=)`): primary-key tables by
        their key (``on`` defaults to it), append tables by the named columns. A key the data holds twice is an
        error. Returns RowLevelResult(snapshot, rows_updated, rows_inserted)."""
        return upsert_rows(self.store, data, on)

    def merge(self, source: Any, on: str | Sequence[str] | Expr, source_alias: str = "s", target_alias: str = "t",
              clauses: Sequence[Update | Delete | Insert] = ()) -> MergeBuilder:
        """MERGE INTO this table USING ``source`` ON ``on`` (column names both have, or a condition such as
        `"t.id = s.id"`), as deltalake's `dt.merge(...)`: add clauses with `.when_matched_update(...)`,
        `.when_matched_update_all()`, `.when_matched_delete()`, `.when_not_matched_insert(...)`,
        `.when_not_matched_insert_all()`, `.when_not_matched_by_source_update(...)` / `_delete()`, then
        `.execute()` (a RowLevelResult). ``clauses``: the Spark path's Update / Delete (when matched) and Insert
        objects instead. SQL semantics: the first clause whose condition holds acts; a target row matched by two
        source rows is an error."""
        return MergeBuilder(self.store, source, on, source_alias, target_alias, clauses)

    def _write(self, data: Any, overwrite: bool, partition: Mapping[str, Any] | None) -> Snapshot | None:
        # a table loaded for time travel is written at its latest schema
        options = {k: v for k, v in self.dynamic_options.items() if k not in TIME_TRAVEL_KEYS}
        current = self.reload(options) if self.is_created else self
        target = current.arrow_schema()
        constants = partition_constants(current.store, partition) if partition is not None else {}
        schema, batches = input_batches(data)
        check_input_schema(schema if schema is not None else target, target, self.path, constants)
        table = Table.for_write(self.path, target, options, self.storage_options) if current.is_created else current
        return write_batches(table.store, (conform_batch(b, target, constants) for b in batches), overwrite, partition)

    def snapshots(self) -> list[Snapshot]:
        """The table's snapshots (those not expired), oldest first. A damaged old snapshot file is left out with a
        SkippedFileWarning; a damaged latest one raises CorruptFileError."""
        return self.snapshot_manager.readable_snapshots()

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The commits, newest first (at most ``limit``): snapshot id, commit time (UTC), kind, user,
        identifier, schema id, and the record counts (total after it, added by it, changelog). A damaged old
        snapshot file is left out with a SkippedFileWarning (the limit counts the snapshots shown); a damaged
        latest one raises CorruptFileError."""
        sm = self.snapshot_manager
        # only the snapshot files shown are read (and those of damaged ones skipped on the way)
        shown = sm.readable_snapshots(sorted(sm.list_ids(), reverse=True), None if limit is None else max(limit, 0))
        out = []
        for s in shown:
            out.append({"snapshot_id": s.id, "commit_time": dt.datetime.fromtimestamp(s.time_millis / 1000,
                                                                                    dt.timezone.utc),
                        "commit_kind": s.commit_kind, "commit_user": s.commit_user,
                        "commit_identifier": s.commit_identifier, "schema_id": s.schema_id,
                        "total_record_count": s.total_record_count, "delta_record_count": s.delta_record_count,
                        "changelog_record_count": s.changelog_record_count})
        return out

    def __repr__(self) -> str:
        columns = ", ".join(f"{f.name} {f.type.sql()}" for f in self.table_schema.fields)
        parts = [repr(self.path), f"columns=[{columns}]"]
        if self.table_schema.primary_keys:
            parts.append(f"primary_keys={list(self.table_schema.primary_keys)}")
        if self.table_schema.partition_keys:
            parts.append(f"partition_keys={list(self.table_schema.partition_keys)}")
        parts.append(f"bucket={self.options.raw.get('bucket', '-1')}")
        if self.branch != MAIN_BRANCH:
            parts.append(f"branch={self.branch!r}")
        parts.append(f"snapshot={self.snapshot_manager.latest_id() if self.is_created else None}")
        return f"Table({', '.join(parts)})"


def write_arrow(path: str, data: Any, mode: str = "append", primary_key: str | Sequence[str] | None = None,
                partition_by: str | Sequence[str] | None = None, options: Mapping[str, Any] | None = None,
                storage_options: dict[str, Any] | None = None) -> Snapshot | None:
    """Write ``data`` (as Table.append takes it) to the table at ``path`` in one commit, creating the table if
    there is none (as deltalake's write_deltalake): ``primary_key`` and ``partition_by`` (names, or one
    comma-separated string) and ``options`` (any Paimon table option: bucket, merge-engine, ...) shape a new
    table, and must agree with an existing one's. No `bucket` is Paimon's default, bucket=-1 (dynamic buckets
    for a primary-key table). ``mode``: "append", or "overwrite" (the whole table; with the option
    `dynamic-partition-overwrite` only the partitions written), or as deltalake's: "error" (TableAlreadyExists
    if there is a table at ``path``) or "ignore" (nothing written if there is one: returns None). Returns the new
    snapshot (None: no rows)."""
    if mode not in ("append", "overwrite", "error", "ignore"):
        raise OptionError(f"mode must be 'append', 'overwrite', 'error' or 'ignore', got {mode!r}")
    if mode in ("error", "ignore") and Table.exists(path, storage_options):
        if mode == "ignore":
            return None
        raise TableAlreadyExists(f"a Paimon table exists at {path} (mode='error'); use mode='append', "
                                 "'overwrite' or 'ignore'")
    opts = {str(k): str(v) for k, v in (options or {}).items() if v is not None}
    for key, names in (("primary-key", primary_key), ("partition", partition_by)):
        if names is not None:
            opts[key] = names if isinstance(names, str) else ",".join(names)
    schema, batches = input_batches(data)
    if Table.exists(path, storage_options) and not Options(opts).get("write.merge-schema"):
        # an existing table: the data's columns are matched by name and cast to its types
        write_schema = Table.load(path, opts, storage_options).arrow_schema()
    elif schema is None:
        raise SchemaError(f"no Paimon table at {path} and no data to take its schema from (an empty iterable)")
    else:
        write_schema = schema
    table = Table.for_write(path, write_schema, opts, storage_options)
    target = table.arrow_schema()
    if table.options.get("write.merge-schema"):
        # the merged schema was checked against the data by name; the write aligns each batch (TableWrite.align)
        return write_batches(table, batches, overwrite=mode == "overwrite")
    check_input_schema(schema if schema is not None else target, target, path)
    return write_batches(table.store, (conform_batch(b, target) for b in batches), overwrite=mode == "overwrite")


def _has_foreign_content(io: FileIO) -> bool:
    names = set(io.list_names(io.root))
    # An empty directory, or one holding only Paimon's own folders (a table whose first commit
    # failed before its schema was written), is fine to create a table in.
    return bool(names - {"schema", "snapshot", "manifest", "index", "tag", "branch", "changelog"}
                - {n for n in names if n.startswith("bucket-") or "=" in n or n.startswith(".")})
