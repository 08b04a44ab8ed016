"""`paimon-ds list | schema | files | options | history`: a warehouse's tables and a table's metadata, read only.

Each command builds one JSON-ready document (the `--json` form; its keys are listed in the README and stay stable)
and render() prints that document as a table (rich on a terminal, aligned plain text elsewhere). They read
through the library's public calls: Catalog.list_tables, Table.schema(), Table.inspect.files(), Table.history().
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..catalog import Catalog
from ..options.registry import OptionError
from ..schema.manager import TableNotFound
from ..table import Table
from .lsm import human_bytes
from .output import Column, Output


def list_tables(warehouse: str, database: str | None, storage: dict[str, str] | None) -> dict[str, Any]:
    """The document of `list`: every table of the warehouse (or of one database), by database then name."""
    catalog = Catalog(warehouse, storage)
    if not catalog.io.is_dir(catalog.io.root):
        raise TableNotFound(f"no warehouse at {warehouse}: the directory does not exist")
    if Table.exists(warehouse, storage):
        raise OptionError(f"{warehouse} is a Paimon table, not a warehouse: `list` takes the directory holding "
                          "<db>.db directories (`paimon-ds schema | files | history` take a table)")
    databases = [database] if database is not None else catalog.list_databases()
    tables = [{"database": db, "table": name, "path": catalog.table_path(f"{db}.{name}")}
              for db in databases for name in catalog.list_tables(db)]
    return {"warehouse": catalog.warehouse, "databases": databases, "tables": tables}


def render_list(out: Output, doc: dict[str, Any]) -> None:
    if not doc["tables"]:
        out.line(f"no tables in {doc['warehouse']}" + (f" (databases: {', '.join(doc['databases'])})"
                                                        if doc["databases"] else " (no databases)"))
        return
    out.table([Column("database"), Column("table"), Column("path")],
              [[t["database"], t["table"], t["path"]] for t in doc["tables"]])


def schema(table: Table) -> dict[str, Any]:
    """The document of `schema`: the table's current schema (Table.schema())."""
    s = table.schema()
    return {"path": table.path, "branch": table.branch, "schema_id": s.id,
            "columns": [{"id": f.id, "name": f.name, "type": f.type.sql(), "nullable": f.nullable,
                         "description": f.description} for f in s.fields],
            "partition_keys": list(s.partition_keys), "primary_keys": list(s.primary_keys), "comment": s.comment}


def render_schema(out: Output, doc: dict[str, Any]) -> None:
    out.line(f"table {doc['path']}" + (f" (branch {doc['branch']})" if doc["branch"] != "main" else "")
             + f": schema {doc['schema_id']}", "bold")
    if doc["comment"]:
        out.line(f"  comment: {doc['comment']}")
    primary, partition = set(doc["primary_keys"]), set(doc["partition_keys"])
    out.table([Column("id", True), Column("column"), Column("type"), Column("key"), Column("comment")],
              [[str(c["id"]), c["name"], c["type"],
                " ".join(k for k, keys in (("primary", primary), ("partition", partition)) if c["name"] in keys),
                c["description"] or ""] for c in doc["columns"]])
    if doc["primary_keys"]:
        out.line(f"  primary key: {', '.join(doc['primary_keys'])}")
    if doc["partition_keys"]:
        out.line(f"  partition keys: {', '.join(doc['partition_keys'])}")


def options(table: Table) -> dict[str, Any]:
    """The document of `options`: the options stored in the table's schema, sorted by key."""
    return {"path": table.path, "branch": table.branch, "options": dict(sorted(table.schema().options.items()))}


def render_options(out: Output, doc: dict[str, Any]) -> None:
    if not doc["options"]:
        out.line(f"no options stored in {doc['path']} (every option has Paimon's default)")
        return
    out.table([Column("key"), Column("value")], [[k, v] for k, v in doc["options"].items()])


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(sep=" ", timespec="milliseconds")


def files(table: Table, snapshot_id: int | None = None, tag: str | None = None) -> dict[str, Any]:
    """The document of `files`: the live data files of the latest snapshot, or of ``snapshot_id`` / ``tag``
    (Table.inspect.files(), its columns)."""
    travel = {"scan.snapshot-id": str(snapshot_id)} if snapshot_id is not None else \
        {"scan.tag-name": tag} if tag is not None else {}
    if travel:
        table = table.reload({**table.dynamic_options, **travel})
    snapshot = table.snapshot_to_read()
    rows = table.inspect.files().to_pylist()
    for row in rows:
        row["creation_time"] = _iso(row["creation_time"])
    return {"path": table.path, "branch": table.branch, "snapshot_id": snapshot.id if snapshot else None,
            "files": rows}


def render_files(out: Output, doc: dict[str, Any]) -> None:
    if not doc["files"]:
        out.line(f"no data files in {doc['path']}" + ("" if doc["snapshot_id"] is None
                                                        else f" (snapshot {doc['snapshot_id']})"))
        return
    prefix = doc["path"].rstrip("/") + "/"
    rows = doc["files"]
    out.line(f"{len(rows)} data file(s) of snapshot {doc['snapshot_id']}: {sum(r['record_count'] for r in rows):,} "
             f"rows, {human_bytes(sum(r['file_size_in_bytes'] for r in rows))}")
    out.table([Column("partition"), Column("bucket", True), Column("level", True), Column("rows", True),
               Column("size", True), Column("file")],
              [[r["partition"], str(r["bucket"]), str(r["level"]), f"{r['record_count']:,}",
                human_bytes(r["file_size_in_bytes"]),
                r["file_path"][len(prefix):] if r["file_path"].startswith(prefix) else r["file_path"]]
               for r in rows])


def history(table: Table, limit: int | None) -> dict[str, Any]:
    """The document of `history`: the commits, newest first (Table.history(); times in UTC, ISO 8601)."""
    if limit is not None and limit < 0:
        raise OptionError(f"--limit must be >= 0 (0: every commit), got {limit}")
    commits = table.history(limit or None)
    for c in commits:
        c["commit_time"] = c["commit_time"].isoformat(timespec="milliseconds")
    return {"path": table.path, "branch": table.branch, "history": commits}


def render_history(out: Output, doc: dict[str, Any]) -> None:
    if not doc["history"]:
        out.line(f"no commits in {doc['path']}")
        return
    out.table([Column("snapshot", True), Column("committed (UTC)"), Column("kind"), Column("records", True),
               Column("delta", True), Column("schema", True), Column("commit user")],
              [[str(c["snapshot_id"]), c["commit_time"][:23].replace("T", " "), c["commit_kind"],
                f"{c['total_record_count']:,}", f"{c['delta_record_count']:+,}", str(c["schema_id"]),
                c["commit_user"]] for c in doc["history"]])
