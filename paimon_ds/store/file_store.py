"""FileStore: one Paimon table's metadata below the Table facade (Paimon's FileStore).

The table's path and root, its FileIO, schema and schema manager, options (stored ones overlaid by the job's),
branch, snapshot manager, the providers of new data file paths, and the store of its `scan.fallback-branch`. Every
layer below the facade (io, mergetree, index, deletionvectors, ... and `operation/` itself) takes a FileStore and
never the facade: `Table` holds one (`table.store`) and builds its scans, writes and commits from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import pyarrow as pa

from ..fs.file_io import FileIO
from ..options.registry import READ, OptionError, Options, check_job_options, check_supported, validate
from ..options.storage import split_storage
from ..schema.manager import SchemaManager, TableSchema
from ..schema.types import SchemaError
from ..snapshot.branch import BranchManager, BranchNotFound, branch_path, load_branch_schema, normalize_branch
from ..snapshot.manager import Snapshot, SnapshotManager, SnapshotNotFound
from ..snapshot.time_travel import TIMESTAMP, TRAVEL_KEYS, VERSION, check_startup, resolve_travel, travel_snapshot

# Old schemas of tables, per process (Spark reuses Python workers). The key includes the latest schema's creation
# time: a table dropped and created again at the same path gets new entries.
_old_schemas: dict[tuple[str, int, int], TableSchema] = {}

T = TypeVar("T")

FALLBACK_OPTION = "scan.fallback-branch"
# Paimon master's reverse fallback (scan.primary-branch), in no release yet: refused rather than read wrongly.
PRIMARY_OPTION = "scan.primary-branch"


class FileStore:
    def __init__(self, path: str, schema: TableSchema, dynamic_options: Mapping[str, str] | None = None,
                 storage_options: dict[str, Any] | None = None, io: FileIO | None = None) -> None:
        self.path = path
        self.io = io or FileIO(path, storage_options)
        self.root = self.io.root  # data files, manifests and index files: shared by every branch
        self.storage_options = storage_options
        self.table_schema = schema
        self.dynamic_options = dict(dynamic_options or {})
        # the one place per-job options overlay the stored ones: every load, read and write passes here
        check_job_options(schema.options, self.dynamic_options, schema.primary_keys, schema.partition_keys)
        self.options = Options(schema.options).with_overrides(self.dynamic_options)
        # the branch read and written (option `branch`): its own schema/, snapshot/ and tag/ directories
        self.branch = normalize_branch(self.dynamic_options.get("branch"))
        self.branch_root = branch_path(self.root, self.branch)
        self.schema_manager = SchemaManager(self.io, self.branch_root)
        self.snapshot_manager = SnapshotManager(self.io, self.branch_root)
        # where new data files go (external_paths): the external roots and one provider per bucket directory,
        # kept for the store's life so that round-robin goes on across files
        self.path_providers: dict[str, Any] = {}
        self._fallback: tuple[FileStore | None] | None = None  # (the fallback branch's store,) once loaded

    @staticmethod
    def load(path: str, options: Mapping[str, str] | None = None,
             storage_options: dict[str, Any] | None = None) -> FileStore:
        """The store of the table at ``path``; per-job options (scan.*, ...) overlay the stored ones."""
        options, storage_options = job_and_storage_options(options, storage_options)
        validate(options)
        io = FileIO(path, storage_options)
        schema = load_branch_schema(io, path, normalize_branch(options.get("branch")))
        store = FileStore(path, schema, options, storage_options, io)
        if VERSION in options or TIMESTAMP in options:
            # scan.version / scan.timestamp become the keys they resolve to, as Paimon's tryTimeTravel does
            options = resolve_travel(options, store.snapshot_manager)
            store = FileStore(path, schema, options, storage_options, io)
        check_startup(store.options.raw)
        if any(k in options for k in TRAVEL_KEYS):
            # time travel reads the snapshot with the schema it was committed under (its columns, names
            # and types), with the latest table options, as Paimon's tryTimeTravel does
            try:
                snapshot = store.snapshot_to_read()
            except LookupError:  # a missing snapshot or tag is reported by the scan
                snapshot = None
            if snapshot is not None and snapshot.schema_id != schema.id:
                old = store.schema_manager.schema(snapshot.schema_id)
                store = FileStore(path, dataclasses.replace(old, options=dict(schema.options)), options,
                                  storage_options, io)
        return store

    def reload(self, options: Mapping[str, str] | None = None) -> FileStore:
        """The same table's store as stored now (its latest schema), with ``options`` (default: this one's) as its
        per-job options."""
        return FileStore.load(self.path, self.dynamic_options if options is None else options, self.storage_options)

    @property
    def store(self) -> FileStore:
        """The store itself: code given the Table facade or its store reaches the store as `table.store` alike."""
        return self

    def check_readable(self) -> None:
        """Refuse, before any row is read, a table whose options (stored or given) ask for reads paimon_ds does not
        do (`paimon_option_keys.txt`: refused keys that block reads)."""
        check_supported(self.options, READ, self.path)

    @property
    def is_created(self) -> bool:
        return bool(self.schema_manager.list_ids())

    @property
    def bucket(self) -> int:
        return self.options.get("bucket")

    @property
    def partition_keys(self) -> list[str]:
        return list(self.table_schema.partition_keys)

    def arrow_schema(self) -> pa.Schema:
        try:
            return self.table_schema.arrow_schema()
        except SchemaError as e:  # a type paimon_ds cannot read or write: say which table
            raise SchemaError(f"Paimon table {self.path}: {e}") from None

    def branch_manager(self) -> BranchManager:
        """The table's branches, seen from this table's branch (fast_forward moves it; create takes its tags)."""
        return BranchManager(self.io, self.root, self.branch)

    def schema_by_id(self, schema_id: int) -> TableSchema:
        """The schema a file or snapshot was written under (older ones read once per process)."""
        if schema_id == self.table_schema.id:
            return self.table_schema
        key = (self.schema_manager.dir, schema_id, self.table_schema.time_millis)
        if key not in _old_schemas:
            _old_schemas[key] = self.schema_manager.schema(schema_id)
        return _old_schemas[key]

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot_to_read(self) -> Snapshot | None:
        """The snapshot a scan reads: latest, or the one time-travel options name."""
        travelled = travel_snapshot(self.options, self.snapshot_manager)
        return travelled if travelled is not None else self.snapshot_manager.latest()

    def fallback_store(self) -> FileStore | None:
        """The branch `scan.fallback-branch` names as a batch read of this store sees it (Paimon's
        FallbackReadFileStoreTable), or None without the option; loaded once.

        A partition the store's own branch has is read from it, whole; a partition only the fallback branch has
        is read from there (operation/scan.py, read.py), with that branch's own schema, primary key, buckets and
        merge engine. Streaming reads, writes and the package's own jobs see the own branch only, as in Paimon.
        The fallback branch must have the same column types in the same order (nullability aside, as Paimon
        checks); its columns are matched by field id (Paimon 1.x), else by position. Time travel reaches it as
        Paimon sends it: a snapshot id becomes the fallback's latest snapshot at or before that snapshot's commit
        time, a timestamp is used as it is, and a tag name must name a tag of the fallback branch too."""
        if self._fallback is None:
            self._fallback = (self._load_fallback(),)
        return self._fallback[0]

    def _load_fallback(self) -> FileStore | None:
        opts = self.options
        if (opts.get(PRIMARY_OPTION) or "").strip():
            raise OptionError(f"{PRIMARY_OPTION} is not supported by this version of paimon_ds (it would read "
                              f"{self.path} wrongly); use {FALLBACK_OPTION}")
        name = opts.get(FALLBACK_OPTION)
        if name is None or not name.strip() or name == self.branch:
            return None
        manager = self.branch_manager()
        if not manager.exists(name):
            raise BranchNotFound(f"{FALLBACK_OPTION}={name!r} of {self.path}: branch {name!r} does not exist "
                                 f"(branches: {', '.join(['main', *manager.branches()])})")
        options = {k: v for k, v in self.dynamic_options.items() if k not in ("bucket", "scan.snapshot-id")}
        options["branch"] = name
        options[FALLBACK_OPTION] = ""  # the fallback branch's own fallback is not followed
        snapshot_id = Options(self.dynamic_options).get("scan.snapshot-id")
        if snapshot_id is not None:
            # snapshot ids differ between branches: go through the snapshot's commit time
            snapshot = self.snapshot_manager.snapshot(snapshot_id)
            options["scan.timestamp-millis"] = str(snapshot.time_millis)
        tag = options.get("scan.tag-name")
        if tag is not None and tag not in manager.snapshots(name).tag_names():
            raise SnapshotNotFound(f"scan.tag-name={tag!r}: tag {tag!r} does not exist in branch {name!r}, the "
                                   f"{FALLBACK_OPTION} of {self.path} (Paimon reads the fallback branch at the same "
                                   "tag)")
        other = self.reload(options)
        _check_same_row_type(self, other)
        return other


def _check_same_row_type(store: FileStore, other: FileStore) -> None:
    ours, theirs = store.table_schema.fields, other.table_schema.fields
    if len(ours) != len(theirs) or any(a.type.copy(True) != b.type.copy(True) for a, b in zip(ours, theirs)):
        def row(fields) -> str:
            return ", ".join(f"{f.name} {f.type.sql()}" for f in fields)
        raise SchemaError(
            f"branches {store.branch!r} and {other.branch!r} of {store.path} do not have the same row type, which "
            f"{FALLBACK_OPTION}={other.branch!r} needs (the same column types in the same order). "
            f"{store.branch}: {row(ours)}; {other.branch}: {row(theirs)}")


def fallback_column_names(store: FileStore, other: FileStore) -> dict[str, str]:
    """Each column of ``store`` -> the fallback branch's column read for it: the same field id, else position."""
    by_id = {f.id: f.name for f in other.table_schema.fields}
    return {f.name: by_id.get(f.id, o.name) for f, o in zip(store.table_schema.fields, other.table_schema.fields)}


def job_and_storage_options(options: Mapping[str, Any] | None, storage_options: Mapping[str, Any] | None,
                            ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Job options without storage keys, and the storage options with those keys added (they win)."""
    options, from_options = split_storage(options)
    merged = {**(storage_options or {}), **from_options}
    return options, merged or None


class StoreField(Generic[T]):
    """An attribute of an object holding a store (`.store`) that is the store's own, read-only: the Table facade
    shows its store's metadata this way (`table.options` is `table.store.options`)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, holder: Any, owner: type | None = None) -> T:
        if holder is None:  # the class's attribute (documentation tools look there): the field itself
            return self  # type: ignore[return-value]
        return getattr(holder.store, self.name)

    def __set__(self, holder: Any, value: T) -> None:
        raise AttributeError(f"{self.name} is the store's: build another table instead of setting it")
