"""A Paimon warehouse as a catalog: Paimon's FileSystemCatalog layout, `<warehouse>/<db>.db/<table>`.

The layout is all the state there is (as in Paimon's filesystem catalog): a database is a `<db>.db`
directory, a table is a directory in it holding `schema/schema-N`. Java Paimon, pypaimon and
paimon_ds therefore see the same databases and tables, whoever created them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .errors import EXIT_NOT_FOUND, CatalogError, TableAlreadyExists
from .fs.file_io import FileIO
from .options.registry import Options, table_options, validate
from .schema.change import commit_changes
from .schema.manager import SchemaManager, TableSchema
from .snapshot.branch import MAIN_BRANCH, normalize_branch
from .table import Table, TableNotFound

DB_SUFFIX = ".db"
# Characters a name cannot hold: path separators, the database.table separator, and '$', which
# Paimon uses itself (system tables `t$snapshots`, branches `t$branch_x`).
_BAD_NAME = re.compile(r"[/\\.$]|^\s|\s$")


class DatabaseNotFound(CatalogError, LookupError):
    exit_code = EXIT_NOT_FOUND


class DatabaseAlreadyExists(CatalogError):
    pass


class DatabaseNotEmpty(CatalogError):
    pass


@dataclass(frozen=True)
class Identifier:
    database: str
    table: str

    @staticmethod
    def parse(name: str | Identifier, default_database: str = "default") -> Identifier:
        if isinstance(name, Identifier):
            return name
        parts = name.split(".")
        if len(parts) == 1:
            return Identifier(default_database, parts[0])
        if len(parts) == 2:
            return Identifier(parts[0], parts[1])
        raise CatalogError(f"{name!r} is not a table name: use 'table' or 'database.table'")

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


def check_name(kind: str, name: str) -> str:
    if not name or _BAD_NAME.search(name):
        raise CatalogError(f"{kind} name {name!r} is not valid: it must be non-empty, without '/', '\\', '.', "
                           "'$' or surrounding spaces")
    return name


class Catalog:
    def __init__(self, warehouse: str, storage_options: dict[str, Any] | None = None) -> None:
        self.warehouse = warehouse.rstrip("/")
        self.storage_options = storage_options
        self.io = FileIO(self.warehouse, storage_options)

    # ---------------------------------------------------------------- databases
    def _database_dir(self, name: str) -> str:
        return self.io.join(check_name("database", name) + DB_SUFFIX)

    def list_databases(self) -> list[str]:
        if not self.io.exists(self.io.root):
            return []
        return sorted(n[: -len(DB_SUFFIX)] for n in self.io.list_names(self.io.root)
                      if n.endswith(DB_SUFFIX) and self.io.is_dir(self.io.join(n)))

    def database_exists(self, name: str) -> bool:
        return self.io.is_dir(self._database_dir(name))

    def create_database(self, name: str, ignore_if_exists: bool = False) -> None:
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExists(f"database {name!r} already exists in {self.warehouse}")
        self.io.mkdirs(self._database_dir(name))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFound(f"database {name!r} does not exist in {self.warehouse}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmpty(f"database {name!r} holds tables {tables}; drop them first or use cascade")
        self.io.fs.rm(self._database_dir(name), recursive=True)

    def _require_database(self, name: str) -> None:
        if not self.database_exists(name):
            raise DatabaseNotFound(f"database {name!r} does not exist in {self.warehouse} "
                                   f"(databases: {', '.join(self.list_databases()) or 'none'})")

    # ---------------------------------------------------------------- tables
    def table_path(self, identifier: str | Identifier) -> str:
        ident = Identifier.parse(identifier)
        check_name("table", ident.table)
        return f"{self.warehouse}/{check_name('database', ident.database)}{DB_SUFFIX}/{ident.table}"

    def list_tables(self, database: str) -> list[str]:
        self._require_database(database)
        db_dir = self._database_dir(database)
        return sorted(n for n in self.io.list_names(db_dir)
                      if SchemaManager(self.io, f"{db_dir}/{n}").list_ids())

    def table_exists(self, identifier: str | Identifier) -> bool:
        path = self.table_path(identifier)
        io = FileIO(path, self.storage_options)
        return bool(SchemaManager(io, io.root).list_ids())

    def get_table(self, identifier: str | Identifier, options: Mapping[str, str] | None = None) -> Table:
        ident = Identifier.parse(identifier)
        self._require_database(ident.database)
        if not self.table_exists(ident):
            tables = ", ".join(self.list_tables(ident.database)) or "none"
            raise TableNotFound(f"table {ident} does not exist in {self.warehouse} "
                                f"(tables of {ident.database}: {tables})")
        return Table.load(self.table_path(ident), options, self.storage_options)

    def create_table(self, identifier: str | Identifier, schema: pa.Schema, partition_keys: Sequence[str] = (),
                     primary_keys: Sequence[str] = (), options: Mapping[str, str] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create an empty table (schema-0, no snapshot), checked as a first write would check it."""
        ident = Identifier.parse(identifier)
        self._require_database(ident.database)
        options = {str(k): str(v) for k, v in (options or {}).items() if v is not None}
        validate(options)
        if normalize_branch(options.get("branch")) != MAIN_BRANCH:
            raise CatalogError(f"a table is created on its main branch, not on branch {options['branch']!r}: "
                               "create the table, then the branch (paimon_ds.procedures.create_branch)")
        # keys may also come as options, as in a write's first commit
        partition_keys = list(partition_keys) or Options(options).get("partition") or []
        primary_keys = list(primary_keys) or Options(options).get("primary-key") or []
        path = self.table_path(ident)
        if self.table_exists(ident):
            if ignore_if_exists:
                return self.get_table(ident)
            raise TableAlreadyExists(f"table {ident} already exists in {self.warehouse}")
        missing = [k for k in [*partition_keys, *primary_keys] if k not in schema.names]
        if missing:
            raise CatalogError(f"partition/primary key column(s) {missing} are not columns of {ident} "
                               f"(columns: {', '.join(schema.names)})")
        table_schema = TableSchema.from_arrow(schema, partition_keys, primary_keys, table_options(options), comment)
        table = Table(path, table_schema, options, self.storage_options)
        table.check_writable()
        winner = table.schema_manager.create(table_schema)
        if winner.to_json() != table_schema.to_json():
            raise TableAlreadyExists(f"table {ident} was created by another writer at the same time")
        return Table.load(path, None, self.storage_options)

    def drop_table(self, identifier: str | Identifier, ignore_if_not_exists: bool = False) -> None:
        ident = Identifier.parse(identifier)
        if not self.database_exists(ident.database) or not self.table_exists(ident):
            if ignore_if_not_exists:
                return
            raise TableNotFound(f"table {ident} does not exist in {self.warehouse}")
        self.io.fs.rm(self.table_path(ident), recursive=True)

    # ---------------------------------------------------------------- alter / rename
    def alter_table(self, identifier: str | Identifier, changes: Any,
                    ignore_if_not_exists: bool = False) -> Table | None:
        """Apply schema changes (paimon_ds.schema.change: SetOption, AddColumn, RenameColumn, ...) as one new
        schema version, with Paimon's rules; returns the altered table (None if it did not exist and
        ``ignore_if_not_exists``). A refused change raises and writes nothing."""
        ident = Identifier.parse(identifier)
        if not self.database_exists(ident.database) or not self.table_exists(ident):
            if ignore_if_not_exists:
                return None
            raise TableNotFound(f"table {ident} does not exist in {self.warehouse}")
        path = self.table_path(ident)
        commit_changes(path, changes, self.storage_options)
        return Table.load(path, None, self.storage_options)

    def rename_table(self, from_ident: str | Identifier, to_ident: str | Identifier) -> Table:
        """Move a table to another name (or database), as Paimon's filesystem catalog does: by renaming
        its directory (atomic on local disk; object stores copy, so do not rename under writers)."""
        src, dst = Identifier.parse(from_ident), Identifier.parse(to_ident)
        if not self.database_exists(src.database) or not self.table_exists(src):
            raise TableNotFound(f"table {src} does not exist in {self.warehouse}")
        self._require_database(dst.database)
        if self.table_exists(dst):
            raise TableAlreadyExists(f"cannot rename {src} to {dst}: table {dst} already exists in {self.warehouse}")
        src_path, dst_path = self.table_path(src), self.table_path(dst)
        if self.io.exists(dst_path) and self.io.list_names(dst_path):
            raise CatalogError(f"cannot rename {src} to {dst}: {dst_path} holds files that are not a Paimon table")
        if self.io.is_local:
            try:
                os.rename(src_path, dst_path)  # fails if another rename filled dst meanwhile
            except OSError as e:
                raise TableAlreadyExists(f"cannot rename {src} to {dst}: {e}") from None
        else:
            self.io.fs.mv(src_path, dst_path, recursive=True)
        return Table.load(dst_path, None, self.storage_options)
