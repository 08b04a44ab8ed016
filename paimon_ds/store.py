"""FileStore: one Paimon table's metadata below the Table facade (Paimon's FileStore).

The table's path and root, its FileIO, schema and schema manager, options (stored ones overlaid by the job's),
branch, snapshot manager, and the providers of new data file paths. The layers below `operation/` (io, mergetree,
index, deletionvectors, ...) take a FileStore and never the facade: `Table` holds one (`table.store`) and builds
its scans, writes and commits on top.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import pyarrow as pa

from .branch import BranchManager, branch_path, normalize_branch
from .fs import FileIO
from .options import Options, check_job_options
from .schema import SchemaManager, TableSchema
from .snapshot import Snapshot, SnapshotManager
from .time_travel import travel_snapshot
from .types import SchemaError

# Old schemas of tables, per process (Spark reuses Python workers). The key includes the latest schema's creation
# time: a table dropped and created again at the same path gets new entries.
_old_schemas: dict[tuple[str, int, int], TableSchema] = {}

T = TypeVar("T")


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
